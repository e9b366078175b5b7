"""``--stalls``: the kernel's last isolated launch once more under Nsight Compute, its warp-stall samples per role,
line and SASS instruction (``workbench.measure.stalls``); the viewer's Stalls tab draws them."""

from __future__ import annotations

from typing import Any

from workbench.analyse.stalls import ISSUED
from workbench.measure.stalls import skipped, stalls_section
from workbench.report.sections import Inputs, Section
from workbench.report.sections._common import why_not_on_gpu


def build(inp: Inputs) -> dict[str, Any]:
    entry, device = inp.entry, inp.device
    if entry.worker_launch is None:
        why = why_not_on_gpu(entry, device)
        if entry.ran:
            why = "it ran in the notebook's process (--no-isolate, or arguments a worker cannot take)"
        return skipped(why, device.name)
    return stalls_section(*entry.worker_launch, artifact=entry.artifact, device=device.name)


def summary(m: dict[str, Any]) -> str:
    mapped = (m.get("mapped") or {}).get("role_and_line")
    reasons = m.get("by_reason") or {}
    total = sum(reasons.values())
    top = sorted(((k, v) for k, v in reasons.items() if k != ISSUED), key=lambda kv: -kv[1])[:2]
    tops = ", ".join(f"{k} {v / total:.0%}" for k, v in top) if total else ""
    out = f"{m.get('samples', 0)} warp samples"
    if mapped is not None:
        out += f", {mapped:.1%} on a role and a line"
    return out + (f"; most: {tops}" if tops else "")


SECTION = Section(kind="stalls", tab="stalls", summary=summary, option="stalls", build=build,
                  progress="profiling {name} under Nsight Compute (warp-stall samples)")
