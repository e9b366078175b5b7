"""What the runs of a stress search showed (``workbench.search.stress``): ``summary`` says how many runs differ,
hung or faulted, the first failing seed (its row holds the first differing elements) and which delayed sites go
with the failures: for each site (kind@line), how often a run failed when it slept there and when it did not, the
most telling first; ``note`` says it in one line."""

from __future__ import annotations

from typing import Any

__all__ = ["note", "summary"]

FAILED = ("check-failed", "hang", "fault")


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
