"""SYNTHETIC Proton chrome traces (not recorded on a GPU), in the exact form Triton 3.8's libproton writes.

Mirrors ``StreamChromeTraceWriter::writeKernel`` (Triton 3.8): one ``"ph": "X"`` event per scope
instance; ``pid`` ``"<kernel> Core<sm> CTA<id>"``; ``tid`` ``"warp <w> (line <l>)"`` (a scope goes on
the first line where it overlaps nothing, Proton's ``assignLineIds``); ``ts = double(int64(cycle +
(init - min_init) - cta_min_cycle)) / 1000``, ``dur = double(end - start) / 1000``; ``args`` with
``Init Time (ns)``, ``Post Final Time (ns)``, ``Finalization Time (ns)``, ``Frequency (MHz)`` 1000 and
``call_stack``.

The modelled kernel is a persistent WS cooperative GEMM with the workbench's scope names, warps 0, 4,
8 recorded: ``producer`` (per k-step ``wait:empty`` then one ``tma_load`` run) and ``consumer.0`` /
``consumer.1`` (``wait:full``, ``mma``, ``mma_wait`` per k-step; per tile ``mma_wait``, ``store_wait``,
``epilogue``). Cycle counts are chosen, so tests can check exact numbers; the SM clock is ``MHZ``.
"""

from __future__ import annotations

import random
from typing import Any

KERNEL = "ws_cooperative_kernel"
MHZ = 1500.0  # the clock the globaltimer stamps are consistent with
COLORS = ["cq_build_passed", "cq_build_failed", "thread_state_iowait", "thread_state_running"]

Scope = tuple[str, int, int]


def _producer(base: int, tiles: int, num_k: int, stage_free: list[int]) -> tuple[list[Scope], list[int]]:
    out: list[Scope] = []
    ready: list[int] = []
    t = base + 200
    for step in range(tiles * num_k):
        slot = step % 3
        w0 = t
        t = max(t + 40, stage_free[slot])
        out.append(("producer/wait:empty", w0, t))
        out.append(("producer/tma_load", t + 10, t + 100))  # three copies, one scope
        ready.append(t + 900)
        t += 110
    out.insert(0, ("producer/task", base + 190, t + 50))
    return out, ready


def _consumer(role: str, base: int, tiles: int, num_k: int, ready: list[int], stage_free: list[int],
              rng: random.Random) -> list[Scope]:
    out: list[Scope] = []
    c = base + 150
    c0 = c
    for tile in range(tiles):
        for k in range(num_k):
            step = tile * num_k + k
            w0 = c
            c = max(c + 45, ready[step])
            out.append((f"{role}/wait:full", w0, c))
            out.append((f"{role}/mma", c, c + 60))
            out.append((f"{role}/mma_wait", c + 60, c + 760 + rng.randrange(0, 50)))
            c = out[-1][2] + 20
            stage_free[step % 3] = max(stage_free[step % 3], c)
        out.append((f"{role}/mma_wait", c, c + 300))
        c += 700  # conversion to the output type: no scope
        out.append((f"{role}/store_wait", c, c + 100))
        out.append((f"{role}/epilogue", c + 100, c + 400))
        c += 420
    out.insert(0, (f"{role}/task", c0, c + 30))
    return out


def cta_scopes(tiles: int, num_k: int, rng: random.Random) -> dict[int, list[Scope]]:
    """warp -> [(scope name, start cycle, end cycle)] for one CTA (cycles from an arbitrary base)."""
    base = 10_000_000 + rng.randrange(0, 1000)
    stage_free = [0, 0, 0]
    prod, ready = _producer(base, tiles, num_k, stage_free)
    return {0: prod,
            4: _consumer("consumer.0", base, tiles, num_k, ready, stage_free, rng),
            8: _consumer("consumer.1", base + 5, tiles, num_k, ready, stage_free, rng)}


def _lines(scopes: list[Scope]) -> list[int]:
    """Proton's assignLineIds: by start, the first line where the scope overlaps nothing."""
    order = sorted(range(len(scopes)), key=lambda i: scopes[i][1])
    lines: list[list[tuple[int, int]]] = []
    out = [0] * len(scopes)
    for i in order:
        _, s, e = scopes[i]
        li = next((k for k, ln in enumerate(lines) if all(not (s < b and e > a) for a, b in ln)), len(lines))
        if li == len(lines):
            lines.append([])
        lines[li].append((s, e))
        out[i] = li
    return out


def make_trace(n_ctas: int = 8, tiles: int = 2, num_k: int = 8, n_sms: int = 4, seed: int = 0,
               drop_first: int = 0) -> dict[str, Any]:
    """A Proton 3.8 chrome trace dict. ``drop_first`` removes the first N scopes (by start) of warp 0 of
    CTA 0, what a circular-buffer overflow does (its task scope and first waits disappear)."""
    rng = random.Random(seed)
    events: list[dict[str, Any]] = []
    init_times = [1_000_000_000 + 50 * (i % n_sms) + (i // n_sms) * 400_000 for i in range(n_ctas)]
    min_init = min(init_times)
    for cta in range(n_ctas):
        per_warp = cta_scopes(tiles, num_k, rng)
        if cta == 0 and drop_first:
            per_warp[0] = sorted(per_warp[0], key=lambda x: x[1])[drop_first:]
        first = min(s for sc in per_warp.values() for _, s, _ in sc)
        last = max(e for sc in per_warp.values() for _, _, e in sc)
        # globaltimer: the CTA started 100 ns before its first record, finalization began 80 ns after
        # the last one and took 2000 ns
        init = init_times[cta]
        post_final = init + 100 + round((last - first) * 1000 / MHZ) + 80 + 2000
        adjust = (init - min_init) - first
        args = {"Init Time (ns)": init, "Post Final Time (ns)": post_final, "Finalization Time (ns)": 2000,
                "Frequency (MHz)": 1000.0, "call_stack": []}
        for warp, scopes in per_warp.items():
            for (name, s, e), li in zip(scopes, _lines(scopes), strict=True):
                events.append({"cname": COLORS[len(name) % len(COLORS)], "name": name, "cat": KERNEL, "ph": "X",
                               "pid": f"{KERNEL} Core{cta % n_sms} CTA{cta}", "tid": f"warp {warp} (line {li})",
                               "ts": float(s + adjust) / 1000.0, "dur": float(e - s) / 1000.0, "args": dict(args)})
    return {"displayTimeUnit": "ns", "traceEvents": events}
