"""Plotly Gantt chart of a timeline (lanes CTA -> role, coloured by activity) and a Perfetto export."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from workbench.measure.timeline.trace import Trace, pick_ctas

COLORS = {
    "waiting": "#d62728",
    "tma": "#1f77b4",
    "mma": "#2ca02c",
    "epilogue": "#9467bd",
    "other": "#7f7f7f",
    "task": "#e8e8e8",
}
LABELS = {
    "waiting": "waiting on a barrier",
    "tma": "TMA issue",
    "mma": "MMA (issue and wait)",
    "epilogue": "epilogue store",
    "other": "other scope",
    "task": "task (whole role)",
}


def lane_rows(trace: Trace, ctas: list[int] | None = None, max_ctas: int = 8) -> list[dict[str, Any]]:
    """One row per drawn bar: lane label, CTA, role, category, name, start/end in ns (kernel time)."""
    chosen = ctas if ctas is not None else pick_ctas(trace, max_ctas)
    order = {r: i for i, r in enumerate(trace.roles())}
    rows: list[dict[str, Any]] = []
    for (cta, role), evs in sorted(trace.lanes().items(), key=lambda kv: (kv[0][0], order.get(kv[0][1], 99))):
        if cta not in chosen:
            continue
        base = trace.cta_start_ns.get(cta, 0.0)
        lane = f"CTA {cta} (SM {trace.cta_core.get(cta, '?')}) · {role}"
        for e in evs:
            rows.append(
                {
                    "lane": lane,
                    "cta": cta,
                    "role": role,
                    "category": "task" if e.activity == "task" else e.category,
                    "name": e.name,
                    "start_ns": base + trace.ns(e.start),
                    "dur_ns": trace.ns(e.dur),
                    "cycles": e.dur,
                }
            )
    return rows


def figure(trace: Trace, ctas: list[int] | None = None, max_ctas: int = 8, title: str | None = None) -> Any:
    """A zoomable plotly Gantt chart: y = CTA · role lanes, x = ns since the first CTA started."""
    import plotly.graph_objects as go

    rows = lane_rows(trace, ctas, max_ctas)
    lanes: list[str] = []
    for r in rows:
        if r["lane"] not in lanes:
            lanes.append(r["lane"])
    fig = go.Figure()
    for cat in ("task", "waiting", "tma", "mma", "epilogue", "other"):
        sel = [r for r in rows if r["category"] == cat]
        if not sel:
            continue
        fig.add_trace(
            go.Bar(
                orientation="h",
                y=[r["lane"] for r in sel],
                x=[r["dur_ns"] for r in sel],
                base=[r["start_ns"] for r in sel],
                name=LABELS[cat],
                marker_color=COLORS[cat],
                marker_line_width=0,
                opacity=0.35 if cat == "task" else 1.0,
                width=0.9 if cat == "task" else 0.6,
                customdata=[[r["name"], r["cycles"]] for r in sel],
                hovertemplate="%{customdata[0]}<br>start %{base:.0f} ns, %{x:.0f} ns (%{customdata[1]} cycles)"
                "<extra></extra>",
            )
        )
    clock = (
        f"{trace.clock_mhz:.0f} MHz ({trace.clock_source})" if trace.clock_mhz else "1000 MHz assumed (not measured)"
    )
    who = trace.meta.get("device") or "GPU"
    when = trace.meta.get("when") or ""
    fig.update_layout(
        title=title or f"{trace.kernel}: per-role timeline, {len(set(r['cta'] for r in rows))} CTAs",
        barmode="overlay",
        xaxis_title=f"ns since the first CTA started (Proton instrumentation, clock {clock})",
        yaxis={"categoryorder": "array", "categoryarray": list(reversed(lanes)), "automargin": True},
        height=max(300, 28 * len(lanes) + 140),
        legend={"orientation": "h", "y": -0.15},
        annotations=[
            {
                "text": f"measured by workbench.measure.timeline on {who} {when}".strip(),
                "xref": "paper",
                "yref": "paper",
                "x": 1,
                "y": 1.02,
                "showarrow": False,
                "font": {"size": 10},
                "xanchor": "right",
            }
        ],
    )
    return fig


def to_perfetto(trace: Trace, path: str | Path, ctas: list[int] | None = None) -> Path:
    """A Chrome/Perfetto trace (JSON) in real time: process = CTA (SM), thread = role, ts/dur in us.

    Unlike Proton's own file (kilocycles labelled microseconds), times here use the measured clock;
    ``args`` keep the cycle counts.
    """
    keep = set(ctas if ctas is not None else trace.ctas)
    roles = trace.roles()
    events: list[dict[str, Any]] = []
    for cta in sorted(keep):
        events.append(
            {
                "ph": "M",
                "name": "process_name",
                "pid": cta,
                "args": {"name": f"CTA {cta} (SM {trace.cta_core.get(cta, '?')})"},
            }
        )
        events.append({"ph": "M", "name": "process_sort_index", "pid": cta, "args": {"sort_index": cta}})
        for i, r in enumerate(roles):
            events.append({"ph": "M", "name": "thread_name", "pid": cta, "tid": i, "args": {"name": r}})
            events.append({"ph": "M", "name": "thread_sort_index", "pid": cta, "tid": i, "args": {"sort_index": i}})
    tid = {r: i for i, r in enumerate(roles)}
    for (cta, role), evs in trace.lanes().items():
        if cta not in keep:
            continue
        base = trace.cta_start_ns.get(cta, 0.0)
        for e in evs:
            events.append(
                {
                    "ph": "X",
                    "name": e.name,
                    "cat": "task" if e.activity == "task" else e.category,
                    "pid": cta,
                    "tid": tid[role],
                    "ts": (base + trace.ns(e.start)) / 1000.0,
                    "dur": trace.ns(e.dur) / 1000.0,
                    "args": {"cycles": e.dur, "warp": e.warp},
                }
            )
    doc = {
        "displayTimeUnit": "ns",
        "traceEvents": events,
        "otherData": {
            "kernel": trace.kernel,
            "clock_mhz": trace.clock_mhz,
            "clock_source": trace.clock_source,
            "writer": "workbench.measure.timeline",
        },
    }
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(doc, separators=(",", ":")))
    return p
