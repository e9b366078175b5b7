"""Races made to show: one launch run ``runs`` times, each a build of its own with pseudo-random sleeps at its
synchronisation points (before each, and after each mbarrier arrive) (``workbench.compile.delays``, seed i + 1 for
run i), on the judge's fresh inputs (one draw for all the runs, as for a search's candidates) in an isolated worker
and judged against the reference: the search's pipeline (``search(..., delays=...)``) over seeds instead of configs.
A race the plain runs never show (a slot released before it is read) shows in the runs whose delays open its window.

What the runs showed: ``workbench.search.stress_summary`` (``info["stress"]`` and a note of the result).
"""

from __future__ import annotations

from typing import Any

from workbench.errors import ArgumentError

__all__ = ["stress"]


def stress(kernel: Any, *args: Any, grid: Any, reference: Any, runs: int = 50, max_ns: int = 2000,
           share: float = 0.5, **kw: Any) -> Any:
    """Run the launch ``kernel[grid](*args)`` ``runs`` times as delayed builds, each judged against
    ``reference(*args)``; returns the SearchResult (one row per run, its ``seed`` and ``delayed`` sites), its
    ``info["stress"]`` the summary. Without a GPU in the cluster the builds compile and nothing runs (a note
    says so). Other keywords go to ``workbench.search`` (atol, rtol, outputs, timeout_s, cluster, progress...)."""
    from workbench.search import search

    if runs < 1:
        raise ArgumentError(f"runs={runs}: give at least 1")
    if reference is None:
        raise ArgumentError("a stress run judges every run against a reference",
                            hint="give reference=lambda *args: expected (in a cell: --check)")
    return search(kernel, [{}] * runs, *args, grid=grid, reference=reference, delays=(max_ns, share), **kw)
