"""Interleaved timing rounds, shared by the search's GPU judge, the GEMM and attention benches and any comparison.

An H100/H200's clock drifts during a run as it heats (by up to 18% within one of our runs), so a ratio of two
timings taken a minute apart says as much about the clock as about the kernels. Here every item is timed once
per round, in an order rotated from round to round; a ratio is the median of the per-round ratios.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

from workbench.measure.timing import time_call


def rounds(runs: dict[str, Any], n: int, time_one: Callable[[Any], float],
           on_round: Callable[[int], None] | None = None) -> dict[str, list[float]]:
    """Each item's times over ``n`` rounds; ``time_one(run)`` times one item, ``on_round(r)`` reports progress."""
    names = list(runs)
    times: dict[str, list[float]] = {k: [] for k in names}
    for r in range(n):
        if on_round is not None:
            on_round(r)
        for k in names[r % len(names):] + names[:r % len(names)]:
            times[k].append(time_one(runs[k]))
    return times


def ratio(base: list[float], ours: list[float]) -> float:
    """``base / ours`` per round, the median over rounds."""
    return statistics.median(b / o for b, o in zip(base, ours, strict=True))


def timed_rounds(runs: dict[str, Callable[[], Any]], n: int, rep_ms: float, timing: str = "calls",
                 on_round: Callable[[int], None] | None = None) -> dict[str, list[float]]:
    """Each call's milliseconds (``timing.time_call``: "calls" as a user's loop, "flush" the kernel) in ``n``
    interleaved rounds of about ``rep_ms`` each."""
    return rounds(runs, n, lambda fn: time_call(fn, rep_ms, timing), on_round)
