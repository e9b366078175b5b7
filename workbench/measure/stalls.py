"""Why is it slow: a launch's warp-stall samples (Nsight Compute) per role, per user line and per SASS line.

``stalls_section(compiled, arg_names, constexpr, values, grid, artifact=...)`` is what ``%%tlx --stalls``
calls: one launch in a fresh worker under ncu (``run.wrapped``), the report read by ``measure.ncu``, the
samples joined to roles and lines by ``analyse.stalls``. It never raises: a missing ncu, counters ncu may not
read, a launch that failed are the payload's ``status``/``reason``. ``stalls(kernel, grid, *args, **kw)`` does
the same for a ``@triton.jit`` kernel called from Python. The ``.ncu-rep`` is kept (``report_file``) to open
in Nsight Compute.
"""

from __future__ import annotations

import os
import re
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from workbench.analyse.orchestration import build_model
from workbench.analyse.stalls import attribute, roles_of
from workbench.measure._env import cache_dir
from workbench.measure.ncu import NCU_SECTIONS, NcuMissing, ncu_command, ncu_path, read_samples
from workbench.run.arguments import bind_arguments
from workbench.run.launching import launch_values
from workbench.run.wrapped import launch_wrapped

__all__ = ["from_report", "skipped", "stalls", "stalls_section"]

TIMEOUT_S = float(os.environ.get("TLX_WORKBENCH_STALLS_TIMEOUT_S", "120"))  # the profiled launch: a few replays
SETUP_S = float(os.environ.get("TLX_WORKBENCH_STALLS_SETUP_S", "120"))  # python, torch, CUDA under ncu
_ERR = re.compile(r"^==(?:ERROR|ERR|WARNING|WARN)==.*$", re.M)


def _base(device: str | None) -> dict[str, Any]:
    return {"kind": "stalls", "status": "skipped", "reason": None,
            "measured_by": f"Nsight Compute ({', '.join(NCU_SECTIONS)}), one launch, clocks not locked",
            "device": device, "when": datetime.now(UTC).isoformat(timespec="seconds")}


def skipped(reason: str, device: str | None = None) -> dict[str, Any]:
    """The stalls payload of a launch that was not profiled, and why."""
    return {**_base(device), "reason": reason}


def stalls_section(compiled: Any, arg_names: list[str], constexpr: list[bool], values: list[Any],
                   grid: tuple[int, ...], *, artifact: Any, device: str | None = None,
                   timeout_s: float | None = None) -> dict[str, Any]:
    """The Report's stalls payload of one launch (``kind: "stalls"``); never raises."""
    t0 = time.perf_counter()
    out = _base(device)
    ncu = ncu_path()
    if ncu is None:
        return {**out, "reason": "Nsight Compute (ncu) was not found: install it, or set TLX_WORKBENCH_NCU to its "
                                 "path (it comes with the CUDA toolkit under nsight-compute*/)"}
    name = str(getattr(compiled, "name", artifact.name))
    report = _report_path(name)
    try:
        wrapped = launch_wrapped(ncu_command(ncu, name, report), "stalls", compiled, arg_names, constexpr, values,
                                 grid, timeout_s=timeout_s or TIMEOUT_S, setup_s=SETUP_S)
    except Exception as e:  # a diagnostic run: its failure is the payload's reason
        return {**out, "status": "error", "reason": f"the profiled launch did not start: {type(e).__name__}: {e}"}
    outcome, program = wrapped.outcome, wrapped.program
    if not report.exists():
        said = "; ".join(m.group(0) for m in _ERR.finditer(program))[:600]
        why = said or f"the launch ended {outcome.status}: {outcome.message}"
        return {**out, "status": "error", "seconds": round(time.perf_counter() - t0, 2),
                "reason": f"ncu wrote no report ({why})"}
    return {**from_report(report, artifact, device, ncu=ncu, when=out["when"]),
            "seconds": round(time.perf_counter() - t0, 2), "launch": outcome.status}


def from_report(path: str | Path, artifact: Any, device: str | None = None, *, ncu: str | None = None,
                when: str | None = None) -> dict[str, Any]:
    """The stalls payload of an ``.ncu-rep`` with SourceCounters (this workbench's, or one ncu wrote on another
    machine for the same build of ``artifact``'s kernel), its samples placed on ``artifact``'s roles, lines and
    SASS; read with ncu's ``extras/python``, else the ``ncu-report`` package (``pip install
    tlx-workbench[profile]``: no GPU needed). ``when``: when the launch was profiled (not known of a report made
    elsewhere). Never raises: a report it cannot read is the payload's reason."""
    out = {**_base(device), "when": when, "report_file": str(path)}
    try:
        samples = read_samples(path, ncu)
        payload = _attribute(samples, artifact)
    except (NcuMissing, ValueError, OSError) as e:
        return {**out, "status": "error", "reason": str(e)}
    placed = (payload.get("mapped") or {}).get("instruction") or 0.0
    if samples.kernel != artifact.name and placed < 0.9:  # another kernel's report (or another build's)
        return {**out, "status": "error", "kernel": samples.kernel,
                "reason": f"the report profiled {samples.kernel}, not {artifact.name}: {placed:.0%} of its samples "
                          "fall on this build's instructions (profile this build, or give its own Artifact)"}
    return {**out, "status": "ok", "kernel": samples.kernel, "device": samples.device or device,
            "duration_ns": samples.duration_ns, "ncu_version": samples.version, **payload}


def _attribute(samples: Any, artifact: Any) -> dict[str, Any]:
    sass = artifact.stages.get("sass")
    if not sass:
        raise ValueError("the kernel's SASS is not in its Artifact (nvdisasm missing?): samples cannot be placed")
    try:
        roles = roles_of(build_model(artifact))
    except Exception:  # a kernel the orchestration model cannot read (Gluon, no TTGIR): lines only
        roles = []
    return attribute(samples.by_pc, samples.sass, sass, artifact.reverse_map("sass"), roles)


def _report_path(kernel: str) -> Path:
    d = cache_dir() / "stalls"
    d.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    return d / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', kernel)}-{stamp}-{os.getpid()}.ncu-rep"


def stalls(kernel: Any, grid: Any, *args: Any, target: str = "sm_90", **kwargs: Any) -> dict[str, Any]:
    """``kernel[grid](*args, **kwargs)``'s stall samples per role, line and SASS instruction (GPU and ncu).

    Compiles through the JIT (the binary the worker launches) and through ``workbench.compile`` (the SASS with
    line info and the roles); returns the payload ``%%tlx --stalls`` shows."""
    from workbench.compile import compile as compile_artifact

    g = grid(kwargs) if callable(grid) else grid
    g3 = tuple(int(v) for v in (tuple(g) + (1, 1))[:3])
    compiled = kernel.warmup(*args, grid=g3, **kwargs)
    artifact = compile_artifact(kernel, *args, target=target, **kwargs)
    names, consts, values = launch_values(kernel, bind_arguments(kernel, args, kwargs))
    return stalls_section(compiled, names, consts, values, g3, artifact=artifact)
