"""A TLX ring two consumers take turns on (ping-pong), handing the turn over through named barriers:
correct, and with the hand-over too early (the line marked ``# BUG: first-wait-passes`` is then a bug)."""

from __future__ import annotations

import triton
import triton.language as tl
import triton.language.extra.tlx as tlx


@triton.jit
def pingpong_ring(x_desc, out_ptr, K, BM: tl.constexpr, BK: tl.constexpr, STAGES: tl.constexpr,
                  TILES: tl.constexpr, EARLY_HANDOVER: tl.constexpr):
    """Two consumers take whole tiles in turn from one ring (ping-pong): named barriers 9 and 10 hand
    the turn over once a consumer has waited on all of its tile's slots, so consumer 1's first wait on
    a slot may use phase 1 (consumer 0 consumed phase 0 before the hand-over). EARLY_HANDOVER hands the
    turn over before those waits: then nothing orders consumer 1's phase-1 wait after phase 0."""
    bufs = tlx.local_alloc((BM, BK), tl.float16, STAGES)
    full = tlx.alloc_barriers(STAGES, arrive_count=1)
    empty = tlx.alloc_barriers(STAGES, arrive_count=1)
    steps = K // BK
    with tlx.async_tasks():
        with tlx.async_task("default"):
            for it in range(0, TILES * steps):
                s = it % STAGES
                tlx.barrier_wait(empty[s], ((it // STAGES) & 1) ^ 1)
                tlx.barrier_expect_bytes(full[s], BM * BK * 2)
                tlx.async_descriptor_load(x_desc, bufs[s], [0, (it % steps) * BK], full[s])
        with tlx.async_task(num_warps=4, replicate=2):
            cid: tl.constexpr = tlx.async_task_replica_id()
            acc = tl.zeros([BM, BK], tl.float32)
            if cid == 1:
                tlx.named_barrier_arrive(9, 256)  # consumer 0 goes first
            for j in range(cid, TILES, 2):
                tlx.named_barrier_wait(9 + cid, 256)
                if EARLY_HANDOVER and j + 1 < TILES:
                    tlx.named_barrier_arrive(10 - cid, 256)  # too early: before this tile's waits
                for k in range(0, steps):
                    it = j * steps + k
                    s = it % STAGES
                    tlx.barrier_wait(full[s], (it // STAGES) & 1)  # BUG: first-wait-passes
                    acc += tlx.local_load(bufs[s]).to(tl.float32)
                    tlx.barrier_arrive(empty[s])
                if not EARLY_HANDOVER and j + 1 < TILES:
                    tlx.named_barrier_arrive(10 - cid, 256)  # every slot of this tile waited on: the other's turn
            offs = tl.arange(0, BM)[:, None] * BK + tl.arange(0, BK)[None, :]
            tl.store(out_ptr + cid * BM * BK + offs, acc.to(tl.float16))


@triton.jit
def one_way_handover(x_desc, out_ptr, K, BM: tl.constexpr, BK: tl.constexpr, STAGES: tl.constexpr):
    """Consumer 1 only arrives at named barrier 9, consumer 0 only waits there: a named barrier counts threads,
    so consumer 1, a ring's depth ahead, arrives twice in one generation and completes it alone; consumer 0's
    wait then belongs to a generation no one else arrives at."""
    bufs = tlx.local_alloc((BM, BK), tl.float16, STAGES)
    full = tlx.alloc_barriers(STAGES, arrive_count=1)
    empty = tlx.alloc_barriers(STAGES, arrive_count=2)
    with tlx.async_tasks():
        with tlx.async_task("default"):
            for k in range(0, K // BK):
                s = k % STAGES
                tlx.barrier_wait(empty[s], ((k // STAGES) & 1) ^ 1)
                tlx.barrier_expect_bytes(full[s], BM * BK * 2)
                tlx.async_descriptor_load(x_desc, bufs[s], [0, k * BK], full[s])
        with tlx.async_task(num_warps=4, replicate=2):
            cid: tl.constexpr = tlx.async_task_replica_id()
            acc = tl.zeros([BM, BK], tl.float32)
            for k in range(0, K // BK):
                s = k % STAGES
                if cid == 0:
                    tlx.named_barrier_wait(9, 256)  # BUG: hang
                else:
                    tlx.named_barrier_arrive(9, 256)
                tlx.barrier_wait(full[s], (k // STAGES) & 1)
                acc += tlx.local_load(bufs[s]).to(tl.float32)
                tlx.barrier_arrive(empty[s])
            offs = tl.arange(0, BM)[:, None] * BK + tl.arange(0, BK)[None, :] + cid * BM * BK
            tl.store(out_ptr + offs, acc.to(tl.float16))
