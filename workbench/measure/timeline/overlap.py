"""How the roles overlap in time (same CTA): busy vs busy, loads vs compute, epilogues vs the rest; CTA skew.

- ``overlap[a][b]``: the fraction of role a's busy time (not waiting) during which role b is busy too;
- ``producer_consumer[p][c]``: for a producer p and a consumer c, the fraction of p's busy time
  during which c computes (inside ``mma`` or ``mma_wait``): loads hidden under compute;
- ``epilogue_overlap[r][o]``: for a role r with an epilogue (``epilogue`` / ``store`` / ``store_wait``
  scopes), the fraction of r's epilogue time during which role o is busy (``busy``) and computes
  (``mma``): a ping-pong kernel's other consumer should compute while this one stores;
- CTA start skew: spread of the CTAs' ``%globaltimer`` starts in the first wave (one CTA per SM).
"""

from __future__ import annotations

from typing import Any

from workbench.measure.timeline.stats import Lane, intersect, lanes_of, length, quantile
from workbench.measure.timeline.trace import Trace

_COMPUTE = ("mma", "mma_wait")
_EPILOGUE = ("epilogue", "store_wait")


def _ratio(num: int, den: int) -> float | None:
    return num / den if den else None


def overlap(trace: Trace) -> dict[str, dict[str, float | None]]:
    lanes = lanes_of(trace)
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
                if la is not None and lb is not None:
                    den += length(la.busy)
                    num += length(intersect(la.busy, lb.busy))
            row[b] = _ratio(num, den)
        out[a] = row
    return out


def _kinds(lanes: dict[tuple[int, str], Lane]) -> dict[str, set[str]]:
    acts: dict[str, set[str]] = {}
    for (_c, role), ln in lanes.items():
        acts.setdefault(role, set()).update(e.activity for e in ln.events)
    return acts


def producer_consumer(trace: Trace) -> dict[str, dict[str, float | None]]:
    lanes = lanes_of(trace)
    acts = _kinds(lanes)
    producers = [r for r, a in acts.items() if a & {"tma_load", "load"} and not a & {"mma", "mma_wait"}]
    consumers = [r for r, a in acts.items() if a & {"mma", "mma_wait"}]
    out: dict[str, dict[str, float | None]] = {}
    for p in producers:
        row: dict[str, float | None] = {}
        for c in consumers:
            num = den = 0
            for cta in trace.ctas:
                lp, lc = lanes.get((cta, p)), lanes.get((cta, c))
                if lp is not None and lc is not None:
                    den += length(lp.busy)
                    num += length(intersect(lp.busy, lc.category(*_COMPUTE)))
            row[c] = _ratio(num, den)
        out[p] = row
    return out


def epilogue_overlap(trace: Trace) -> dict[str, dict[str, dict[str, float | None]]]:
    lanes = lanes_of(trace)
    roles = trace.roles()
    out: dict[str, dict[str, dict[str, float | None]]] = {}
    for r in roles:
        row: dict[str, dict[str, float | None]] = {}
        for o in roles:
            if o == r:
                continue
            den = busy = mma = 0
            for cta in trace.ctas:
                lr, lo = lanes.get((cta, r)), lanes.get((cta, o))
                if lr is None or lo is None:
                    continue
                epi = lr.category(*_EPILOGUE)
                den += length(epi)
                busy += length(intersect(epi, lo.busy))
                mma += length(intersect(epi, lo.category(*_COMPUTE)))
            if den:
                row[o] = {"busy": busy / den, "mma": mma / den}
        if row:
            out[r] = row
    return out


def start_skew(trace: Trace) -> dict[str, Any]:
    """CTA start times (globaltimer): first-wave spread and the kernel's span, in ns."""
    starts = sorted(trace.cta_start_ns.values())
    if not starts:
        return {}
    n_sm = len(set(trace.cta_core.values())) or len(starts)
    sampled = trace.total_ctas is not None and trace.total_ctas > len(starts)
    wave = starts if sampled else starts[: min(n_sm, len(starts))]
    ends = [trace.cta_start_ns[cta] + trace.ns(max(e.end for e in evs)) for (cta, _r), evs in trace.lanes().items()]
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
