"""The part of a reproducer script that every kernel shares: make the inputs, launch, check, time, say what
was reproduced; or, with no GPU, compile for the Report's target only.

Nothing here runs inside the workbench: ``workbench.report.export_script`` copies these functions into each
script (with ``workbench.run.verify.evaluate``, the ``--check`` of the cell itself, and
``workbench.run.launch_record.poison_``), which then needs only torch and Triton with uTLX.
"""

from __future__ import annotations

import base64
import json
import sys
import time
from typing import Any

import torch
import triton

from workbench.compile.triton_reach import gluon_source_class
from workbench.measure.timing import bench
from workbench.run.launch_record import poison_
from workbench.run.verify import CheckSpec, evaluate

__all__ = ["repro_compile", "repro_device", "repro_run", "repro_tensor"]


def repro_device(arch: int, kind: str, compile_only: bool = False) -> tuple[str, str | None]:
    """('cuda', None) on a CUDA GPU that can run a kernel compiled for sm_<arch>; ('cpu', None) with
    ``--interpret`` for a plain Triton kernel (``kind``: 'triton'; Triton's CPU interpreter runs no other);
    else ('cpu', why nothing runs). A ``compile_only`` cell's script runs nothing without ``--run``."""
    if compile_only and "--run" not in sys.argv[1:]:
        return "cpu", "the cell was --compile-only (pass --run to launch it here)"
    if "--interpret" in sys.argv[1:]:
        if kind == "triton":
            return "cpu", None
        return "cpu", f"--interpret: Triton's interpreter runs plain tl.* kernels only, not this {kind} kernel"
    if not torch.cuda.is_available():
        return "cpu", "no CUDA GPU here (torch.cuda.is_available() is False)"
    major, minor = torch.cuda.get_device_capability()
    if major * 10 + minor < arch:
        return "cpu", f"the GPU here ({torch.cuda.get_device_name()}) is sm_{major}{minor}, older than sm_{arch}"
    return "cuda", None


def repro_tensor(shape: tuple, dtype: Any, device: str, generator: Any, fill: str, run: bool,
                 data: Any = None, low: int = 0, high: int = 1, nonnegative: bool = False) -> Any:
    """A tensor for the launch. ``fill``: 'data' (``data``: base64 of its bytes), 'saved' (``data``: the tensor
    from the .pt file beside the script), 'nan' (an output: NaN, integers their dtype's minimum), 'randn'
    (normal, absolute values when ``nonnegative``), 'randint' (in [low, high]), 'bool'. Without a GPU
    (``run`` False) only the saved ones get their values: a compile needs shapes and dtypes."""
    if fill == "data":
        raw = bytearray(base64.b64decode(data))
        return torch.frombuffer(raw, dtype=torch.uint8).view(dtype).reshape(shape).to(device)
    if fill == "saved":
        return data.reshape(shape).to(device)
    t = torch.empty(shape, dtype=dtype, device=device)
    if not run:
        return t
    if fill == "nan":
        poison_(t)
    elif fill == "randint":
        t.copy_(torch.randint(low, high + 1, shape, generator=generator, device=device))
    elif fill == "bool":
        t.copy_(torch.randint(0, 2, shape, generator=generator, device=device).bool())
    else:
        x = torch.randn(shape, generator=generator, device=device, dtype=torch.float32)
        t.copy_(x.abs() if nonnegative else x)
    return t


def repro_compile(kernel: Any, signature: dict, constexprs: dict, attrs: dict, options: dict, arch: int) -> dict:
    """Compile ``kernel`` for sm_<arch> with no GPU (Triton's ``ASTSource``, as its JIT would for this launch)."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    source = gluon_source_class() if getattr(kernel, "is_gluon", lambda: False)() else ASTSource
    t0 = time.perf_counter()
    compiled = triton.compile(source(kernel, signature, constexprs, attrs), target=GPUTarget("cuda", arch, 32),
                              options=options)
    md = compiled.metadata
    return {"seconds": round(time.perf_counter() - t0, 3), "num_warps": md.num_warps, "shared_bytes": md.shared,
            "stages": sorted(compiled.asm)}


def _time_ms(fn: Any) -> float:
    """Median ms of ``fn()`` timed as the workbench's ``--bench`` times it (``workbench.measure.timing.bench``,
    copied into the script: L2 flushed before each call, CUDA-graph replay for a launch-bound call)."""
    return float(bench(fn).median_ms)


def _check_line(c: dict[str, Any], was: dict[str, Any] | None) -> str:
    verdict = {"passed": "output matches", "failed": "output differs", "error": "error",
               "skipped": "not run"}[c["status"]]
    seen = f" [the workbench: {was['status']}]" if was else ""
    return f"check {c['expr']}: {verdict}: {c['message']}{seen}"


def _compiled_only(name: str, why: str, compile_only: Any, checks: list, workbench: dict) -> dict[str, Any]:
    print(f"{why}: compile-only for sm_{workbench['arch']}, nothing runs")
    nothing = "the cell was compile-only" if workbench.get("compile_only") else "nothing runs without a GPU"
    out: dict[str, Any] = {"kernel": name, "mode": "compile-only", "why": why, "checks": [], "time_ms": None}
    try:
        info = compile_only()
    except Exception as e:
        print(f"compile failed: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        out["compile_error"] = f"{type(e).__name__}: {e}"
        return out
    out["compiled"] = info
    seen = workbench.get("compiled") or {}
    same = all(info.get(k) == seen.get(k) for k in ("num_warps", "shared_bytes") if seen.get(k) is not None)
    print(f"compiled {name} for sm_{workbench['arch']} in {info['seconds']:.2f} s: {info['num_warps']} warps, "
          f"{info['shared_bytes']} bytes of shared memory ({'as' if same else 'NOT as'} the workbench compiled it: "
          f"{seen.get('num_warps')} warps, {seen.get('shared_bytes')} bytes)")
    out["same_as_workbench"] = same
    for spec in checks:
        print(f"check {spec.expr}: not run ({nothing})")
        out["checks"].append({"expr": spec.expr, "status": "skipped", "message": nothing})
    print(f"time: not measured ({nothing})" + _workbench_time(workbench))
    return out


def _workbench_time(workbench: dict) -> str:
    ms = workbench.get("median_ms")
    return f"; the workbench measured {ms:.4f} ms on {workbench.get('device')}" if ms else ""


def _ran(name: str, launch: Any, reference: Any, checks: list[CheckSpec], namespace: dict, workbench: dict,
         atol: float | None, rtol: float | None) -> dict[str, Any]:
    gpu = torch.cuda.is_available() and "--interpret" not in sys.argv[1:]
    where = torch.cuda.get_device_name() if gpu else "the CPU (Triton's interpreter)"
    out: dict[str, Any] = {"kernel": name, "mode": "gpu" if gpu else "interpreter", "device": where, "checks": []}
    print(f"reproducing {name} on {where}")
    if gpu:  # scratch memory for kernels that ask for it (device-side TMA descriptors), as the workbench's worker
        triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
    try:
        launch()
        if gpu:
            torch.cuda.synchronize()
    except Exception as e:
        out["launch_error"] = f"{type(e).__name__}: {e}"
        print(f"launch failed: {out['launch_error'].splitlines()[0]}")
        return out
    seen = {c.get("expr"): c for c in workbench.get("checks", [])}
    for spec in checks:
        c = evaluate(spec, namespace, atol, rtol)
        out["checks"].append({k: c.get(k) for k in ("expr", "status", "message", "max_abs_err", "mismatched")})
        print(_check_line(c, seen.get(spec.expr)))
    if not gpu:
        print("time: not measured (Triton's interpreter runs on the CPU)" + _workbench_time(workbench))
        return out
    out["time_ms"] = _time_ms(launch)
    ratio = f": {out['time_ms'] / workbench['median_ms']:.3f}x its time" if workbench.get("median_ms") else ""
    rate = f", {workbench['flops'] / out['time_ms'] / 1e9:.1f} TFLOP/s" if workbench.get("flops") else ""
    print(f"time: {name} {out['time_ms']:.4f} ms median (the workbench's bench, L2 flushed){rate}"
          f"{_workbench_time(workbench)}{ratio}")
    if reference is not None:
        out["reference_ms"] = _time_ms(reference)
        print(f"reference {workbench.get('reference')}: {out['reference_ms']:.4f} ms median; the kernel takes "
              f"{out['time_ms'] / out['reference_ms']:.3f}x its time")
    return out


def repro_run(name: str, launch: Any, reference: Any, checks: list[CheckSpec], namespace: dict, why: str | None,
              compile_only: Any, workbench: dict, atol: float | None, rtol: float | None,
              not_reproduced: list[str]) -> dict[str, Any]:
    """Launch once, evaluate the cell's checks in ``namespace`` (the script's names: its tensors hold what the
    launch wrote), time the kernel and the reference; print what was reproduced. ``why``: why nothing can run
    here (then only ``compile_only()``). The result also goes to stdout as one JSON line with ``--json``; the
    exit status is 1 when a check failed or the launch or compile did."""
    for line in not_reproduced:
        print(f"not reproduced: {line}")
    if why is not None:
        out = _compiled_only(name, why, compile_only, checks, workbench)
    else:
        out = _ran(name, launch, reference, checks, namespace, workbench, atol, rtol)
    out["workbench"], out["not_reproduced"] = workbench, not_reproduced
    if "--json" in sys.argv[1:]:
        print(json.dumps(out, default=str))
    bad = out.get("launch_error") or out.get("compile_error") or any(
        c["status"] in ("failed", "error") for c in out["checks"])
    if bad:
        sys.exit(1)
    return out
