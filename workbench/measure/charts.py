"""Plotly charts (plotly is imported only here, only when a chart is asked for)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Protocol

from workbench.measure.ceilings import DTYPES

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd


class Roofline(Protocol):
    """What the roofline chart reads. ``workbench.measure.roofline.Roofline`` is one; that module draws with this
    one (``Roofline.figure``), so this one names only what it reads and imports nothing of it."""

    name: str
    dtype: str
    counts: Any  # ``is_estimate``
    roofs: Any  # ``peak_tflops(dtype)``: the datasheet's roofs where known
    references: list[Any]  # ``Point``s: name, kind, intensity, tflops, tbs

    @property
    def point(self) -> Any: ...
    @property
    def peak_tflops(self) -> float: ...
    @property
    def bandwidth_tbs(self) -> float: ...
    @property
    def ridge(self) -> float: ...
    @property
    def known_bound(self) -> str | None: ...
    @property
    def measured_peak_tflops(self) -> float | None: ...
    @property
    def measured_bandwidth_tbs(self) -> float | None: ...
    def label(self) -> str: ...

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
                other = r.roofs.peak_tflops(key)
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
    _measured_lines(fig, r, lo, hi)
    _points(fig, r, points, hi)
    est = " (counts estimated)" if r.counts.is_estimate else ""
    where = f"{r.known_bound}-bound" if r.known_bound else "intensity unknown (no byte count)"
    fig.update_layout(
        title=f"Roofline: {r.name}, {where}{est}<br><sup>{r.label()}</sup>",
        xaxis={"type": "log", "title": "arithmetic intensity (FLOP/byte)"},
        yaxis={"type": "log", "title": "TFLOP/s"},
        legend={"font": {"size": 10}},
        template="plotly_white",
    )
    return fig


def _measured_lines(fig: Any, r: Roofline, lo: float, hi: float) -> None:
    """The measured ceilings (what cuBLAS and a copy reached), dashed under the datasheet roofs."""
    go = _plotly()
    peak, bw = r.measured_peak_tflops, r.measured_bandwidth_tbs
    if peak is None or bw is None:
        return
    fig.add_trace(go.Scatter(x=[lo, peak / bw, hi], y=[bw * lo, peak, peak], mode="lines",
                             name=f"measured ceiling {peak:.0f} TFLOP/s, {bw:.2f} TB/s",
                             line={"color": "#9467bd", "width": 2, "dash": "dash"}))


def _points(fig: Any, r: Roofline, points: list[Any], hi: float) -> None:
    """Timed points, labelled; points that would cover each other are moved apart along x (a few percent).
    An untimed kernel gets no point, only its intensity as a vertical line."""
    go = _plotly()
    placed: list[tuple[float, float]] = []
    for p in points:
        x = p.intensity if math.isfinite(p.intensity) and p.intensity > 0 else (_MIN_INTENSITY if p.intensity == 0
                                                                                   else hi)
        if not p.tflops:
            if p.kind == "kernel" and p.tflops is None:
                fig.add_vline(x=x, line={"color": "#bbbbbb", "dash": "dot"},
                              annotation_text=f"{p.name}: intensity {x:.3g} (not timed)")
            continue
        y = p.tflops
        shift = sum(1 for px, py in placed if abs(math.log(px / x)) < 0.05 and abs(math.log(py / y)) < 0.08)
        placed.append((x, y))
        xs = x * (1.08 ** shift)
        label = f"{p.name}: {p.tflops:.1f} TFLOP/s, {p.tbs:.2f} TB/s"
        fig.add_trace(go.Scatter(
            x=[xs], y=[y], mode="markers+text", name=label, text=[p.name],
            textposition="middle right" if shift % 2 == 0 else "middle left",
            marker={"size": 12 if p.kind == "kernel" else 10, "symbol": "circle" if p.kind == "kernel" else "diamond"},
            hovertext=[f"{p.name}<br>intensity {p.intensity:.3g} FLOP/byte<br>{label}"], hoverinfo="text"))


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
