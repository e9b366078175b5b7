"""Per-role statistics of a timeline: busy / waiting, activity shares, overlap, bubbles, iterations, phases, skew.

Definitions (per lane = one CTA x one role, using the role's first recorded warp):

- span: the role's ``task`` scope (else first event start to last event end);
- waiting: time inside barrier waits (``wait`` scopes: blocked on another role); busy = span - waiting;
- activity shares: union of each category's scopes (tma issue, mma issue+wait, epilogue stores) over
  the span; ``untracked`` = span not covered by any scope (address math, loop overhead, conversions);
- bubbles: barrier waits longer than ``blocking_cycles`` (they really stalled);
- iterations: from one main-loop barrier wait's start to the next (the role's most frequent barrier);
- phases: prologue = span start -> first wait, steady = first wait -> last wait/tma/mma end,
  epilogue = the rest;
- overlap[a][b]: the fraction of a's busy time during which b is busy too (same CTA);
- CTA start skew: spread of the CTAs' ``%globaltimer`` starts in the first wave (one CTA per SM).

Cycles become ns with the trace's measured clock (``Trace.clock_mhz``).
"""

from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from workbench.measure.timeline.trace import CATEGORIES, Event, Trace

Interval = tuple[int, int]


def _union(iv: list[Interval]) -> list[Interval]:
    out: list[Interval] = []
    for s, e in sorted(iv):
        if e <= s:
            continue
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out


def _length(iv: list[Interval]) -> int:
    return sum(e - s for s, e in iv)


def _intersect(a: list[Interval], b: list[Interval]) -> list[Interval]:
    i = j = 0
    out: list[Interval] = []
    while i < len(a) and j < len(b):
        s, e = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if s < e:
            out.append((s, e))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def _subtract(span: Interval, holes: list[Interval]) -> list[Interval]:
    out: list[Interval] = []
    cur = span[0]
    for s, e in _union(holes):
        if e <= span[0] or s >= span[1]:
            continue
        if s > cur:
            out.append((cur, s))
        cur = max(cur, e)
    if cur < span[1]:
        out.append((cur, span[1]))
    return out


def quantile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    a = sorted(values)
    p = q * (len(a) - 1)
    lo, hi = math.floor(p), math.ceil(p)
    return a[lo] + (a[hi] - a[lo]) * (p - lo)


@dataclass
class Lane:
    cta: int
    role: str
    warp: int
    events: list[Event]
    span: Interval
    busy: list[Interval]  #: span minus barrier waits, absolute cycles (CTA-relative)

    @staticmethod
    def of(cta: int, role: str, events: list[Event]) -> Lane:
        task = [e for e in events if e.activity == "task"]
        if task:
            span = (min(e.start for e in task), max(e.end for e in task))
        else:
            span = (min(e.start for e in events), max(e.end for e in events))
        waits = [(e.start, e.end) for e in events if e.category == "waiting" and e.activity != "mma_wait"]
        return Lane(cta, role, events[0].warp, events, span, _subtract(span, waits))


@dataclass
class RoleStats:
    role: str
    warps: list[int]
    ctas: int
    kind: str  #: "producer" (TMA, no MMA), "consumer" (MMA), or "other"
    span_ns: float | None
    busy_fraction: float | None
    waiting_fraction: float | None
    shares: dict[str, float]  #: category -> fraction of the span (plus "untracked")
    waits: dict[str, Any]  #: per barrier: count, total/mean ns
    bubbles: dict[str, Any]
    iterations: dict[str, Any]
    phases_ns: dict[str, float | None]
    events_per_cta: float
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items()}


def _role_kind(events: list[Event]) -> str:
    acts = {e.activity for e in events}
    if "mma" in acts or "mma_wait" in acts:
        return "consumer"
    if "tma_load" in acts:
        return "producer"
    return "other"


def role_stats(trace: Trace, blocking_cycles: int | None = None) -> list[RoleStats]:
    lanes = trace.lanes()
    by_role: dict[str, list[Lane]] = defaultdict(list)
    for (cta, role), evs in lanes.items():
        by_role[role].append(Lane.of(cta, role, evs))
    warps = trace.role_warps()
    ns = trace.ns
    out: list[RoleStats] = []
    for role in trace.roles():
        ls = by_role.get(role, [])
        if not ls:
            continue
        all_ev = [e for ln in ls for e in ln.events]
        span_tot = sum(ln.span[1] - ln.span[0] for ln in ls)
        wait_ev = [e for e in all_ev if e.activity == "wait" or (e.category == "waiting" and e.activity != "mma_wait")]
        wait_ids = {id(e) for e in wait_ev}
        wait_tot = sum(_length(_union([(e.start, e.end) for e in ln.events if id(e) in wait_ids])) for ln in ls)
        shares: dict[str, float] = {}
        covered_tot = 0
        for cat in CATEGORIES:
            tot = 0
            for ln in ls:
                iv = [(e.start, e.end) for e in ln.events if e.category == cat and e.activity != "task"]
                tot += _length(_intersect(_union(iv), [ln.span]))
            if tot:
                shares[cat] = tot / span_tot if span_tot else 0.0
        for ln in ls:
            iv = [(e.start, e.end) for e in ln.events if e.activity != "task"]
            covered_tot += _length(_intersect(_union(iv), [ln.span]))
        shares["untracked"] = (span_tot - covered_tot) / span_tot if span_tot else 0.0
        # barrier waits, by barrier
        waits: dict[str, Any] = {}
        for det, evs in _group(wait_ev, lambda e: e.detail or e.activity).items():
            d = [e.dur for e in evs]
            waits[det] = {
                "count": len(d),
                "total_ns": ns(sum(d)),
                "mean_ns": ns(sum(d) / len(d)),
                "p95_ns": ns(quantile(d, 0.95) or 0),
            }
        thr = blocking_cycles
        if thr is None:
            shortest = min((e.dur for e in wait_ev), default=0)
            thr = max(64, 2 * shortest)
        blocking = [e for e in wait_ev if e.dur > thr]
        bubbles = {
            "threshold_ns": ns(thr),
            "count": len(blocking),
            "per_cta": len(blocking) / len(ls),
            "total_ns": ns(sum(e.dur for e in blocking)),
            "fraction_of_span": sum(e.dur for e in blocking) / span_tot if span_tot else None,
        }
        # iterations of the main loop: between successive waits on the role's most used barrier
        iters: list[int] = []
        main = Counter(e.detail or "" for e in wait_ev).most_common(1)
        phases: dict[str, list[int]] = {"prologue": [], "steady": [], "epilogue": []}
        for ln in ls:
            key = main[0][0] if main else ""
            ws = sorted(e.start for e in ln.events if id(e) in wait_ids and (e.detail or "") == key)
            iters.extend(b - a for a, b in zip(ws, ws[1:], strict=False))
            loop_ev = [e for e in ln.events if e.category in ("waiting", "tma", "mma") and e.activity != "task"]
            if ws and loop_ev:
                steady_end = max(e.end for e in loop_ev)
                phases["prologue"].append(ws[0] - ln.span[0])
                phases["steady"].append(steady_end - ws[0])
                phases["epilogue"].append(max(0, ln.span[1] - steady_end))
        iterations = {
            "barrier": main[0][0] if main else None,
            "count": len(iters),
            "per_cta": len(iters) / len(ls) if ls else 0,
            "p50_ns": ns(quantile(iters, 0.5)) if iters else None,
            "p95_ns": ns(quantile(iters, 0.95)) if iters else None,
            "max_ns": ns(max(iters)) if iters else None,
        }
        phases_ns = {k: (ns(sum(v) / len(v)) if v else None) for k, v in phases.items()}
        out.append(
            RoleStats(
                role=role,
                warps=warps.get(role, []),
                ctas=len(ls),
                kind=_role_kind(all_ev),
                span_ns=ns(span_tot / len(ls)),
                busy_fraction=(1 - wait_tot / span_tot) if span_tot else None,
                waiting_fraction=(wait_tot / span_tot) if span_tot else None,
                shares=shares,
                waits=waits,
                bubbles=bubbles,
                iterations=iterations,
                phases_ns=phases_ns,
                events_per_cta=len(all_ev) / len(ls),
            )
        )
    return out


def _group(items: list[Event], key: Any) -> dict[str, list[Event]]:
    g: dict[str, list[Event]] = defaultdict(list)
    for x in items:
        g[key(x)].append(x)
    return dict(g)


def overlap(trace: Trace) -> dict[str, dict[str, float | None]]:
    """overlap[a][b]: fraction of role a's busy time (summed over CTAs) during which b is busy too."""
    lanes = {k: Lane.of(k[0], k[1], v) for k, v in trace.lanes().items()}
    roles = trace.roles()
    out: dict[str, dict[str, float | None]] = {}
    for a in roles:
        row: dict[str, float | None] = {}
        for b in roles:
            if a == b:
                continue
            num = den = 0
            for cta in trace.ctas:
                la, lb = lanes.get((cta, a)), lanes.get((cta, b))
                if la is None or lb is None:
                    continue
                den += _length(la.busy)
                num += _length(_intersect(la.busy, lb.busy))
            row[b] = num / den if den else None
        out[a] = row
    return out


def start_skew(trace: Trace) -> dict[str, Any]:
    """CTA start times (globaltimer): first-wave spread and the kernel's span, in ns."""
    starts = sorted(trace.cta_start_ns.values())
    if not starts:
        return {}
    n_sm = len(set(trace.cta_core.values())) or len(starts)
    sampled = trace.total_ctas is not None and trace.total_ctas > len(starts)
    wave = starts[: min(n_sm, len(starts))] if not sampled else starts
    ends = []
    for (cta, _role), evs in trace.lanes().items():
        ends.append(trace.cta_start_ns[cta] + trace.ns(max(e.end for e in evs)))
    rel = [s - wave[0] for s in wave]
    return {
        "ctas": len(starts),
        "sms": n_sm,
        "sampled": sampled,
        "first_wave_spread_ns": (wave[-1] - wave[0]) if len(wave) > 1 else 0.0,
        "first_wave_p50_ns": quantile(rel, 0.5),
        "first_wave_p95_ns": quantile(rel, 0.95),
        "kernel_span_ns": (max(ends) - starts[0]) if ends else None,
        "note": "CTA starts are Proton's per-CTA %globaltimer stamps (real ns, not cycles)",
    }


# -- dropped events ----------------------------------------------------------------------------------

_DROP = re.compile(
    r"Warning \(cta(?P<cta>\d+), warp(?P<warp>\d+)\): first (?P<n>\d+) events are dropped due to "
    r"insufficient buffer size \((?P<max>\d+)/(?P<count>\d+)\)"
)


def dropped_events(
    trace: Trace | None,
    stderr_lines: list[str] | None = None,
    capacity_events_per_warp: int | None = None,
) -> dict[str, Any]:
    """Detect overflowed profile buffers: libproton's warnings, lost task scopes, short counts."""
    found: list[dict[str, int]] = []
    for ln in stderr_lines or []:
        m = _DROP.search(ln)
        if m:
            found.append({k: int(v) for k, v in m.groupdict().items()})
    lost_task: list[tuple[int, int]] = []
    short: list[tuple[int, int, str, int, int]] = []
    full: list[tuple[int, int]] = []
    if trace is not None:
        per_warp: dict[tuple[int, int], list[Event]] = defaultdict(list)
        for e in trace.events:
            per_warp[(e.cta, e.warp)].append(e)
        has_task_scopes = any(e.activity == "task" for e in trace.events)
        for (cta, warp), evs in per_warp.items():
            if has_task_scopes and not any(e.activity == "task" for e in evs):
                lost_task.append((cta, warp))
            if capacity_events_per_warp and len(evs) >= capacity_events_per_warp:
                full.append((cta, warp))
        counts = trace.scope_counts()
        by_role_name: dict[tuple[str, str], list[tuple[int, int, int]]] = defaultdict(list)
        roles = {(e.cta, e.warp): e.role for e in trace.events}
        for (cta, warp, name), n in counts.items():
            by_role_name[(roles[(cta, warp)], name)].append((cta, warp, n))
        for (_role, name), rows in by_role_name.items():
            mode = Counter(n for _, _, n in rows).most_common(1)[0][0]
            for cta, warp, n in rows:
                if n < mode:
                    short.append((cta, warp, name, n, mode))
    n_drop = sum(f["n"] for f in found)
    detected = bool(found or lost_task)  # a warp at capacity alone may just have fit exactly
    advice = None
    if detected:
        need = max([f["count"] for f in found] + [capacity_events_per_warp or 0])
        advice = (
            "the per-CTA profile buffer overflowed and Proton kept only the last events of each warp: "
            "give a larger buffer (ModeSpec(buffer_size=...) bytes per CTA; each event takes 16 bytes per "
            f"recorded warp{f', at least {need} records per warp' if need else ''}), record fewer warps "
            "(ModeSpec(sampled_warps=(0, 4, 8, ...)): one warp per warpgroup), or time a smaller problem "
            "(fewer K iterations per CTA)"
        )
    return {
        "detected": detected,
        "dropped_events": n_drop,
        "warps_reporting_drops": len(found),
        "warps_missing_task_scope": len(lost_task),
        "warps_at_capacity": len(full),
        "short_scope_counts": len(short),
        "examples": [f"cta{c} warp{w}: {name} x{n}, others x{m}" for c, w, name, n, m in short[:5]]
        + [f"cta{f['cta']} warp{f['warp']}: first {f['n']} events dropped" for f in found[:5]],
        "advice": advice,
        "note": (
            None
            if not short or detected
            else "some warps recorded fewer scopes than the others of their role (ragged tiles, or early exit)"
        ),
    }
