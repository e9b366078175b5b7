"""Nsight Compute: one launch profiled with its warp-stall sampling, read through ncu's Python report interface.

``ncu_command(...)`` is the ``ncu --clock-control none --section SourceCounters --section WarpStateStats`` line
(only this kernel, one launch) that ``measure.stalls`` starts a worker under to write an ``.ncu-rep``;
``read_samples(path)`` reads it with ``ncu_report`` (NVIDIA's report interface: the copy under ncu's
``extras/python``, else the ``ncu-report`` package) into ``Samples``: per PC the report names (``analyse.stalls``
aligns them with nvdisasm's addresses through the SASS text ncu recorded at each) the warp samples of each stall
reason, and the kernel's duration and device. Nothing here knows roles or lines (``analyse.stalls``).
"""

from __future__ import annotations

import glob
import importlib
import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["NCU_SECTIONS", "NcuMissing", "Samples", "ncu_command", "ncu_path", "read_samples", "report_module"]

NCU_SECTIONS = ("SourceCounters", "WarpStateStats")
_STALL = "smsp__pcsamp_warps_issue_stalled_"
_SEARCH = ("/usr/local/cuda/bin/ncu", "/opt/nvidia/nsight-compute/*/ncu", "/usr/local/cuda*/nsight-compute*/ncu")


class NcuMissing(RuntimeError):
    """ncu, or its report interface, is not on this machine."""


@dataclass
class Samples:
    """Warp-state samples of one kernel launch, by PC."""

    kernel: str
    by_pc: dict[int, dict[str, int]]  # PC -> stall reason -> samples (``selected``: the warp issued)
    sass: dict[int, str] = field(default_factory=dict)  # PC -> ncu's SASS text of that instruction
    duration_ns: float | None = None
    device: str | None = None
    version: str | None = None  # ncu's, as the report names it


def ncu_path() -> str | None:
    """``$TLX_WORKBENCH_NCU``, else /usr/local/cuda/bin/ncu or an Nsight Compute install, else PATH."""
    env = os.environ.get("TLX_WORKBENCH_NCU")
    if env and os.path.exists(env):
        return env
    for pattern in _SEARCH:
        found = sorted(glob.glob(pattern))
        if found:
            return found[-1]
    return shutil.which("ncu")


def ncu_command(ncu: str, kernel: str, report: Path) -> list[str]:
    """The ncu command line that wraps the worker: this kernel's first launch, clocks left alone."""
    sections = [a for s in NCU_SECTIONS for a in ("--section", s)]
    return [ncu, "--clock-control", "none", *sections, "--kernel-name", kernel, "--launch-count", "1",
            "--import-source", "no", "--force-overwrite", "--export", str(report)]


def report_module(ncu: str | None = None) -> Any:
    """NVIDIA's ``ncu_report``: the one beside the ncu that made the report (``extras/python``), else an
    installed ``ncu-report`` package."""
    ncu = ncu or ncu_path()
    dirs: list[Path] = []
    if ncu:
        root = Path(os.path.realpath(ncu)).parent
        dirs += [root / "extras" / "python", root.parent / "extras" / "python"]
    dirs += [Path(p).parent / "extras" / "python" for pattern in _SEARCH[1:] for p in sorted(glob.glob(pattern))]
    d = next((d for d in dirs if (d / "ncu_report.py").exists()), None)
    if d is not None and str(d) not in sys.path:
        sys.path.insert(0, str(d))
    try:
        return importlib.import_module("ncu_report")
    except ImportError as e:
        raise NcuMissing("Nsight Compute's report interface (ncu_report) was not found: install Nsight Compute, "
                         "or `pip install ncu-report` to read a report made elsewhere") from e


def read_samples(path: str | Path, ncu: str | None = None) -> Samples:
    """The stall samples of the report's first kernel; ``NcuMissing`` without ``ncu_report``, ValueError for a
    report that holds no kernel or no sampling data."""
    mod = report_module(ncu)
    ctx = mod.load_report(str(path))
    if ctx.num_ranges() == 0 or ctx.range_by_idx(0).num_actions() == 0:
        raise ValueError(f"{path}: the report holds no profiled kernel (did the launch run, under that name?)")
    action = ctx.range_by_idx(0).action_by_idx(0)
    by_pc: dict[int, dict[str, int]] = {}
    for name in action.metric_names():
        if not name.startswith(_STALL) or name.endswith("_not_issued"):
            continue
        metric = action.metric_by_name(name)
        if metric is None or not metric.num_instances() or not metric.has_correlation_ids():
            continue
        reason, pcs = name[len(_STALL):], metric.correlation_ids()
        for i in range(metric.num_instances()):
            n = int(metric.value(i) or 0)
            if n:
                row = by_pc.setdefault(int(pcs.value(i)), {})
                row[reason] = row.get(reason, 0) + n
    if not by_pc:
        seen = sorted(n for n in action.metric_names() if "pcsamp" in n)[:12]
        raise ValueError(f"{path}: no warp-stall samples in the report (section SourceCounters not collected, or "
                         f"the launch was too short to sample); its sampling metrics: {', '.join(seen) or 'none'}")
    return Samples(kernel=str(action.name()), by_pc=by_pc, sass={pc: str(action.sass_by_pc(pc)) for pc in by_pc},
                   duration_ns=_number(action, "gpu__time_duration.sum"),
                   device=_text(action, "device__attribute_display_name"), version=_text(action, "ncu__version"))


def _number(action: Any, name: str) -> float | None:
    m = action.metric_by_name(name)
    v = m.value() if m is not None else None
    return float(v) if isinstance(v, int | float) else None


def _text(action: Any, name: str) -> str | None:
    m = action.metric_by_name(name)
    v = m.value() if m is not None else None
    return str(v) if v not in (None, "") else None
