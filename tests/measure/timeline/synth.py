"""SYNTHETIC Proton chrome traces (not recorded on a GPU), in the exact form libproton 3.6 writes.

Mirrors ``StreamChromeTraceWriter::writeKernel``: one ``"ph": "X"`` event per scope instance, ``pid``
``"<kernel> Core<sm> CTA<id>"``, ``tid`` ``"warp <w> (line <l>)"`` (nested scopes on a new line),
``ts = float32(cycle + (init_time - min_init_time) - cta_min_cycle) / 1000``, ``dur = float32(end -
start) / 1000``, ``args`` with ``Finalization Time (ns)``, ``Frequency (MHz)`` and ``call_stack``.

The modelled kernel is the TLX ws_gemm timeline build, warps 0, 4, 8 sampled: a producer (role
``default``: per k-step ``wait:empty`` then three ``tma_load``) and two consumers (``task1_0``,
``task1_1``: ``wait:full``, ``mma``, ``mma_wait`` per k-step, then ``tma_store`` and ``store_wait``).
"""

from __future__ import annotations

import random
import struct
from typing import Any

KERNEL = "ws_gemm_kernel"


def f32(x: float) -> float:
    return struct.unpack("f", struct.pack("f", float(x)))[0]


def _cta_events(num_k: int, rng: random.Random) -> dict[int, list[tuple[str, int, int]]]:
    """warp -> [(scope name, start cycle, end cycle)] for one CTA (cycles from an arbitrary clock base)."""
    base = 10_000_000 + rng.randrange(0, 1000)
    prod: list[tuple[str, int, int]] = []
    t = base + 200
    ready = []  # cycle at which slot k's data landed
    t_task0 = t
    stage_free = [t] * 3
    for k in range(num_k):
        slot = k % 3
        w0 = t
        t = max(t + 40, stage_free[slot])
        prod.append(("default/wait:empty", w0, t))
        for _ in range(3):
            prod.append(("default/tma_load", t, t + 30))
            t += 35
        ready.append(t + 900)
        t += 10
    cons: dict[int, list[tuple[str, int, int]]] = {4: [], 8: []}
    ends = {}
    for w, role in ((4, "task1_0"), (8, "task1_1")):
        ev = cons[w]
        c = base + 150 + (w // 4) * 5
        c0 = c
        for k in range(num_k):
            w0 = c
            c = max(c + 45, ready[k])
            ev.append((f"{role}/wait:full", w0, c))
            ev.append((f"{role}/mma", c, c + 60))
            ev.append((f"{role}/mma_wait", c + 60, c + 60 + 700 + rng.randrange(0, 50)))
            c = ev[-1][2] + 20
            stage_free[k % 3] = max(stage_free[k % 3], c)
        c += 400  # local_store + fence (untracked)
        ev.append((f"{role}/tma_store", c, c + 40))
        ev.append((f"{role}/store_wait", c + 40, c + 900))
        ends[w] = c + 950
        ev.insert(0, (f"{role}/task", c0, ends[w]))
    prod.insert(0, ("default/task", t_task0, t + 50))
    return {0: prod, 4: cons[4], 8: cons[8]}


def make_trace(
    n_ctas: int = 8,
    num_k: int = 16,
    n_sms: int = 4,
    seed: int = 0,
    drop_first: int = 0,
) -> dict[str, Any]:
    """A Proton-format chrome trace dict. ``drop_first`` removes the first N records of warp 0 of CTA 0
    (what a circular-buffer overflow does: its task scope and first waits disappear)."""
    rng = random.Random(seed)
    events: list[dict[str, Any]] = []
    init_times = [1_000_000_000 + 50 * (i % n_sms) + (i // n_sms) * 40_000 for i in range(n_ctas)]
    min_init = min(init_times)
    for cta in range(n_ctas):
        per_warp = _cta_events(num_k, rng)
        if cta == 0 and drop_first:
            per_warp[0] = per_warp[0][drop_first:]
        min_cycle = min(s for evs in per_warp.values() for _, s, _ in evs)
        adjust = (init_times[cta] - min_init) - min_cycle
        for warp, evs in per_warp.items():
            lines: list[list[tuple[int, int]]] = []
            for name, s, e in sorted(evs, key=lambda x: x[1]):
                li = next(
                    (i for i, ln in enumerate(lines) if all(not (s < b and e > a) for a, b in ln)),
                    len(lines),
                )
                if li == len(lines):
                    lines.append([])
                lines[li].append((s, e))
                events.append(
                    {
                        "cname": "thread_state_running",
                        "name": name,
                        "cat": KERNEL,
                        "ph": "X",
                        "pid": f"{KERNEL} Core{cta % n_sms} CTA{cta}",
                        "tid": f"warp {warp} (line {li})",
                        "ts": f32(f32(s + adjust) / f32(1000.0)),
                        "dur": f32(f32(e - s) / f32(1000.0)),
                        "args": {"Finalization Time (ns)": 1234, "Frequency (MHz)": 1000.0, "call_stack": []},
                    }
                )
    return {"displayTimeUnit": "ns", "traceEvents": events}
