"""Plotly Gantt chart of a timeline (lanes CTA -> role, coloured by category), the Report's aggregated lanes,
and a Perfetto export."""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from workbench.measure.timeline.stats import lanes_of
from workbench.measure.timeline.trace import CATEGORIES, Trace, pick_ctas

COLORS = {
    "waiting": "#d62728",
    "tma": "#1f77b4",
    "mma": "#2ca02c",
    "mma_wait": "#98df8a",
    "epilogue": "#9467bd",
    "store_wait": "#c5b0d5",
    "other": "#7f7f7f",
    "task": "#e8e8e8",
    "untracked": "#e8e8e8",
}
LABELS = {
    "waiting": "waiting on a barrier",
    "tma": "TMA issue",
    "mma": "MMA issue",
    "mma_wait": "waiting for MMA",
    "epilogue": "epilogue store",
    "store_wait": "waiting for TMA stores",
    "other": "other scope",
    "task": "task (whole role)",
    "untracked": "no scope (math, address, loop)",
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


def aggregated_lanes(trace: Trace, ctas: list[int] | None = None, max_ctas: int = 4,
                     bins: int = 160) -> list[dict[str, Any]]:
    """The Report's lanes: per (CTA, role) of a CTA sample, the role's span cut into ``bins`` equal bins,
    each labelled with the category covering most of it (``untracked`` when scopes cover under a
    third), runs of equal labels merged into one segment: ``{cta, role, name, start_ns, dur_ns,
    share}`` (``share``: the mean fraction of the segment its category covers). At most ``bins``
    segments per lane, whatever the number of events; exact numbers are in the role stats."""
    chosen = set(ctas if ctas is not None else pick_ctas(trace, max_ctas))
    order = {r: i for i, r in enumerate(trace.roles())}
    rows: list[dict[str, Any]] = []
    for (cta, role), lane in sorted(lanes_of(trace).items(), key=lambda kv: (kv[0][0], order.get(kv[0][1], 99))):
        if cta not in chosen:
            continue
        s0, s1 = lane.span
        width = max(1.0, (s1 - s0) / bins)
        n = max(1, min(bins, int(round((s1 - s0) / width))))
        cover = {cat: _binned(lane.category(cat), s0, width, n) for cat in CATEGORIES}
        labels: list[tuple[str, float]] = []
        for b in range(n):
            cat = max(CATEGORIES, key=lambda c: cover[c][b])
            frac = cover[cat][b] / width
            if frac < 1 / 3:
                cat, frac = "untracked", 1 - sum(cover[c][b] for c in CATEGORIES) / width
            labels.append((cat, frac))
        base = trace.cta_start_ns.get(cta, 0.0)
        b = 0
        while b < n:
            e = b
            while e + 1 < n and labels[e + 1][0] == labels[b][0]:
                e += 1
            share = sum(f for _, f in labels[b:e + 1]) / (e - b + 1)
            rows.append({"cta": cta, "role": role, "category": labels[b][0], "name": labels[b][0],
                         "start_ns": round(base + trace.ns(s0 + b * width), 1),
                         "dur_ns": round(trace.ns((e - b + 1) * width), 1), "share": round(max(0.0, share), 3)})
            b = e + 1
    return rows


def _binned(iv: list[tuple[int, int]], s0: int, width: float, n: int) -> list[float]:
    """Cycles of ``iv`` falling in each of ``n`` bins of ``width`` cycles from ``s0``."""
    out = [0.0] * n
    for s, e in iv:
        b = max(0, int((s - s0) // width))
        while b < n and s0 + b * width < e:
            lo, hi = s0 + b * width, s0 + (b + 1) * width
            out[b] += max(0.0, min(e, hi) - max(s, lo))
            b += 1
    return out


def figure(trace: Trace, ctas: list[int] | None = None, max_ctas: int = 8, title: str | None = None) -> Any:
    """A zoomable plotly Gantt chart: y = CTA · role lanes, x = ns since the first CTA started."""
    import plotly.graph_objects as go

    rows = lane_rows(trace, ctas, max_ctas)
    lanes: list[str] = []
    for r in rows:
        if r["lane"] not in lanes:
            lanes.append(r["lane"])
    fig = go.Figure()
    for cat in ("task", *CATEGORIES):
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


def chrome_trace(spans: Iterable[dict[str, Any]], processes: dict[int, str], roles: list[str],
                 other: dict[str, Any]) -> dict[str, Any]:
    """A Chrome/Perfetto trace document (Trace Event JSON): process = CTA, thread = role (both named and sorted),
    one complete event per span ``{cta, role, name, cat, start_ns, dur_ns, args}``, ts/dur in us. The one layout of
    every timeline trace the workbench writes: :func:`to_perfetto`'s whole trace and :func:`lanes_trace`'s Report
    lanes (the viewer's download)."""
    events: list[dict[str, Any]] = []
    for cta, name in sorted(processes.items()):
        events.append({"ph": "M", "name": "process_name", "pid": cta, "args": {"name": name}})
        events.append({"ph": "M", "name": "process_sort_index", "pid": cta, "args": {"sort_index": cta}})
        for i, r in enumerate(roles):
            events.append({"ph": "M", "name": "thread_name", "pid": cta, "tid": i, "args": {"name": r}})
            events.append({"ph": "M", "name": "thread_sort_index", "pid": cta, "tid": i, "args": {"sort_index": i}})
    tid = {r: i for i, r in enumerate(roles)}
    for sp in spans:
        events.append({"ph": "X", "name": sp["name"], "cat": sp["cat"], "pid": sp["cta"], "tid": tid[sp["role"]],
                       "ts": sp["start_ns"] / 1000.0, "dur": sp["dur_ns"] / 1000.0, "args": sp["args"]})
    return {"displayTimeUnit": "ns", "traceEvents": events, "otherData": other}


def lanes_trace(section: dict[str, Any]) -> dict[str, Any] | None:
    """A ``--timeline`` section's lanes (a sample of CTAs, each role's warps folded) as a Chrome trace
    (:func:`chrome_trace`); None without lanes."""
    spans, roles, ctas = [], [], []
    for ln in section.get("lanes") or []:
        start, dur = ln.get("start_ns"), ln.get("dur_ns")
        if not isinstance(start, (int, float)) or not isinstance(dur, (int, float)):
            continue
        cta = ln.get("cta") if isinstance(ln.get("cta"), int) else 0
        roles += [ln["role"]] if ln["role"] not in roles else []
        ctas += [cta] if cta not in ctas else []
        spans.append({"cta": cta, "role": ln["role"], "name": ln.get("name") or ln.get("category") or "",
                      "cat": ln.get("category") or "other", "start_ns": start, "dur_ns": dur,
                      "args": {"cycles": ln.get("cycles")}})
    if not spans:
        return None
    other = {k: section.get(k) for k in ("kernel", "measured_by", "device", "when")}
    other["note"] = "the Report's lanes: a sample of CTAs, each role's warps folded"
    return chrome_trace(spans, {c: f"CTA {c}" for c in ctas}, roles, other)


def to_perfetto(trace: Trace, path: str | Path, ctas: list[int] | None = None) -> Path:
    """A Chrome/Perfetto trace (JSON, :func:`chrome_trace`) in real time: process = CTA (SM), thread = role.

    Unlike Proton's own file (kilocycles labelled microseconds), times here use the measured clock;
    ``args`` keep the cycle counts.
    """
    keep = set(ctas if ctas is not None else trace.ctas)
    spans = []
    for (cta, role), evs in trace.lanes().items():
        if cta not in keep:
            continue
        base = trace.cta_start_ns.get(cta, 0.0)
        spans += [{"cta": cta, "role": role, "name": e.name, "cat": "task" if e.activity == "task" else e.category,
                   "start_ns": base + trace.ns(e.start), "dur_ns": trace.ns(e.dur),
                   "args": {"cycles": e.dur, "warp": e.warp}} for e in evs]
    other = {"kernel": trace.kernel, "clock_mhz": trace.clock_mhz, "clock_source": trace.clock_source,
             "writer": "workbench.measure.timeline"}
    doc = chrome_trace(spans, {c: f"CTA {c} (SM {trace.cta_core.get(c, '?')})" for c in keep}, trace.roles(), other)
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(doc, separators=(",", ":")))
    return p
