"""What the checks found and what a timeline measured, put on the ``orchestration`` payload's graph.

* Findings (``workbench.check``) become ``marks`` on the ops and wait edges they are about: a wait that
  never completes (``wait-never-completes``, ``hang``, and the waits an ``expect-bytes`` or
  ``arrive-count`` mistake leaves blocked in the simulation) in red; a read too early (``read-before-write``,
  ``slot-reuse``, ``first-wait-passes``, ``phase-flip``: the read the finding names) in orange; any other
  finding at an op's line as ``other``.
* A timeline (``workbench.measure.timeline``) gives each role's waits per barrier set (``wait:<set>``
  scopes): each task is matched to its role by the TTGIR region the instrumentation put the role's
  scopes in, and each wait edge carries that role's mean / p95 wait, count and total on its barrier
  set; the slowest hand-off (the largest mean) is flagged.
* A live snapshot of a hung launch (``--snapshot``: the Report's last run's ``snapshot``) marks, in blue
  (``live``), the wait ops its warps were blocked in, per role and line (``workbench.run.snapshot.waiting``).
* A stress run (``--stress``: the search payload's ``info.stress``) marks, in purple (``delay``), the sites
  whose delay went with failing runs more often than the rest did (its ``telling`` sites, ``kind@line``).

:func:`decorate` is pure and idempotent: the Report applies it to the stored payload whenever it is
serialised, so findings and a timeline added after the payload was built are drawn too.
"""

from __future__ import annotations

import copy
from typing import Any

from workbench.check.context import READS
from workbench.ir.schema_types import Orchestration

__all__ = ["NEVER_COMPLETES", "READ_TOO_EARLY", "SITE_OPS", "decorate"]

NEVER_COMPLETES = {"wait-never-completes", "hang", "expect-bytes", "arrive-count"}
READ_TOO_EARLY = {"read-before-write", "slot-reuse", "first-wait-passes", "phase-flip"}
#: the orchestration ops of each kind of synchronisation site (``workbench.compile.delays.KINDS``)
SITE_OPS = {"wait": {"wait"}, "arrive": {"arrive", "warp_arrive", "expect"},
            "after-arrive": {"arrive", "warp_arrive", "expect"}, "tma": {"tma_load", "tma_store"},
            "dot-wait": {"mma_wait"}, "named-barrier": {"named_wait", "named_arrive"}}
TELLING = 3  # stress sites marked at most


def decorate(payload: Orchestration | None, findings: list[dict[str, Any]] | None,
             timeline: dict[str, Any] | None, snapshot: dict[str, Any] | None = None,
             stress: dict[str, Any] | None = None) -> Orchestration | None:
    """``payload`` with ``marks`` from ``findings``, a hung launch's live ``snapshot`` and a ``stress`` run's
    summary and, with an ok ``timeline``, each wait edge's ``measured``."""
    if not isinstance(payload, dict) or payload.get("status") != "ok":
        return payload
    out = copy.deepcopy(payload)
    out["marks"] = [m for i, f in enumerate(findings or []) if (m := _mark(out, i, f)) is not None]
    out["marks"] += _snapshot_marks(out, snapshot) + _stress_marks(out, stress)
    for e in out["edges"]:
        e.pop("measured", None)
        e.pop("slowest", None)
    out.pop("measured", None)
    if isinstance(timeline, dict) and timeline.get("status", "ok") == "ok" and timeline.get("roles"):
        _measure(out, timeline)
    return out


def _mark(p: dict[str, Any], index: int, f: dict[str, Any]) -> dict[str, Any] | None:
    rule, line = f.get("rule"), f.get("line")
    at = [o for o in p["ops"] if line is not None and o["line"] == line]
    color = "red" if rule in NEVER_COMPLETES else "orange" if rule in READ_TOO_EARLY else "other"
    ops = {o["id"] for o in at}
    if color == "red" and rule in ("expect-bytes", "arrive-count"):
        sets = {o["barrier"] for o in at if o["barrier"] is not None}
        ops |= {b["op"] for b in p["blocked"] if b["barrier"] in sets}
    if color == "orange":
        related = {r.get("line") for r in f.get("related") or []}
        ops |= {o["id"] for o in p["ops"] if o["line"] in related and o["kind"] in READS}
    if not ops:
        return None
    edges = [e["id"] for e in p["edges"] if e["op"] in ops]
    return {"source": "finding", "finding": index, "rule": rule, "severity": f.get("severity", "info"),
            "color": color, "line": line, "message": f.get("message", ""), "ops": sorted(ops), "edges": edges}


def _site_ops(p: dict[str, Any], kind: str, line: int | None, task: int | None = None) -> list[int]:
    """The ops of a synchronisation site: its kind's ops at its line (of its task when that is known and has one)."""
    at = [o for o in p["ops"] if line is not None and o["line"] == line and o["kind"] in SITE_OPS.get(kind, ())]
    mine = [o for o in at if o["task"] == task]
    return sorted(o["id"] for o in (mine or at))


def _snapshot_marks(p: dict[str, Any], snapshot: dict[str, Any] | None) -> list[dict[str, Any]]:
    if not isinstance(snapshot, dict):
        return []
    when = snapshot.get("when_s")
    at = f", {when:.3g} s into the run" if isinstance(when, (int, float)) else ""
    marks = []
    for w in snapshot.get("waits") or []:
        ops = _site_ops(p, w.get("kind", "wait"), w.get("line"), w.get("task"))
        if not ops:
            continue
        what = (f"named barrier {w['barrier']} ({w['phase']} threads)" if w.get("kind") == "named-barrier"
                else f"phase {w['phase']} of the mbarrier at {w['barrier']:#x}")
        warps = ", ".join(map(str, w.get("warps") or []))
        marks.append({"source": "snapshot", "finding": None, "rule": "waiting", "severity": "error", "color": "live",
                      "line": w.get("line"), "ops": ops, "edges": [e["id"] for e in p["edges"] if e["op"] in ops],
                      "message": f"{w['role']}: warps {warps} of {w.get('ctas')} CTA(s) waited here for {what} "
                                 f"(live snapshot{at})"})
    return marks


def _stress_marks(p: dict[str, Any], stress: dict[str, Any] | None) -> list[dict[str, Any]]:
    if not isinstance(stress, dict):
        return []
    marks = []
    for t in stress.get("telling") or []:
        when, otherwise = t.get("failed_when_delayed") or 0, t.get("failed_otherwise") or 0
        kind, _, line = str(t.get("site", "")).partition("@")
        if when <= otherwise or not line.isdigit():
            continue
        ops = _site_ops(p, kind, int(line))
        if ops:
            marks.append({"source": "stress", "finding": None, "rule": "telling-delay", "severity": "warning",
                          "color": "delay", "line": int(line), "ops": ops,
                          "edges": [e["id"] for e in p["edges"] if e["op"] in ops],
                          "message": f"a delay before this {kind} went with failing runs: {when:.0%} of the "
                                     f"{t.get('delayed_runs')} runs delayed here failed, {otherwise:.0%} of the "
                                     f"others (--stress)"})
        if len(marks) == TELLING:
            break
    return marks


def _measure(p: dict[str, Any], timeline: dict[str, Any]) -> None:
    regions = {r.get("region"): r.get("role") for r in (timeline.get("instrumentation") or {}).get("roles") or []}
    stats = {r.get("role"): r for r in timeline.get("roles") or []}
    names = {b["id"]: b["name"] for b in p["barriers"]}
    for t in p["tasks"]:
        t["role"] = regions.get(t["region"])
    role_of = {t["index"]: t["role"] for t in p["tasks"]}
    waits = [e for e in p["edges"] if e["kind"] == "wait"]
    per_set: dict[tuple[int, int], int] = {}
    for e in waits:
        key = (p["ops"][e["op"]]["task"], e["barrier"])
        per_set[key] = per_set.get(key, 0) + 1
    for e in waits:
        task = p["ops"][e["op"]]["task"]
        role = role_of.get(task)
        w = ((stats.get(role) or {}).get("waits") or {}).get(names.get(e["barrier"]))
        if not isinstance(w, dict) or not w.get("count"):
            continue
        e["measured"] = {"role": role, "count": w.get("count"), "mean_ns": w.get("mean_ns"), "p95_ns": w.get("p95_ns"),
                         "total_ns": w.get("total_ns"), "fraction": w.get("fraction"), "per_cta": w.get("per_cta"),
                         "shared": per_set[(task, e["barrier"])]}
    timed = [e for e in waits if e.get("measured") and isinstance(e["measured"].get("mean_ns"), (int, float))]
    if timed:
        max(timed, key=lambda e: e["measured"]["mean_ns"])["slowest"] = True
    p["measured"] = {"measured_by": timeline.get("measured_by"), "device": timeline.get("device"),
                     "when": timeline.get("when"), "ctas_recorded": timeline.get("ctas_recorded"),
                     "level": (timeline.get("instrumentation") or {}).get("level")}
