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
``P`` right before its PV issue).

:func:`produce_tile` and :func:`consume_tile` are the per-tile work of the two roles; the persistent kernel
(:mod:`.ws_persistent`) calls them once per tile.
"""

from __future__ import annotations

from typing import Any

import triton
import triton.language as tl
import triton.language.extra.tlx as tlx

from tlx_kernels.attention import common as C
from tlx_kernels.attention import device as dev
from tlx_kernels.attention.calls import over_configs

TURN_BARRIER_BASE = 9


@triton.jit
def _turn_begin(g: tl.constexpr):
    tlx.named_barrier_wait(9 + g, 256)


@triton.jit
def _turn_end(g: tl.constexpr, NUM_GROUPS: tl.constexpr):
    tlx.named_barrier_arrive(9 + (g + 1) % NUM_GROUPS, 256)


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
def produce_tile(desc_k, desc_v, k_smem, v_smem, k_full, k_empty, v_full, v_empty, it0, kv_row, j0, j1,
                 BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr, NUM_BUFFERS: tl.constexpr):
    """TMA-load K and V blocks ``j0 .. j1-1`` of a tile (rows from ``kv_row``) into ring positions ``it0 + j``."""
    TILE_BYTES: tl.constexpr = BLOCK_N * HEAD_DIM * tlx.size_of(tlx.dtype_of(desc_k))
    for j in range(j0, j1):
        it = it0 + j
        slot = it % NUM_BUFFERS
        phase = (it // NUM_BUFFERS) & 1
        tlx.barrier_wait(k_empty[slot], phase ^ 1)
        tlx.barrier_expect_bytes(k_full[slot], TILE_BYTES)
        tlx.async_descriptor_load(desc_k, k_smem[slot], [kv_row + j * BLOCK_N, 0], k_full[slot])
        tlx.barrier_wait(v_empty[slot], phase ^ 1)
        tlx.barrier_expect_bytes(v_full[slot], TILE_BYTES)
        tlx.async_descriptor_load(desc_v, v_smem[slot], [kv_row + j * BLOCK_N, 0], v_full[slot])


@triton.jit
def _softmax_block(qk, m_i, l_i, q_start, kv_start, S_kv, qk_scale, CAUSAL: tl.constexpr, BLOCK_M: tl.constexpr,
                   BLOCK_N: tl.constexpr):
    # The softmax is in both arms on purpose: ptxas schedules within basic blocks, and the merge after this
    # branch keeps it from hoisting the caller's wait for the PV product above the softmax.
    if dev.needs_mask(q_start, kv_start, S_kv, CAUSAL, BLOCK_N):
        qk = dev.mask_scores(qk, q_start, kv_start, S_kv, CAUSAL, BLOCK_M, BLOCK_N)
        m_i, l_i, p, alpha = dev.softmax_next(qk, m_i, l_i, qk_scale)
    else:
        m_i, l_i, p, alpha = dev.softmax_next(qk, m_i, l_i, qk_scale)
    return m_i, l_i, p, alpha


@triton.jit
def consume_tile(q_buf, k_smem, v_smem, k_full, k_empty, v_full, v_empty, q_empty, it0, n_blocks, q_start, S_kv,
                 qk_scale, g: tl.constexpr, CAUSAL: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                 HEAD_DIM: tl.constexpr, NUM_GROUPS: tl.constexpr, NUM_BUFFERS: tl.constexpr,
                 PV_IN_TURN: tl.constexpr, RELEASE_Q: tl.constexpr, LATE_P: tl.constexpr = False):
    """Consumer ``g``'s work on one tile: (O, m, l) of its ``BLOCK_M`` query rows over ``n_blocks`` KV blocks at
    ring positions ``it0, ...``. Pipelined as in step (c), each wgmma issue inside the consumer's turn. With
    ``RELEASE_Q`` it arrives on ``q_empty`` once its last ``Q K^T`` is done (the persistent kernel's Q reuse)."""
    dtype: tl.constexpr = q_buf.dtype
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    # prologue: S_0 and P_0
    slot = it0 % NUM_BUFFERS
    tlx.barrier_wait(k_full[slot], (it0 // NUM_BUFFERS) & 1)
    _turn_begin(g)
    qk = tlx.async_dot(q_buf, tlx.local_trans(k_smem[slot]))
    _turn_end(g, NUM_GROUPS)
    qk = tlx.async_dot_wait(0, qk)
    tlx.barrier_arrive(k_empty[slot])
    if dev.needs_mask(q_start, 0, S_kv, CAUSAL, BLOCK_N):
        qk = dev.mask_scores(qk, q_start, 0, S_kv, CAUSAL, BLOCK_M, BLOCK_N)
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
        _turn_begin(g)
        qk = tlx.async_dot(q_buf, tlx.local_trans(k_smem[slot]))  # S_j
        if PV_IN_TURN:
            acc = tlx.async_dot(p.to(dtype), v_smem[prev], acc)  # O += P_{j-1} V_{j-1}
            _turn_end(g, NUM_GROUPS)
        else:
            _turn_end(g, NUM_GROUPS)
            acc = tlx.async_dot(p.to(dtype), v_smem[prev], acc)
        qk = tlx.async_dot_wait(1, qk)  # S_j done, PV still running
        tlx.barrier_arrive(k_empty[slot])
        m_i, l_i, p_f32, alpha = _softmax_block(qk, m_i, l_i, q_start, j * BLOCK_N, S_kv, qk_scale, CAUSAL, BLOCK_M,
                                                BLOCK_N)
        acc = tlx.async_dot_wait(0, acc)
        tlx.barrier_arrive(v_empty[prev])
        p = dev.p_operand(p_f32, dtype, LATE_P)
        j += 1
    if RELEASE_Q:
        tlx.barrier_arrive(q_empty)
    # epilogue: the last P V
    it = it0 + n_blocks - 1
    last = it % NUM_BUFFERS
    acc = acc * alpha[:, None]
    tlx.barrier_wait(v_full[last], (it // NUM_BUFFERS) & 1)
    _turn_begin(g)
    acc = tlx.async_dot(p.to(dtype), v_smem[last], acc)
    _turn_end(g, NUM_GROUPS)
    acc = tlx.async_dot_wait(0, acc)
    tlx.barrier_arrive(v_empty[last])
    return acc, m_i, l_i


@triton.jit
def ws_pingpong_attention_kernel(desc_q, desc_k, desc_v, desc_o, lse_ptr, qk_scale, S_q, S_kv, S_o, BH,
                                 HEAD_DIM: tl.constexpr, CAUSAL: tl.constexpr, STORE_LSE: tl.constexpr,
                                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, NUM_GROUPS: tl.constexpr,
                                 NUM_BUFFERS: tl.constexpr, CONSUMER_REGS: tl.constexpr, PV_IN_TURN: tl.constexpr,
                                 WARP_RELEASE: tl.constexpr = False, LATE_P: tl.constexpr = False):
    dtype: tl.constexpr = tlx.dtype_of(desc_q)
    q_smem = tlx.local_alloc((BLOCK_M, HEAD_DIM), dtype, NUM_GROUPS)
    k_smem = tlx.local_alloc((BLOCK_N, HEAD_DIM), dtype, NUM_BUFFERS)
    v_smem = tlx.local_alloc((BLOCK_N, HEAD_DIM), dtype, NUM_BUFFERS)
    q_full = tlx.alloc_barriers(NUM_GROUPS, arrive_count=1)
    k_full = tlx.alloc_barriers(NUM_BUFFERS, arrive_count=1)
    k_empty = empty_barriers(NUM_BUFFERS, NUM_GROUPS, WARP_RELEASE)
    v_full = tlx.alloc_barriers(NUM_BUFFERS, arrive_count=1)
    v_empty = empty_barriers(NUM_BUFFERS, NUM_GROUPS, WARP_RELEASE)

    bh = tl.program_id(1)
    pid_m = tl.program_id(0)
    if CAUSAL:
        pid_m = tl.num_programs(0) - 1 - pid_m  # longest tiles first
    tile_start = pid_m * (NUM_GROUPS * BLOCK_M)
    n_blocks = dev.kv_blocks(tile_start, NUM_GROUPS * BLOCK_M, S_q, S_kv, CAUSAL, BLOCK_N)

    with tlx.async_tasks():
        with tlx.async_task("default"):  # producer
            for g in tl.static_range(NUM_GROUPS):
                tlx.barrier_expect_bytes(q_full[g], BLOCK_M * HEAD_DIM * tlx.size_of(dtype))
                tlx.async_descriptor_load(desc_q, q_smem[g], [bh * S_q + tile_start + g * BLOCK_M, 0], q_full[g])
            produce_tile(desc_k, desc_v, k_smem, v_smem, k_full, k_empty, v_full, v_empty, 0, bh * S_kv, 0,
                         n_blocks, BLOCK_N, HEAD_DIM, NUM_BUFFERS)
        with tlx.async_task(num_warps=4, registers=CONSUMER_REGS, replicate=NUM_GROUPS):  # consumers
            g: tl.constexpr = tlx.async_task_replica_id()
            if g == NUM_GROUPS - 1:
                tlx.named_barrier_arrive(9, 256)  # consumer 0 takes the first turn
            q_start = tile_start + g * BLOCK_M
            tlx.barrier_wait(q_full[g], 0)
            acc, m_i, l_i = consume_tile(q_smem[g], k_smem, v_smem, k_full, k_empty, v_full, v_empty, q_full[g], 0,
                                         n_blocks, q_start, S_kv, qk_scale, g, CAUSAL, BLOCK_M, BLOCK_N, HEAD_DIM,
                                         NUM_GROUPS, NUM_BUFFERS, PV_IN_TURN, False, LATE_P)
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
TRIALS: list[dict[str, Any]] = [dict(DEFAULT, LATE_P=True), dict(DEFAULT, PV_IN_TURN=True, LATE_P=True)]
_tuner = C.Tuner()


def prepare(q, k, v, causal: bool = False, config: dict[str, Any] | None = None, sm_scale: float | None = None,
            out=None, lse=None, want_lse: bool = False) -> C.Launch:
    """The launch of one config (CPU tensors work: compile-only inspection)."""
    p = C.problem(q, k, v, causal, sm_scale)
    cfg = dict(config or C.configs_for(CONFIGS, p.D)[0])
    out, lse, store_lse = C.outputs(q, out, lse, want_lse)
    tile_m = cfg["NUM_GROUPS"] * cfg["BLOCK_M"]
    args, kw, staged = C.tlx_args(p, q, k, v, out, lse, cfg["BLOCK_M"], cfg["BLOCK_N"], tile_m, store_lse)
    grid = (triton.cdiv(p.S_q, cfg["NUM_GROUPS"] * cfg["BLOCK_M"]), p.BH)
    return C.Launch(ws_pingpong_attention_kernel, args, dict(cfg, **kw, num_warps=4, num_stages=1), grid, out,
                    lse, p, staged)


def launch(q, k, v, causal: bool = False, config: dict[str, Any] | None = None, sm_scale: float | None = None,
           out=None, lse=None):
    """One launch with ``config`` (default: the first of :data:`CONFIGS` that fits the head dim); returns ``out``."""
    return prepare(q, k, v, causal, config, sm_scale, out, lse).run()


def attention(q, k, v, causal: bool = False, sm_scale: float | None = None, *, out=None, graph: bool = False):
    """Tuned over the :data:`CONFIGS` that fit the head dim, on first use per problem size; repeated calls launch
    from a cache (:mod:`.calls`; ``graph=True`` with ``out``: a CUDA graph)."""
    return _attention(q, k, v, causal, sm_scale, out=out, graph=graph)


_attention = over_configs(prepare, CONFIGS, _tuner)
