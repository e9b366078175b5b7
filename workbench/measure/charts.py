"""Plotly charts (plotly is imported only here, only when a chart is asked for)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from workbench.measure.ceilings import DTYPES

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd

    from workbench.measure.roofline import Roofline

_MIN_INTENSITY = 1e-2  # where a zero-FLOP kernel (a copy) is drawn on the log axis


def _plotly():
    try:
        import plotly.graph_objects as go
    except ImportError as exc:  # pragma: no cover - plotly is a dependency
        raise ImportError("charts need plotly: pip install plotly") from exc
    return go


def roofline_figure(r: Roofline, other_dtypes: bool = True):
    go = _plotly()
    peak, bw, ridge = r.peak_tflops, r.bandwidth_tbs, r.ridge
    points = [r.point] + list(r.references)
    xs = [p.intensity for p in points if math.isfinite(p.intensity) and p.intensity > 0]
    lo = min([ridge / 100.0] + [x / 4 for x in xs])
    hi = max([ridge * 20.0] + [x * 4 for x in xs])
    fig = go.Figure()
    fig.add_trace(
        go.Scatter(
            x=[lo, ridge],
            y=[bw * lo, peak],
            mode="lines",
            name=f"memory roof {bw:.2f} TB/s",
            line={"color": "#1f77b4", "width": 3},
        )
    )
    fig.add_trace(
        go.Scatter(
            x=[ridge, hi],
            y=[peak, peak],
            mode="lines",
            name=f"{r.dtype} compute roof {peak:.0f} TFLOP/s",
            line={"color": "#d62728", "width": 3},
        )
    )
    if other_dtypes:
        for key in DTYPES:
            if key == r.dtype:
                continue
            try:
                other = r.ceilings.peak_tflops(key)
            except Exception:
                continue
            if other == peak:
                continue
            fig.add_trace(
                go.Scatter(
                    x=[other / bw, hi],
                    y=[other, other],
                    mode="lines",
                    name=f"{key} roof {other:.0f}",
                    line={"color": "#999999", "width": 1, "dash": "dot"},
                )
            )
    fig.add_trace(
        go.Scatter(
            x=[ridge, ridge],
            y=[bw * lo, peak],
            mode="lines",
            name=f"ridge {ridge:.0f} FLOP/byte",
            line={"color": "#7f7f7f", "width": 1, "dash": "dash"},
        )
    )
    for p in points:
        x = p.intensity if math.isfinite(p.intensity) and p.intensity > 0 else None
        if x is None:
            x = _MIN_INTENSITY if p.intensity == 0 else hi
        timed = p.tflops is not None
        if timed and p.tflops and p.tflops > 0:
            y = p.tflops
            label = f"{p.name}: {p.tflops:.1f} TFLOP/s, {p.tbs:.2f} TB/s"
            symbol = "circle" if p.kind == "kernel" else "diamond"
        else:
            y = min(peak, bw * x)  # not timed (or no FLOPs): mark the attainable roof
            if timed:
                label = f"{p.name}: no FLOPs; {p.tbs:.2f} TB/s ({p.tbs / bw:.0%} of bandwidth)"
            else:
                label = f"{p.name}: attainable {y:.1f} TFLOP/s (not timed)"
            symbol = "x-open"
        fig.add_trace(
            go.Scatter(
                x=[x],
                y=[y],
                mode="markers",
                name=label,
                marker={"size": 12 if p.kind == "kernel" else 10, "symbol": symbol},
                hovertext=[f"{p.name}<br>intensity {p.intensity:.3g} FLOP/byte<br>{label}"],
                hoverinfo="text",
            )
        )
    est = " (counts estimated)" if r.counts.is_estimate else ""
    fig.update_layout(
        title=f"Roofline: {r.name}, {r.bound}-bound{est}<br><sup>{r.ceilings.describe()}</sup>",
        xaxis={"type": "log", "title": "arithmetic intensity (FLOP/byte)"},
        yaxis={"type": "log", "title": "TFLOP/s"},
        legend={"font": {"size": 10}},
        template="plotly_white",
    )
    return fig


def sweep_figure(df: pd.DataFrame, x: str | None = None, y: str | None = None, color: str | None = None):
    """Line chart of a sweep: ``y`` (default TFLOP/s, else TB/s, else median) against ``x``
    (default the first config column), one line per ``color`` value; the reference dashed."""
    go = _plotly()
    keys = list(df.attrs.get("config_keys", []))
    if x is None:
        free = [k for k in keys if k != color]
        x = free[0] if free else (keys[0] if keys else df.columns[0])
    if y is None:
        for cand in ("tflops", "tbs", "median_ms"):
            if cand in df.columns and df[cand].notna().any():
                y = cand
                break
        else:
            y = "median_ms"
    fig = go.Figure()
    groups = [(None, df)] if color is None else list(df.groupby(color, sort=False))
    for value, part in groups:
        label = y if value is None else f"{color}={value}"
        fig.add_trace(go.Scatter(x=part[x], y=part[y], mode="lines+markers", name=label))
        ref_col = {"tflops": "ref_tflops", "tbs": "ref_tbs", "median_ms": "ref_median_ms"}.get(y)
        if ref_col and ref_col in part.columns and part[ref_col].notna().any():
            fig.add_trace(
                go.Scatter(
                    x=part[x],
                    y=part[ref_col],
                    mode="lines+markers",
                    name=f"reference{'' if value is None else f' {color}={value}'}",
                    line={"dash": "dash"},
                )
            )
    unstable = df[df["stable"].ne(True) & df[y].notna()] if "stable" in df.columns else df.iloc[0:0]
    if len(unstable):
        fig.add_trace(
            go.Scatter(
                x=unstable[x],
                y=unstable[y],
                mode="markers",
                name="unstable (spread too wide)",
                marker={"symbol": "x-open", "size": 12, "color": "orange"},
            )
        )
    who = df.attrs.get("device") or "unknown device"
    when = (df.attrs.get("measured_at") or "")[:19]
    fig.update_layout(
        title=f"Sweep: {df.attrs.get('name', '')} {y} vs {x}<br><sup>{who}, {when}</sup>",
        xaxis={"title": x},
        yaxis={"title": y},
        template="plotly_white",
    )
    return fig


def chart_dict(fig: Any) -> dict[str, Any]:
    """A plotly figure as plain JSON data (for the Report)."""
    import json

    return json.loads(fig.to_json())
