"""``--timeline [LEVEL]``: the per-role timeline of one launch instrumented at LEVEL (``workbench.measure.timeline``:
Proton's intra-kernel trace, the measured clock); the viewer's Timeline tab draws its lanes and role table."""

from __future__ import annotations

from typing import Any

from workbench.measure.timeline import timeline_section
from workbench.measure.timeline.chart import COLORS, LABELS, lanes_trace
from workbench.measure.timeline.trace import CATEGORIES
from workbench.report.sections import Inputs, Section
from workbench.report.sections._common import base, num, pct, why_not_on_gpu


def build(inp: Inputs) -> dict[str, Any]:
    entry = inp.entry
    head = base("timeline", "workbench.measure.timeline", inp.device)
    if entry.relaunch is None:
        return {**head, "status": "skipped", "reason": why_not_on_gpu(entry, inp.device)}
    try:
        section = timeline_section(entry.relaunch, kernel=entry.kernel, grid=entry.grid, args=entry.bound,
                                   artifact=entry.artifact, level=inp.args.timeline)
    except Exception as ex:
        return {**head, "status": "error", "reason": f"{type(ex).__name__}: {ex}"}
    return {**head, "status": "ok", "reason": None, **(section if isinstance(section, dict) else {"data": section})}


def summary(m: dict[str, Any]) -> str:
    roles = []
    for r in m.get("roles") or []:
        busy, wait = pct(r.get("busy_fraction")), pct(r.get("waiting_fraction"))
        roles.append(f"{r.get('role')} busy {busy or '?'}, waiting {wait or '?'}")
    out = "; ".join(roles) or "no roles"
    ov = (m.get("timing") or {}).get("overhead") if isinstance(m.get("timing"), dict) else None
    if num(ov, "+.1%"):
        out += f"; instrumentation overhead {ov:+.1%}"
    return out


OTHER = "#7f7f7f"  # a category this version does not know (a newer trace's)


def view(m: dict[str, Any]) -> dict[str, Any]:
    """What the Timeline tab draws besides the lanes: the categories its lanes hold, in the drawing order, each with
    the colour and legend label the notebook's plotly chart gives it (a category looks the same everywhere), and
    the lanes as the Chrome / Perfetto trace its download link saves (``chart.lanes_trace``: the layout of
    ``Timeline.to_perfetto``'s whole trace)."""
    present = {str(ln.get("category") or ln.get("name") or "other") for ln in m.get("lanes") or []}
    known = ("task", *CATEGORIES, "untracked")
    order = [c for c in known if c in present] + sorted(present - set(known))
    return {"categories": [{"category": c, "color": COLORS.get(c, OTHER), "label": LABELS.get(c, c)} for c in order],
            "trace": lanes_trace(m)}


SECTION = Section(kind="timeline", tab="timeline", summary=summary, option="timeline", build=build,
                  place="timeline", progress="recording {name}'s per-role timeline", view=view)
