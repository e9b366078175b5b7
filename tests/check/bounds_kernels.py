"""Ring kernels that go past what they allocated or asked for: an index outside a buffer or barrier set
(index-out-of-range), and register budgets Triton cannot give (register-budget). Each differs from
``ring_kernels.ring_ok`` in the line marked ``# BUG: <rule>``; ``registers_ok`` asks for a budget
Triton gives as asked."""

from __future__ import annotations

import triton
import triton.language as tl
import triton.language.extra.tlx as tlx


@triton.jit
def view_past_the_ring(x_desc, out_ptr, K, BM: tl.constexpr, BK: tl.constexpr, STAGES: tl.constexpr):
    bufs = tlx.local_alloc((BM, BK), tl.float16, STAGES)
    full = tlx.alloc_barriers(STAGES, arrive_count=1)
    empty = tlx.alloc_barriers(STAGES, arrive_count=1)
    with tlx.async_tasks():
        with tlx.async_task("default"):
            for k in range(0, K // BK):
                s = k % STAGES
                p = (k // STAGES) & 1
                tlx.barrier_wait(empty[s], p ^ 1)
                tlx.barrier_expect_bytes(full[s], BM * BK * 2)
                tlx.async_descriptor_load(x_desc, bufs[s], [0, k * BK], full[s])
        with tlx.async_task(num_warps=4):
            acc = tl.zeros([BM, BK], tl.float32)
            for k in range(0, K // BK):
                s = k % STAGES
                p = (k // STAGES) & 1
                tlx.barrier_wait(full[s], p)
                tile = tlx.local_view(bufs, s + STAGES * 7)  # BUG: index-out-of-range
                acc += tlx.local_load(tile).to(tl.float32)
                tlx.barrier_arrive(empty[s])
            offs = tl.arange(0, BM)[:, None] * BK + tl.arange(0, BK)[None, :]
            tl.store(out_ptr + offs, acc.to(tl.float16))


@triton.jit
def barrier_past_the_ring(x_desc, out_ptr, K, BM: tl.constexpr, BK: tl.constexpr, STAGES: tl.constexpr):
    bufs = tlx.local_alloc((BM, BK), tl.float16, STAGES)
    full = tlx.alloc_barriers(STAGES, arrive_count=1)
    empty = tlx.alloc_barriers(STAGES, arrive_count=1)
    with tlx.async_tasks():
        with tlx.async_task("default"):
            for k in range(0, K // BK):
                s = k % STAGES
                p = (k // STAGES) & 1
                tlx.barrier_wait(empty[k % (STAGES + 1)], p ^ 1)  # BUG: index-out-of-range
                tlx.barrier_expect_bytes(full[s], BM * BK * 2)
                tlx.async_descriptor_load(x_desc, bufs[s], [0, k * BK], full[s])
        with tlx.async_task(num_warps=4):
            acc = tl.zeros([BM, BK], tl.float32)
            for k in range(0, K // BK):
                s = k % STAGES
                p = (k // STAGES) & 1
                tlx.barrier_wait(full[s], p)
                acc += tlx.local_load(bufs[s]).to(tl.float32)
                tlx.barrier_arrive(empty[s])
            offs = tl.arange(0, BM)[:, None] * BK + tl.arange(0, BK)[None, :]
            tl.store(out_ptr + offs, acc.to(tl.float16))


@triton.jit
def ring_with_budget(x_desc, out_ptr, K, BM: tl.constexpr, BK: tl.constexpr, STAGES: tl.constexpr,
                     REGS: tl.constexpr, REPLICAS: tl.constexpr):
    """The consumer's warp groups ask for REGS registers per thread: 232 with one replica is what Triton
    gives; 300 is over setmaxnreg's 256; 248 twice does not fit 64K next to the default task's 4 warps."""
    bufs = tlx.local_alloc((BM, BK), tl.float16, STAGES)
    full = tlx.alloc_barriers(STAGES, arrive_count=1)
    empty = tlx.alloc_barriers(STAGES, arrive_count=REPLICAS)
    with tlx.async_tasks():
        with tlx.async_task("default"):
            for k in range(0, K // BK):
                s = k % STAGES
                p = (k // STAGES) & 1
                tlx.barrier_wait(empty[s], p ^ 1)
                tlx.barrier_expect_bytes(full[s], BM * BK * 2)
                tlx.async_descriptor_load(x_desc, bufs[s], [0, k * BK], full[s])
        with tlx.async_task(num_warps=4, registers=REGS, replicate=REPLICAS):  # BUG: register-budget
            acc = tl.zeros([BM, BK], tl.float32)
            for k in range(0, K // BK):
                s = k % STAGES
                p = (k // STAGES) & 1
                tlx.barrier_wait(full[s], p)
                acc += tlx.local_load(bufs[s]).to(tl.float32)
                tlx.barrier_arrive(empty[s])
            offs = tl.arange(0, BM)[:, None] * BK + tl.arange(0, BK)[None, :]
            tl.store(out_ptr + tlx.async_task_replica_id() * BM * BK + offs, acc.to(tl.float16))


@triton.jit
def default_task_budget(x_desc, out_ptr, K, BM: tl.constexpr, BK: tl.constexpr, STAGES: tl.constexpr):
    bufs = tlx.local_alloc((BM, BK), tl.float16, STAGES)
    full = tlx.alloc_barriers(STAGES, arrive_count=1)
    empty = tlx.alloc_barriers(STAGES, arrive_count=1)
    with tlx.async_tasks():
        with tlx.async_task("default", registers=40):  # BUG: register-budget
            for k in range(0, K // BK):
                s = k % STAGES
                p = (k // STAGES) & 1
                tlx.barrier_wait(empty[s], p ^ 1)
                tlx.barrier_expect_bytes(full[s], BM * BK * 2)
                tlx.async_descriptor_load(x_desc, bufs[s], [0, k * BK], full[s])
        with tlx.async_task(num_warps=4, registers=232):
            acc = tl.zeros([BM, BK], tl.float32)
            for k in range(0, K // BK):
                s = k % STAGES
                p = (k // STAGES) & 1
                tlx.barrier_wait(full[s], p)
                acc += tlx.local_load(bufs[s]).to(tl.float32)
                tlx.barrier_arrive(empty[s])
            offs = tl.arange(0, BM)[:, None] * BK + tl.arange(0, BK)[None, :]
            tl.store(out_ptr + offs, acc.to(tl.float16))


@triton.jit
def barriers_short_of_the_ring(x_desc, out_ptr, K, BM: tl.constexpr, BK: tl.constexpr, STAGES: tl.constexpr):
    bufs = tlx.local_alloc((BM, BK), tl.float16, STAGES)
    full = tlx.alloc_barriers(STAGES - 1, arrive_count=1)  # one mbarrier short of the ring's slots
    empty = tlx.alloc_barriers(STAGES, arrive_count=1)
    with tlx.async_tasks():
        with tlx.async_task("default"):
            for k in range(0, K // BK):
                s = k % STAGES
                p = (k // STAGES) & 1
                tlx.barrier_wait(empty[s], p ^ 1)
                tlx.barrier_expect_bytes(full[s], BM * BK * 2)
                tlx.async_descriptor_load(x_desc, bufs[s], [0, k * BK], full[s])
        with tlx.async_task(num_warps=4):
            acc = tl.zeros([BM, BK], tl.float32)
            for k in range(0, K // BK):
                s = k % STAGES
                p = (k // STAGES) & 1
                tlx.barrier_wait(full[s], p)
                acc += tlx.local_load(bufs[s]).to(tl.float32)
                tlx.barrier_arrive(empty[s])
            offs = tl.arange(0, BM)[:, None] * BK + tl.arange(0, BK)[None, :]
            tl.store(out_ptr + offs, acc.to(tl.float16))
