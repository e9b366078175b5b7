"""Kernels against baselines, from measurement records: the fastest of each, same-round ratios, config rankings.

A record is a dict with ``ms`` (None when it failed or was not timed) and, when it was timed in interleaved rounds
(``workbench.measure.interleave``), ``times``: its milliseconds in each round. A ratio ``baseline_ms / ms`` is
the median of the per-round ratios when both sides have the same number of rounds (each round's timings were
taken seconds apart, at the same clock, so a GPU clock that drifts as it heats moves both sides alike), else the
ratio of their single timings.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from workbench.measure.interleave import ratio

__all__ = ["fastest", "rank_configs", "rounds_records", "versus", "versus_rows"]

Record = dict[str, Any]


def fastest(records: Iterable[Record], **match: Any) -> Record | None:
    """The record with the lowest ``ms`` among those whose fields equal ``match`` (None if none was timed)."""
    timed = [r for r in records if r.get("ms") and all(r.get(k) == v for k, v in match.items())]
    return min(timed, key=lambda r: r["ms"]) if timed else None


def versus(ours: Record, base: Record) -> tuple[float, float, float, str]:
    """(ours ms, baseline ms, ratio baseline/ours, how the ratio was taken): the median of the per-round ratios
    when both have rounds of the same count, else the ratio of their single timings."""
    mine, theirs = ours.get("times"), base.get("times")
    if mine and theirs and len(mine) == len(theirs):
        return ours["ms"], base["ms"], ratio(theirs, mine), f"interleaved, {len(mine)} rounds"
    return ours["ms"], base["ms"], base["ms"] / ours["ms"], "best single timings"


def rounds_records(times: dict[str, list[float]], flops: float | None = None) -> dict[str, Record]:
    """Per item of interleaved rounds (``interleave.rounds``' answer), a record: ``ms`` the median over the rounds,
    ``times`` the rounds, ``tflops`` from ``flops`` (per call) when given."""
    out = {}
    for name, ts in times.items():
        ms = statistics.median(ts)
        out[name] = {"ms": ms, "times": list(ts), "tflops": flops / ms / 1e9 if flops else None}
    return out


def versus_rows(ours: dict[str, Record], baselines: dict[str, Record]) -> list[Record]:
    """One row per (kernel of ``ours``, baseline other than itself): kernel, config, ms, tflops, baseline,
    baseline_ms, ratio (baseline_ms / ms, see :func:`versus`) and method."""
    rows = []
    for kernel, mine in ours.items():
        for base, theirs in baselines.items():
            if base == kernel:
                continue
            ms, base_ms, r, method = versus(mine, theirs)
            rows.append(dict(kernel=kernel, config=mine.get("config"), ms=ms, tflops=mine.get("tflops"),
                             baseline=base, baseline_ms=base_ms, ratio=r, method=method))
    return rows


def rank_configs(records: Iterable[Record], shapes: Sequence[Sequence[int]],
                 flops: Callable[[Sequence[int]], float]) -> dict[str, list[Record]]:
    """Per kernel, its configs timed at every shape, best first by the geometric mean over the shapes of their
    speed relative to the kernel's fastest config there (1.0: the fastest everywhere); a config timed more than
    once at a shape counts with its mean time. Records: kernel, shape, config (its name), cfg, ms. Each ranked
    entry: config, cfg, score, and TFLOP/s per shape (``flops(shape)`` per call) keyed ``"MxNxK"``."""
    records = list(records)
    out: dict[str, list[Record]] = {}
    for kernel in sorted({r["kernel"] for r in records}):
        mine = [r for r in records if r["kernel"] == kernel and r["ms"]]
        best = {tuple(s): min((r["ms"] for r in mine if r["shape"] == list(s)), default=None) for s in shapes}
        ranked = []
        for name in sorted({r["config"] for r in mine}):
            times: dict[tuple, list[float]] = {}
            for r in mine:
                if r["config"] == name:
                    times.setdefault(tuple(r["shape"]), []).append(r["ms"])
            ms = {s: sum(v) / len(v) for s, v in times.items()}
            if all(best[tuple(s)] and tuple(s) in ms for s in shapes):
                rel = [best[tuple(s)] / ms[tuple(s)] for s in shapes]
                cfg = next(r["cfg"] for r in mine if r["config"] == name)
                ranked.append(dict(config=name, cfg=cfg, score=math.prod(rel) ** (1 / len(rel)),
                                   tflops={"x".join(map(str, s)): round(flops(s) / ms[tuple(s)] / 1e9, 1)
                                           for s in shapes}))
        out[kernel] = sorted(ranked, key=lambda x: -x["score"])
    return out
