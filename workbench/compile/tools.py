"""The NVIDIA tools Triton's wheel ships (ptxas, cuobjdump, nvdisasm): SASS and resource usage."""

from __future__ import annotations

import os
import re
import subprocess
import tempfile

from workbench.errors import ToolError


def tool_path(name: str) -> str:
    from triton import knobs

    try:
        path = getattr(knobs.nvidia, name).path
    except Exception as e:  # knobs raise when the binary is missing
        raise ToolError(
            f"the NVIDIA tool {name!r} was not found ({e})",
            hint=f"reinstall triton==3.6.0 (its wheel ships {name}) or set TRITON_{name.upper()}_PATH",
        ) from None
    if not path or not os.path.exists(path):
        raise ToolError(
            f"the NVIDIA tool {name!r} was not found at {path!r}",
            hint=f"reinstall triton==3.6.0 (its wheel ships {name}) or set TRITON_{name.upper()}_PATH",
        )
    return path


def _run(args: list[str]) -> str:
    try:
        res = subprocess.run(args, capture_output=True, text=True, timeout=120)
    except OSError as e:
        raise ToolError(f"could not run {args[0]}: {e}", hint="check that the file is executable") from None
    if res.returncode != 0:
        raise ToolError(f"{os.path.basename(args[0])} failed: {res.stderr.strip()[:2000]}")
    return res.stdout


def _with_cubin(cubin: bytes, fn):
    with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as f:
        f.write(cubin)
        path = f.name
    try:
        return fn(path)
    finally:
        os.unlink(path)


def disassemble(cubin: bytes) -> str:
    """SASS with line info (`//## File "...", line N`) from nvdisasm."""
    exe = tool_path("nvdisasm")
    return _with_cubin(cubin, lambda p: _run([exe, "-c", "-g", "-gi", p]))


_RES = re.compile(r"Function\s+(\S+):\s*\n\s*(.*)")


def resource_usage(cubin: bytes) -> dict[str, dict[str, int]]:
    """cuobjdump -res-usage: per function REG, STACK, SHARED, LOCAL ... as ints."""
    exe = tool_path("cuobjdump")
    text = _with_cubin(cubin, lambda p: _run([exe, "-res-usage", p]))
    out: dict[str, dict[str, int]] = {}
    for name, fields in _RES.findall(text):
        out[name.rstrip(":")] = {k: int(v) for k, v in re.findall(r"([A-Z]+(?:\[\d+\])?):(\d+)", fields)}
    return out


_PTXAS_SPILL = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_PTXAS_REGS = re.compile(r"Used (\d+) registers")


def parse_ptxas_log(text: str) -> dict[str, int]:
    out: dict[str, int] = {}
    m = _PTXAS_SPILL.search(text)
    if m:
        out.update(stack=int(m.group(1)), spill_stores=int(m.group(2)), spill_loads=int(m.group(3)))
    m = _PTXAS_REGS.search(text)
    if m:
        out["registers"] = int(m.group(1))
    return out


def ptxas_log(ptx: str, arch: str) -> str:
    """ptxas -v's report on PTX (when Triton's own log is not available: its cache answered)."""
    exe = tool_path("ptxas")
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "k.ptx")
        with open(src, "w") as f:
            f.write(ptx)
        res = subprocess.run([exe, "-v", "-lineinfo", f"--gpu-name={arch}", src, "-o", os.path.join(d, "k.o")],
                             capture_output=True, text=True, timeout=300)
    return res.stderr + res.stdout
