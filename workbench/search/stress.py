"""Races made to show: one launch run ``runs`` times, each a build of its own with pseudo-random sleeps before its
synchronisation points (``workbench.compile.delays``, seed i + 1 for run i), on the judge's fresh inputs (one draw
for all the runs, as for a search's candidates) in an isolated worker and judged against the reference: the
search's pipeline (``search(..., delays=...)``) over seeds instead of configs. A race the plain runs never show (a
slot released before it is read) shows in the runs whose delays open its window.

``summary(result)`` says how many runs differ, hung or faulted, the first failing seed (its row holds the first
differing elements) and which delayed sites go with the failures: for each site (kind@line), how often a run failed
when it slept there and when it did not, the most telling first.
"""

from __future__ import annotations

from typing import Any

from workbench.errors import ArgumentError

__all__ = ["stress", "summary"]

FAILED = ("check-failed", "hang", "fault")


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


def summary(rows: dict[int, dict[str, Any]], cands: list[Any]) -> dict[str, Any]:
    """What the runs of a stress search showed (see the module's docstring)."""
    seed = {c.index: c.delay[0] for c in cands if c.delay is not None}
    ran = {i: r for i, r in rows.items() if r.get("status") in ("ok", *FAILED)}
    failed = sorted(i for i, r in ran.items() if r.get("status") in FAILED)
    sites: dict[str, list[int]] = {}  # site -> [runs delayed there, of them failed]
    for i, r in ran.items():
        for site in set(r.get("delayed") or []):
            counts = sites.setdefault(site, [0, 0])
            counts[0] += 1
            counts[1] += i in failed
    telling = []
    for site, (n, bad) in sites.items():
        rest_n, rest_bad = len(ran) - n, len(failed) - bad
        telling.append({"site": site, "delayed_runs": n, "failed_when_delayed": round(bad / n, 3) if n else None,
                        "failed_otherwise": round(rest_bad / rest_n, 3) if rest_n else None})
    telling.sort(key=lambda t: -((t["failed_when_delayed"] or 0) - (t["failed_otherwise"] or 0)))
    first = failed[0] if failed else None
    return {"runs": len(rows), "ran": len(ran), "differing": sum(rows[i].get("status") == "check-failed"
                                                                   for i in failed),
            "hangs": sum(rows[i].get("status") == "hang" for i in failed),
            "faults": sum(rows[i].get("status") == "fault" for i in failed),
            "first_failing_seed": seed.get(first) if first is not None else None,
            "first_error": rows[first].get("error") if first is not None else None,
            "telling": telling[:8] if failed else []}


def note(s: dict[str, Any]) -> str:
    """The summary in one line, for the result's notes."""
    if not s["ran"]:
        return (f"stress: {s['runs']} delayed builds compiled; nothing ran (no GPU in the cluster): a stress run "
                "needs one")
    head = (f"stress: {s['ran']} runs, {s['differing']} differ from the reference, {s['hangs']} hung, "
            f"{s['faults']} faulted")
    if s["first_failing_seed"] is None:
        return head + " (no run showed a race)"
    top = s["telling"][0] if s["telling"] else None
    why = (f"; most telling delay: {top['site']} (failed {top['failed_when_delayed']:.0%} of the runs delayed "
           f"there, {top['failed_otherwise'] or 0:.0%} otherwise)") if top else ""
    return head + f"; seed {s['first_failing_seed']} reproduces it{why}"
