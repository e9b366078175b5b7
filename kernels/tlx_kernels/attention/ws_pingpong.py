"""(d) Ping-pong: the consumer warpgroups take turns on the tensor cores, ordered by named barriers.

Step (c) lets each consumer overlap its softmax with its own PV product; the consumers still issue their
wgmmas whenever they are ready, so both tend to hit the tensor cores together and then both do softmax
together, leaving the tensor cores idle. Here they alternate (FlashAttention-3's inter-warpgroup
schedule): consumer ``g`` issues its wgmmas only in its *turn*, then hands the turn to consumer
``(g + 1) % NUM_GROUPS``, so one warpgroup's softmax runs while the other's products run.

A turn is a pair of named barriers per consumer (hardware ids ``9 + g``; ids below 9 are Triton's): consumer
``g`` waits on its own (``named_barrier_wait(9 + g, 256)``), issues, and arrives on the next one's
(``named_barrier_arrive``), 256 threads = the waiting and the arriving warpgroup. The last consumer arrives
once on the first one's barrier at the start so consumer 0 goes first. Every consumer takes the same number
of turns per tile (``n_blocks + 1``), so the order never drifts.

With ``PV_IN_TURN`` a turn issues both ``S_j = Q K_j^T`` and ``O += P_{j-1} V_{j-1}``, as FA3 does;
without it only ``S_j`` (the PV product is issued after the hand-over, as in Meta's Hopper tutorial). With
``WARP_RELEASE`` every consumer thread arrives on the ring's "empty" barriers, which saves the warpgroup-wide
``bar.sync`` that a single-thread arrive needs before it. ``LATE_P`` is :mod:`.ws_pipelined`'s option (convert
``P`` right before its PV issue). With ``TURN_WAITS_S`` a turn lasts until ``S_j`` has completed (Meta's
persistent ping-pong tutorial keeps its turn that long, though through the wait Triton adds after each of its dots;
see ``bench/meta_fa_overlap.py``): the other consumer's products then never queue behind this one's, and
the ``P V`` product still runs under this consumer's softmax (on an H100, 2026-12-06: on par with the default).
Waiting for ``P V`` before the softmax as well (Meta's schedule as Triton compiles it) was timed slower there and
removed (``bench/notes/why-targets-missed.md``).

:func:`.device.produce_kv` and :func:`consume_tile` are the per-tile work of the two roles; the persistent
kernel (:mod:`.ws_persistent`) calls them once per tile. The turns are :func:`.device.turn_begin` and
:func:`.device.turn_end`.
"""

from __future__ import annotations

from typing import Any

import triton
import triton.language as tl
import triton.language.extra.tlx as tlx

from tlx_kernels.attention import common as C
from tlx_kernels.attention import device as dev
from tlx_kernels.attention.calls import module_calls


@triton.jit
def empty_barriers(NUM_BUFFERS: tl.constexpr, NUM_GROUPS: tl.constexpr, WARP_RELEASE: tl.constexpr):
    """The ring's "slot is free" barriers: one arrival per consumer warpgroup (one thread of it arrives after a
    warpgroup-wide ``bar.sync``), or with ``WARP_RELEASE`` one per consumer thread (no ``bar.sync``)."""
    if WARP_RELEASE:
        bars = tlx.alloc_warp_barrier(NUM_BUFFERS, num_warps=4, num_arrivals=NUM_GROUPS)
    else:
        bars = tlx.alloc_barriers(NUM_BUFFERS, arrive_count=NUM_GROUPS)
    return bars


@triton.jit
def consume_tile(q_buf, k_smem, v_smem, k_full, k_empty, v_full, v_empty, q_empty, it0, n_blocks, q_start, S_kv,
                 qk_scale, g: tl.constexpr, CAUSAL: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                 HEAD_DIM: tl.constexpr, NUM_GROUPS: tl.constexpr, NUM_BUFFERS: tl.constexpr,
                 PV_IN_TURN: tl.constexpr, RELEASE_Q: tl.constexpr, LATE_P: tl.constexpr = False,
                 TURN_WAITS_S: tl.constexpr = False):
    """Consumer ``g``'s work on one tile: (O, m, l) of its ``BLOCK_M`` query rows over ``n_blocks`` KV blocks at
    ring positions ``it0, ...``. Pipelined as in step (c), each wgmma issue inside the consumer's turn. With
    ``RELEASE_Q`` it arrives on ``q_empty`` once its last ``Q K^T`` is done (the persistent kernel's Q reuse)."""
    dtype: tl.constexpr = q_buf.dtype
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    # prologue: S_0 and P_0
    qk = dev.scores(q_buf, k_smem, k_full, k_empty, it0 % NUM_BUFFERS, (it0 // NUM_BUFFERS) & 1, q_start, 0, S_kv, g,
                    CAUSAL, BLOCK_M, BLOCK_N, NUM_GROUPS, True)
    m_i, l_i, p_f32 = dev.softmax_first(qk, qk_scale)
    p = dev.p_operand(p_f32, dtype, LATE_P)
    alpha = tl.full([BLOCK_M], 1.0, tl.float32)
    j = 1
    while j < n_blocks:  # not `for`: see ws_pipelined (Triton's pipeliner would serialise the wgmmas)
        it = it0 + j
        slot = it % NUM_BUFFERS
        prev = (it - 1) % NUM_BUFFERS
        acc = acc * alpha[:, None]
        tlx.barrier_wait(k_full[slot], (it // NUM_BUFFERS) & 1)
        tlx.barrier_wait(v_full[prev], ((it - 1) // NUM_BUFFERS) & 1)
        dev.turn_begin(g, True)
        qk = tlx.async_dot(q_buf, tlx.local_trans(k_smem[slot]))  # S_j
        if TURN_WAITS_S:  # Meta's order: S_j completes inside the turn, then the hand-over, then P V
            qk = tlx.async_dot_wait(0, qk)
            dev.turn_end(g, NUM_GROUPS, True)
            acc = tlx.async_dot(p.to(dtype), v_smem[prev], acc)
        elif PV_IN_TURN:
            acc = tlx.async_dot(p.to(dtype), v_smem[prev], acc)  # O += P_{j-1} V_{j-1}
            dev.turn_end(g, NUM_GROUPS, True)
        else:
            dev.turn_end(g, NUM_GROUPS, True)
            acc = tlx.async_dot(p.to(dtype), v_smem[prev], acc)
        qk = tlx.async_dot_wait(1, qk)  # S_j done, PV still running
        tlx.barrier_arrive(k_empty[slot])
        m_i, l_i, p_f32, alpha = dev.softmax_block(qk, m_i, l_i, q_start, j * BLOCK_N, S_kv, qk_scale, CAUSAL, BLOCK_M,
                                                   BLOCK_N)
        acc = tlx.async_dot_wait(0, acc)
        tlx.barrier_arrive(v_empty[prev])
        p = dev.p_operand(p_f32, dtype, LATE_P)
        j += 1
    if RELEASE_Q:
        tlx.barrier_arrive(q_empty)
    # epilogue: the last P V
    acc = dev.last_pv(acc, alpha, p, v_smem, v_full, v_empty, it0 + n_blocks - 1, g, NUM_BUFFERS, NUM_GROUPS, False,
                      True)
    return acc, m_i, l_i


@triton.jit
def ws_pingpong_attention_kernel(desc_q, desc_k, desc_v, desc_o, lse_ptr, qk_scale, S_q, S_kv, S_o, BH,
                                 HEAD_DIM: tl.constexpr, CAUSAL: tl.constexpr, STORE_LSE: tl.constexpr,
                                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, NUM_GROUPS: tl.constexpr,
                                 NUM_BUFFERS: tl.constexpr, CONSUMER_REGS: tl.constexpr, PV_IN_TURN: tl.constexpr,
                                 WARP_RELEASE: tl.constexpr = False, LATE_P: tl.constexpr = False,
                                 TURN_WAITS_S: tl.constexpr = False):
    dtype: tl.constexpr = tlx.dtype_of(desc_q)
    # step (b)'s buffers, barriers, tile and producer, declared again on purpose (see ws.py)
    q_smem = tlx.local_alloc((BLOCK_M, HEAD_DIM), dtype, NUM_GROUPS)
    k_smem = tlx.local_alloc((BLOCK_N, HEAD_DIM), dtype, NUM_BUFFERS)
    v_smem = tlx.local_alloc((BLOCK_N, HEAD_DIM), dtype, NUM_BUFFERS)
    q_full = tlx.alloc_barriers(NUM_GROUPS, arrive_count=1)
    k_full = tlx.alloc_barriers(NUM_BUFFERS, arrive_count=1)
    k_empty = empty_barriers(NUM_BUFFERS, NUM_GROUPS, WARP_RELEASE)
    v_full = tlx.alloc_barriers(NUM_BUFFERS, arrive_count=1)
    v_empty = empty_barriers(NUM_BUFFERS, NUM_GROUPS, WARP_RELEASE)

    bh, tile_start = dev.q_tile(NUM_GROUPS * BLOCK_M, CAUSAL)
    n_blocks = dev.kv_blocks(tile_start, NUM_GROUPS * BLOCK_M, S_q, S_kv, CAUSAL, BLOCK_N)

    with tlx.async_tasks():
        with tlx.async_task("default"):  # producer
            dev.load_q(desc_q, q_smem, q_full, bh * S_q + tile_start, BLOCK_M, HEAD_DIM, NUM_GROUPS)
            dev.produce_kv(desc_k, desc_v, k_smem, v_smem, k_full, k_empty, v_full, v_empty, 0, bh * S_kv, 0,
                           n_blocks, BLOCK_N, HEAD_DIM, NUM_BUFFERS)
        with tlx.async_task(num_warps=4, registers=CONSUMER_REGS, replicate=NUM_GROUPS):  # consumers
            g: tl.constexpr = tlx.async_task_replica_id()
            if g == NUM_GROUPS - 1:
                tlx.named_barrier_arrive(9, 256)  # consumer 0 takes the first turn
            q_start = tile_start + g * BLOCK_M
            tlx.barrier_wait(q_full[g], 0)
            acc, m_i, l_i = consume_tile(q_smem[g], k_smem, v_smem, k_full, k_empty, v_full, v_empty, q_full[g], 0,
                                         n_blocks, q_start, S_kv, qk_scale, g, CAUSAL, BLOCK_M, BLOCK_N, HEAD_DIM,
                                         NUM_GROUPS, NUM_BUFFERS, PV_IN_TURN, False, LATE_P, TURN_WAITS_S)
            # O is staged in this consumer's Q buffer: its last reader, the last Q K^T, has completed
            dev.store_tile(acc, l_i, m_i, q_smem[g], desc_o, lse_ptr, bh, q_start, S_q, S_o, BLOCK_M, STORE_LSE)
            tlx.async_descriptor_store_wait(0)


# BLOCK_M is the rows of one consumer warpgroup; a CTA holds NUM_GROUPS * BLOCK_M rows.
# After the first, the fastest for the other cases, so that the first two that fit a head dim (attention() tries
# them) cover it.
# H200 sweep 2026-12-03: first (= default) fastest at B4 H32 S4096 D128; TFLOP/s D128 / causal / D64 / causal.
_BASE = dict(BLOCK_M=64, BLOCK_N=128, NUM_GROUPS=2, NUM_BUFFERS=2, CONSUMER_REGS=240, PV_IN_TURN=False)
CONFIGS: list[dict[str, Any]] = [
    dict(_BASE, NUM_BUFFERS=3),  # 622 / 567 / 391 / 359
    dict(_BASE),  # 615 / 577 / 392 / 361
    dict(_BASE, NUM_BUFFERS=4),  # D64 only: 394 / 358
    dict(_BASE, NUM_BUFFERS=3, PV_IN_TURN=True),  # 621 / 562 / 378 / 352
    dict(_BASE, BLOCK_N=64, NUM_GROUPS=3, NUM_BUFFERS=4, CONSUMER_REGS=160, PV_IN_TURN=True),  # D64 only: 392 / 316
    dict(_BASE, PV_IN_TURN=True, WARP_RELEASE=True),  # not in the sweep (WARP_RELEASE came after it)
]
DEFAULT = CONFIGS[0]
# Compiled clean (as ws_pipelined.TRIALS), not yet checked and timed on a GPU: not in CONFIGS.
TRIALS: list[dict[str, Any]] = [dict(DEFAULT, LATE_P=True), dict(DEFAULT, PV_IN_TURN=True, LATE_P=True),
                                 dict(DEFAULT, TURN_WAITS_S=True)]
_tuner = C.Tuner()


def prepare(q, k, v, causal: bool = False, config: dict[str, Any] | None = None, sm_scale: float | None = None,
            out=None, lse=None, want_lse: bool = False) -> C.Launch:
    """The launch of one config (CPU tensors work: compile-only inspection)."""
    return C.tlx_launch(ws_pingpong_attention_kernel, CONFIGS, q, k, v, causal, config, sm_scale, out, lse, want_lse)


launch, attention = module_calls(prepare, CONFIGS, _tuner)
