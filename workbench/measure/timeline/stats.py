"""Per-role statistics of a timeline: busy / waiting per barrier set / issuing, shares, bubbles, iterations, phases.

Definitions (per lane = one CTA x one role, using the role's first recorded warp; its other recorded
warps are folded into it, they run the same code):

- span: the role's ``task`` scope (else first event start to last event end);
- waiting: inside barrier waits (``wait:<set>`` scopes: blocked on another role), per barrier set;
  ``mma_wait`` (waiting for the tensor cores) and ``store_wait`` (for TMA stores to drain) apart;
- busy = span minus every wait; issuing = TMA issue + MMA issue + epilogue stores;
- shares: each category's union of scopes over the span; ``untracked`` = span covered by no scope
  (address math, softmax, conversions, loop overhead);
- bubbles: barrier waits longer than ``blocking_cycles`` (they really stalled);
- iterations: from one wait on the role's most used barrier set to the next;
- phases: prologue = span start -> first such wait, steady = -> last wait/TMA/MMA end, epilogue = rest.

Cycles become ns with the trace's measured clock (``Trace.clock_mhz``).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from workbench.measure import timing
from workbench.measure.timeline.trace import CATEGORIES, ISSUING, WAITING, Event, Trace

Interval = tuple[int, int]


def union(iv: list[Interval]) -> list[Interval]:
    out: list[Interval] = []
    for s, e in sorted(iv):
        if e <= s:
            continue
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out


def length(iv: list[Interval]) -> int:
    return sum(e - s for s, e in iv)


def intersect(a: list[Interval], b: list[Interval]) -> list[Interval]:
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


def subtract(span: Interval, holes: list[Interval]) -> list[Interval]:
    out: list[Interval] = []
    cur = span[0]
    for s, e in union(holes):
        if e <= span[0] or s >= span[1]:
            continue
        if s > cur:
            out.append((cur, s))
        cur = max(cur, e)
    if cur < span[1]:
        out.append((cur, span[1]))
    return out


def quantile(values: list[float], q: float) -> float | None:
    """The timing layer's quantile, None (JSON null) rather than NaN for no values."""
    return timing.quantile(values, q) if values else None


@dataclass
class Lane:
    cta: int
    role: str
    warp: int
    events: list[Event]
    span: Interval
    busy: list[Interval]  #: span minus every wait, absolute cycles (CTA-relative)

    @staticmethod
    def of(cta: int, role: str, events: list[Event]) -> Lane:
        task = [e for e in events if e.activity == "task"]
        src = task or events
        span = (min(e.start for e in src), max(e.end for e in src))
        waits = [(e.start, e.end) for e in events if e.category in WAITING]
        return Lane(cta, role, events[0].warp, events, span, subtract(span, waits))

    def category(self, *cats: str) -> list[Interval]:
        """Union of this lane's scopes in ``cats``, clipped to the span (computed once per ``cats``)."""
        memo = self.__dict__.setdefault("_memo", {})
        if cats not in memo:
            iv = [(e.start, e.end) for e in self.events if e.category in cats and e.activity != "task"]
            memo[cats] = intersect(union(iv), [self.span])
        return memo[cats]


def lanes_of(trace: Trace) -> dict[tuple[int, str], Lane]:
    """(CTA, role) -> Lane (computed once per trace)."""
    lanes = trace.lanes()
    if "lane_objs" not in trace.cache:
        trace.cache["lane_objs"] = {k: Lane.of(k[0], k[1], v) for k, v in lanes.items()}
    return trace.cache["lane_objs"]


@dataclass
class RoleStats:
    role: str
    warps: list[int]
    ctas: int
    kind: str  #: "producer" (TMA, no MMA), "consumer" (MMA), "epilogue", or "other"
    span_ns: float | None
    busy_fraction: float | None
    waiting_fraction: float | None  #: barrier waits only
    issuing_fraction: float | None
    shares: dict[str, float]  #: category -> fraction of the span (plus "untracked")
    waits: dict[str, Any]  #: per barrier set: count, per_cta, total_ns (per CTA), mean_ns, p95_ns, fraction
    bubbles: dict[str, Any]
    iterations: dict[str, Any]
    phases_ns: dict[str, float | None]
    events_per_cta: float
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _role_kind(events: list[Event]) -> str:
    acts = {e.activity for e in events}
    if "mma" in acts or "mma_wait" in acts:
        return "consumer"
    if "tma_load" in acts or "load" in acts:
        return "producer"
    if acts & {"epilogue", "store", "store_wait"}:
        return "epilogue"
    return "other"


def _shares(ls: list[Lane], span_tot: int) -> dict[str, float]:
    shares: dict[str, float] = {}
    for cat in CATEGORIES:
        tot = sum(length(ln.category(cat)) for ln in ls)
        if tot:
            shares[cat] = tot / span_tot
    covered = sum(length(ln.category(*CATEGORIES)) for ln in ls)
    shares["untracked"] = (span_tot - covered) / span_tot
    return shares


def _waits(barrier: list[Event], n_lanes: int, span_tot: int, ns: Any) -> dict[str, Any]:
    by: dict[str, list[int]] = defaultdict(list)
    for e in barrier:
        by[e.detail or "barrier"].append(e.dur)
    return {
        name: {
            "count": len(d),
            "per_cta": len(d) / n_lanes,
            "total_ns": ns(sum(d) / n_lanes),
            "mean_ns": ns(sum(d) / len(d)),
            "p95_ns": ns(quantile(d, 0.95) or 0),
            "fraction": sum(d) / span_tot,
        }
        for name, d in sorted(by.items(), key=lambda kv: -sum(kv[1]))
    }


def _iterations(ls: list[Lane], barrier: list[Event], ns: Any) -> tuple[dict[str, Any], dict[str, float | None]]:
    main = Counter(e.detail or "" for e in barrier).most_common(1)
    key = main[0][0] if main else None
    iters: list[int] = []
    phases: dict[str, list[int]] = {"prologue": [], "steady": [], "epilogue": []}
    for ln in ls:
        ws = sorted(e.start for e in ln.events if e.category == "waiting" and (e.detail or "") == key)
        iters.extend(b - a for a, b in zip(ws, ws[1:], strict=False))
        loop = [e for e in ln.events if e.category in ("waiting", "tma", "mma", "mma_wait")]
        if ws and loop:
            end = max(e.end for e in loop)
            phases["prologue"].append(ws[0] - ln.span[0])
            phases["steady"].append(end - ws[0])
            phases["epilogue"].append(max(0, ln.span[1] - end))
    it = {
        "barrier": key,
        "count": len(iters),
        "per_cta": len(iters) / len(ls) if ls else 0,
        "p50_ns": ns(quantile(iters, 0.5)) if iters else None,
        "p95_ns": ns(quantile(iters, 0.95)) if iters else None,
        "max_ns": ns(max(iters)) if iters else None,
    }
    return it, {k: (ns(sum(v) / len(v)) if v else None) for k, v in phases.items()}


def _bubbles(barrier: list[Event], n_lanes: int, span_tot: int, ns: Any, threshold: int | None) -> dict[str, Any]:
    thr = threshold if threshold is not None else max(64, 2 * min((e.dur for e in barrier), default=0))
    blocking = [e.dur for e in barrier if e.dur > thr]
    return {
        "threshold_ns": ns(thr),
        "count": len(blocking),
        "per_cta": len(blocking) / n_lanes,
        "total_ns": ns(sum(blocking) / n_lanes),
        "fraction_of_span": sum(blocking) / span_tot,
    }


def role_stats(trace: Trace, blocking_cycles: int | None = None) -> list[RoleStats]:
    by_role: dict[str, list[Lane]] = defaultdict(list)
    for (_cta, role), lane in lanes_of(trace).items():
        by_role[role].append(lane)
    warps = trace.role_warps()
    ns = trace.ns
    out: list[RoleStats] = []
    for role in trace.roles():
        ls = by_role.get(role, [])
        span_tot = sum(ln.span[1] - ln.span[0] for ln in ls)
        if not ls or span_tot <= 0:
            continue
        all_ev = [e for ln in ls for e in ln.events]
        barrier = [e for e in all_ev if e.category == "waiting"]
        shares = _shares(ls, span_tot)
        iterations, phases = _iterations(ls, barrier, ns)
        out.append(RoleStats(
            role=role,
            warps=warps.get(role, []),
            ctas=len(ls),
            kind=_role_kind(all_ev),
            span_ns=ns(span_tot / len(ls)),
            busy_fraction=sum(length(ln.busy) for ln in ls) / span_tot,
            waiting_fraction=shares.get("waiting", 0.0),
            issuing_fraction=sum(shares.get(c, 0.0) for c in ISSUING),
            shares=shares,
            waits=_waits(barrier, len(ls), span_tot, ns),
            bubbles=_bubbles(barrier, len(ls), span_tot, ns, blocking_cycles),
            iterations=iterations,
            phases_ns=phases,
            events_per_cta=len(all_ev) / len(ls),
        ))
    return out
