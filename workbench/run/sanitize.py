"""``--sanitize TOOL``: one launch of a kernel under compute-sanitizer (or Triton's ConSan) in a worker.

The launch runs in a fresh worker process of its own, wrapped by ``compute-sanitizer --tool TOOL
--kernel-name kns=NAME`` (only this kernel is instrumented), on copies of its arguments: each tensor
its own allocation (``PYTORCH_NO_CUDA_MEMORY_CACHING=1``), so memcheck's bounds are the tensor's own.
Nothing is written back to the notebook. ``consan`` instead runs the kernel compiled with
``instrumentation_mode="consan"`` (Triton's concurrency sanitizer: shared-memory and mbarrier
ordering between warp-specialized tasks, checked by device-side asserts) in the same kind of worker.

The outcome is findings on the user's lines (``sanitize_findings``) plus a record with the command,
the time it took and the tool's raw output, truncated (kept for reading, never shown as a verdict).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from workbench.run.sanitize_findings import clean_finding, source_of, to_findings
from workbench.run.sanitize_report import parse_consan, parse_sanitizer, records_to_dicts, summary_counts
from workbench.run.wrapped import launch_wrapped

__all__ = ["COMPUTE_SANITIZER_TOOLS", "TOOLS", "run", "sanitizer_path"]

COMPUTE_SANITIZER_TOOLS = ("racecheck", "synccheck", "memcheck", "initcheck")
TOOLS = (*COMPUTE_SANITIZER_TOOLS, "consan")
DEFAULT_PATH = "/usr/local/cuda/bin/compute-sanitizer"
SANITIZED_TIMEOUT_S = float(os.environ.get("TLX_WORKBENCH_SANITIZE_TIMEOUT_S", "120"))  # runs 10-1000x slower
SETUP_S = float(os.environ.get("TLX_WORKBENCH_SANITIZE_SETUP_S", "180"))  # python, torch, a CUDA context, sanitized
RAW_LIMIT = 8000


def sanitizer_path() -> str | None:
    """``$TLX_WORKBENCH_COMPUTE_SANITIZER``, else /usr/local/cuda/bin/compute-sanitizer, else PATH."""
    for p in (os.environ.get("TLX_WORKBENCH_COMPUTE_SANITIZER"), DEFAULT_PATH):
        if p and os.path.exists(p):
            return p
    return shutil.which("compute-sanitizer")


def _command(tool: str, name: str, log: Path) -> tuple[list[str], str | None]:
    if tool == "consan":
        return [], None
    path = sanitizer_path()
    if path is None:
        return [], ("compute-sanitizer was not found (set TLX_WORKBENCH_COMPUTE_SANITIZER, or install the CUDA "
                    f"toolkit at {DEFAULT_PATH})")
    return [path, "--tool", tool, "--kernel-name", f"kns={name}", "--print-limit", "100", "--show-backtrace", "no",
            "--log-file", str(log)], None


def _truncate(text: str) -> str:
    if len(text) <= RAW_LIMIT:
        return text
    half = RAW_LIMIT // 2
    return f"{text[:half]}\n... [{len(text) - RAW_LIMIT} characters left out] ...\n{text[-half:]}"


def run(tool: str, compiled: Any, arg_names: list[str], constexpr: list[bool], values: list[Any],
        grid: tuple[int, ...], *, artifact: Any, static: list[dict[str, Any]] | None = None,
        same_device: bool = True, timeout_s: float | None = None) -> dict[str, Any]:
    """Run one sanitized launch; returns ``{"record": ..., "findings": [...]}`` and never raises."""
    t0 = time.perf_counter()
    name = str(getattr(compiled, "name", "kernel"))
    tmp = Path(tempfile.mkdtemp(prefix="tlx-wb-san-"))
    log = tmp / f"{tool}.log"
    prefix, missing = _command(tool, name, log)
    record: dict[str, Any] = {"tool": tool, "kernel": name, "command": " ".join(prefix) or None, "status": "skipped",
                              "reason": missing, "seconds": None, "outcome": None, "summary": {}, "raw": ""}
    if missing:
        return {"record": record, "findings": []}
    try:
        wrapped = launch_wrapped(prefix, f"sanitize-{tool}", compiled, arg_names, constexpr, values, grid,
                                 timeout_s=timeout_s or SANITIZED_TIMEOUT_S, setup_s=SETUP_S)
    except Exception as e:  # the run is a diagnostic: its failure is reported, not raised
        record.update(status="error", reason=f"{type(e).__name__}: {e}", seconds=time.perf_counter() - t0)
        return {"record": record, "findings": []}
    out, program = wrapped.outcome, wrapped.program
    tool_text = log.read_text(errors="replace") if log.exists() else ""
    shutil.rmtree(tmp, ignore_errors=True)
    return _result(tool, record, out, tool_text, program, artifact, static, same_device, t0)


def _result(tool: str, record: dict[str, Any], out: Any, tool_text: str, program: str, artifact: Any,
            static: list[dict[str, Any]] | None, same_device: bool, t0: float) -> dict[str, Any]:
    records = parse_consan(program) if tool == "consan" else parse_sanitizer(tool_text, tool)
    findings = to_findings(records, tool, artifact, same_device=same_device, static=static)
    ran = out.status in ("ok", "fault", "died") or (out.status == "error" and out.phase == "run")
    if out.status == "timeout":
        findings.append({"rule": f"{tool}-timeout", "severity": "warning", "line": None, "source": source_of(tool),
                         "message": f"{tool}: the sanitized launch did not finish within {out.timeout_s:.3g} s "
                                    f"({out.phase}); it was stopped", "related": [],
                         "hint": "a kernel that hangs hangs under the sanitizer too (ConSan reports a deadlock "
                                 "instead, when it sees one)"})
    elif not findings and ran:
        findings.append(clean_finding(tool, f"launch {out.status}"))
    elif not findings:
        findings.append({"rule": f"{tool}-not-run", "severity": "warning", "line": None, "source": source_of(tool),
                         "message": f"{tool}: the sanitized launch did not run: {out.message}", "related": [],
                         "hint": None})
    raw = tool_text if tool != "consan" else program
    record.update(status="ok" if ran else out.status, seconds=round(time.perf_counter() - t0, 3),
                  outcome=out.to_dict(), summary=summary_counts(tool_text), raw=_truncate(raw),
                  records=records_to_dicts(records)[:50])
    return {"record": record, "findings": findings}
