"""Dropped-event detection: Proton's per-warp buffers are circular, an overflow loses a warp's *first* events.

Three signs, any of which is reported: libproton's stderr warning per overflowing warp (``Warning
(ctaN, warpW): first K events are dropped due to insufficient buffer size (max/count)``), a recorded
warp without its ``task`` scope (its start record was overwritten; every role has one), and a warp
that recorded as many events as its buffer holds. Short scope counts against the other warps of a
role are noted separately (ragged tiles make them legitimate).
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from typing import Any

from workbench.measure.timeline.trace import Event, Trace

_DROP = re.compile(
    r"Warning \(cta(?P<cta>\d+), warp(?P<warp>\d+)\): first (?P<n>\d+) events are dropped due to "
    r"insufficient buffer size \((?P<max>\d+)/(?P<count>\d+)\)"
)


def is_overflow_warning(line: str) -> bool:
    """Whether ``line`` is libproton's warning that a warp's profile buffer overflowed."""
    return _DROP.search(line) is not None


#: the most a re-record asks for per recorded warp (scope instances; 16 bytes each: 1 MiB a warp, a few hundred MB
#: of global memory over every CTA of a persistent grid)
MAX_EVENTS_PER_WARP = 65536


def events_needed(stderr_lines: list[str]) -> int | None:
    """Scope instances the fullest recorded warp needed, from libproton's overflow warnings (which count start and
    end records apart: two per instance); None when nothing overflowed."""
    counts = [int(m["count"]) for m in (_DROP.search(ln) for ln in stderr_lines) if m]
    return (max(counts) + 1) // 2 if counts else None


def events_per_warp_for_rerecord(stderr_lines: list[str], had: int) -> int | None:
    """How many scope instances per warp a second recording should hold after the first overflowed: what the
    fullest warp needed plus a quarter (other CTAs may run longer), as a power of two (Proton's segments are);
    None when the first did not overflow or when even :data:`MAX_EVENTS_PER_WARP` would not be more than ``had``."""
    need = events_needed(stderr_lines)
    if need is None:
        return None
    want = min(1 << (need + need // 4 - 1).bit_length(), MAX_EVENTS_PER_WARP)
    return want if want > had else None


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
            "the per-warp profile buffer overflowed and Proton kept only the last events of each warp: "
            "give a larger buffer (record(..., events_per_warp=N): scope instances per recorded warp, 16 "
            f"bytes each{f'; at least {(need + 1) // 2} needed' if need else ''}), record fewer scopes "
            "(level='waits' or 'task'), or time a smaller problem (fewer tiles or K steps per CTA)"
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
