"""(e) Persistent ping-pong: one CTA per SM walks a static tile schedule; roles and turns as in step (d).

The grid is ``min(#SMs, #tiles)``. A tile is ``NUM_GROUPS * BLOCK_M`` query rows of one head. CTA ``pid``
takes in round ``r`` tile ``r * P + pid`` (``P`` = grid size), or ``r * P + P - 1 - pid`` in odd rounds when
``SNAKE`` is set: with the tiles sorted longest first (causal), a CTA that got one of the longest tiles in
one round gets one of the shortest in the next, which balances the work without an atomic tile counter.
Tiles are numbered head group by head group (``GROUP_HEADS`` heads; within a group, the query tile index
descends and the heads alternate), so the CTAs working at the same time share the K and V of a few heads
in L2. ``GROUP_HEADS`` and ``SNAKE`` are runtime arguments (not specialised), so trying them costs no compile.

What persistence buys over step (d): the producer loads the next tile's K and V (and, once the consumer
has released it, its Q) while the consumers finish the current one, and the epilogue of one tile overlaps
the start of the next. Each consumer releases its Q buffer (``q_empty``) right after its last ``Q K^T`` of
a tile, so the next Q lands while it finishes its last PV product and stores its output. The K/V ring
position keeps counting across tiles.

``LATE_P`` (see :mod:`.ws_pipelined`) and ``TURN_WAITS_S`` (see :mod:`.ws_pingpong`) are passed to
:func:`.ws_pingpong.consume_tile`. With it the
consumers keep a few of the tile loop's values in local memory (8-32 bytes of stack at D128, sm_90 compile,
2026-12-03): stored when the tile starts and reloaded once per tile, never inside the KV loop
(``compile_only.local_memory_in_mma_loops``). Its configs are :data:`TRIALS` until a GPU has timed them.
"""

from __future__ import annotations

from typing import Any

import triton
import triton.language as tl
import triton.language.extra.tlx as tlx

from tlx_kernels.attention import common as C
from tlx_kernels.attention import device as dev
from tlx_kernels.attention.calls import module_calls
from tlx_kernels.attention.ws_pingpong import consume_tile, empty_barriers


@triton.jit
def tile_of(r, pid, nprog, num_m, BH, SNAKE, GROUP_HEADS):
    """(tile index, query tile m, head bh) of CTA ``pid``'s round ``r``; tile index >= #tiles means none."""
    t = r * nprog + pid
    if (SNAKE != 0) & (r % 2 == 1):
        t = r * nprog + nprog - 1 - pid
    group_tiles = GROUP_HEADS * num_m
    grp = t // group_tiles
    heads_here = tl.minimum(GROUP_HEADS, BH - grp * GROUP_HEADS)
    t_in = t - grp * group_tiles
    m = num_m - 1 - t_in // heads_here
    bh = grp * GROUP_HEADS + t_in % heads_here
    return t, m, bh


@triton.jit(do_not_specialize=["GROUP_HEADS", "SNAKE"])
def ws_persistent_attention_kernel(desc_q, desc_k, desc_v, desc_o, lse_ptr, qk_scale, S_q, S_kv, S_o, BH,
                                   GROUP_HEADS, SNAKE, HEAD_DIM: tl.constexpr, CAUSAL: tl.constexpr,
                                   STORE_LSE: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                                   NUM_GROUPS: tl.constexpr, NUM_BUFFERS: tl.constexpr,
                                   CONSUMER_REGS: tl.constexpr, PV_IN_TURN: tl.constexpr,
                                   WARP_RELEASE: tl.constexpr = False, LATE_P: tl.constexpr = False,
                                   TURN_WAITS_S: tl.constexpr = False):
    dtype: tl.constexpr = tlx.dtype_of(desc_q)
    TILE_M: tl.constexpr = NUM_GROUPS * BLOCK_M
    q_smem = tlx.local_alloc((BLOCK_M, HEAD_DIM), dtype, NUM_GROUPS)
    k_smem = tlx.local_alloc((BLOCK_N, HEAD_DIM), dtype, NUM_BUFFERS)
    v_smem = tlx.local_alloc((BLOCK_N, HEAD_DIM), dtype, NUM_BUFFERS)
    o_smem = tlx.local_alloc((BLOCK_M, HEAD_DIM), dtype, NUM_GROUPS)  # output staging (Q's buffer is reloaded)
    q_full = tlx.alloc_barriers(NUM_GROUPS, arrive_count=1)
    q_empty = tlx.alloc_barriers(NUM_GROUPS, arrive_count=1)
    k_full = tlx.alloc_barriers(NUM_BUFFERS, arrive_count=1)
    k_empty = empty_barriers(NUM_BUFFERS, NUM_GROUPS, WARP_RELEASE)
    v_full = tlx.alloc_barriers(NUM_BUFFERS, arrive_count=1)
    v_empty = empty_barriers(NUM_BUFFERS, NUM_GROUPS, WARP_RELEASE)

    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    num_m = tl.cdiv(S_q, TILE_M)
    num_tiles = num_m * BH
    rounds = tl.cdiv(num_tiles, nprog)

    with tlx.async_tasks():
        with tlx.async_task("default"):  # producer
            it = 0
            n_done = 0  # tiles of this CTA so far (the Q buffers' phase)
            for r in range(rounds):
                t, m, bh = tile_of(r, pid, nprog, num_m, BH, SNAKE, GROUP_HEADS)
                if t < num_tiles:
                    n_blocks = dev.kv_blocks(m * TILE_M, TILE_M, S_q, S_kv, CAUSAL, BLOCK_N)
                    # K_0 and V_0 first: they need no Q buffer, which the consumers free only at the end of a tile
                    dev.produce_kv(desc_k, desc_v, k_smem, v_smem, k_full, k_empty, v_full, v_empty, it, bh * S_kv, 0,
                                   1, BLOCK_N, HEAD_DIM, NUM_BUFFERS)
                    for g in tl.static_range(NUM_GROUPS):
                        tlx.barrier_wait(q_empty[g], (n_done & 1) ^ 1)
                        tlx.barrier_expect_bytes(q_full[g], BLOCK_M * HEAD_DIM * tlx.size_of(dtype))
                        tlx.async_descriptor_load(desc_q, q_smem[g], [bh * S_q + m * TILE_M + g * BLOCK_M, 0],
                                                  q_full[g])
                    dev.produce_kv(desc_k, desc_v, k_smem, v_smem, k_full, k_empty, v_full, v_empty, it, bh * S_kv, 1,
                                   n_blocks, BLOCK_N, HEAD_DIM, NUM_BUFFERS)
                    it += n_blocks
                    n_done += 1
        with tlx.async_task(num_warps=4, registers=CONSUMER_REGS, replicate=NUM_GROUPS):  # consumers
            g: tl.constexpr = tlx.async_task_replica_id()
            if g == NUM_GROUPS - 1:
                tlx.named_barrier_arrive(9, 256)  # consumer 0 takes the first turn
            it = 0
            n_done = 0
            for r in range(rounds):
                t, m, bh = tile_of(r, pid, nprog, num_m, BH, SNAKE, GROUP_HEADS)
                if t < num_tiles:
                    n_blocks = dev.kv_blocks(m * TILE_M, TILE_M, S_q, S_kv, CAUSAL, BLOCK_N)
                    q_start = m * TILE_M + g * BLOCK_M
                    tlx.barrier_wait(q_full[g], n_done & 1)
                    acc, m_i, l_i = consume_tile(q_smem[g], k_smem, v_smem, k_full, k_empty, v_full, v_empty,
                                                 q_empty[g], it, n_blocks, q_start, S_kv, qk_scale, g, CAUSAL,
                                                 BLOCK_M, BLOCK_N, HEAD_DIM, NUM_GROUPS, NUM_BUFFERS, PV_IN_TURN, True,
                                                 LATE_P, TURN_WAITS_S)
                    dev.store_tile(acc, l_i, m_i, o_smem[g], desc_o, lse_ptr, bh, q_start, S_q, S_o, BLOCK_M,
                                   STORE_LSE)
                    it += n_blocks
                    n_done += 1
            tlx.async_descriptor_store_wait(0)


# BLOCK_M is the rows of one consumer warpgroup; a tile is NUM_GROUPS * BLOCK_M rows. GROUP_HEADS and SNAKE are
# runtime arguments: configs that differ only in them share a compile. After the first, the fastest for the other
# cases, so that the first three that fit a head dim (what attention() tries) cover it.
# H200 sweep 2026-12-03: first (= default) fastest at B4 H32 S4096 D128; TFLOP/s D128 / causal / D64 / causal.
_BASE = dict(BLOCK_M=64, BLOCK_N=128, NUM_GROUPS=2, NUM_BUFFERS=2, CONSUMER_REGS=240, PV_IN_TURN=False)
CONFIGS: list[dict[str, Any]] = [
    dict(_BASE, GROUP_HEADS=8, SNAKE=True),  # 635 / 426 / 443 / 271
    dict(_BASE, PV_IN_TURN=True, GROUP_HEADS=4, SNAKE=True),  # 610 / 604 / 442 / 385
    dict(_BASE, NUM_BUFFERS=4, GROUP_HEADS=2, SNAKE=True),  # D64 only: 446 / 406
    dict(_BASE, PV_IN_TURN=True, GROUP_HEADS=8, SNAKE=True),  # 633 / 432 / 454 / 270
    dict(_BASE, GROUP_HEADS=2, SNAKE=True),  # 577 / 584 / 440 / 387
    dict(_BASE, NUM_BUFFERS=3, PV_IN_TURN=True, GROUP_HEADS=8, SNAKE=True),  # D64 only: 452 / 274
    dict(_BASE, NUM_BUFFERS=4, GROUP_HEADS=8, SNAKE=False),  # D64 only: 441 / 405
    # not in the sweep (WARP_RELEASE came after it)
    dict(_BASE, PV_IN_TURN=True, WARP_RELEASE=True, GROUP_HEADS=8, SNAKE=True),
]
DEFAULT = CONFIGS[0]
# Compiled for sm_90 (no local memory in the KV loop) but not yet checked and timed on a GPU, so not in CONFIGS
# (what launch() and attention() use); `bench/attention.py --sweep --space trials` checks and times them.
TRIALS: list[dict[str, Any]] = [dict(DEFAULT, LATE_P=True), dict(CONFIGS[1], LATE_P=True),
                                 dict(DEFAULT, TURN_WAITS_S=True), dict(DEFAULT, GROUP_HEADS=4, TURN_WAITS_S=True)]
_tuner = C.Tuner()


def prepare(q, k, v, causal: bool = False, config: dict[str, Any] | None = None, sm_scale: float | None = None,
            out=None, lse=None, want_lse: bool = False, sms: int | None = None) -> C.Launch:
    """The launch of one config (CPU tensors work: compile-only inspection); ``sms`` overrides the SM count."""
    launch = C.tlx_launch(ws_persistent_attention_kernel, CONFIGS, q, k, v, causal, config, sm_scale, out, lse,
                          want_lse)
    tiles = launch.grid[0] * launch.grid[1]
    launch.grid = (max(1, min(tiles, sms or C.num_sms(q))),)
    # the schedule knobs are runtime arguments: sweeping them costs no compile
    launch.args += (int(launch.kwargs.pop("GROUP_HEADS")), int(launch.kwargs.pop("SNAKE")))
    return launch


launch, attention = module_calls(prepare, CONFIGS, _tuner)
