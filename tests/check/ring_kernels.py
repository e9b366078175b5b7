"""Small TLX ring kernels for the orchestration checks: correct ones, and one deliberate bug per rule.

A producer task TMA-loads tiles of ``x`` into a ``STAGES``-slot ring (``full`` barriers: data ready;
``empty`` barriers: slot free); a consumer task reads each slot and releases it. Each buggy kernel
differs from a correct one in the line marked ``# BUG: <rule>``: the line its finding must point at.
"""

from __future__ import annotations

import triton
import triton.language as tl
import triton.language.extra.tlx as tlx


@triton.jit
def ring_ok(x_desc, out_ptr, K, BM: tl.constexpr, BK: tl.constexpr, STAGES: tl.constexpr):
    bufs = tlx.local_alloc((BM, BK), tl.float16, STAGES)  # ring slots
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
                acc += tlx.local_load(bufs[s]).to(tl.float32)
                tlx.barrier_arrive(empty[s])
            offs = tl.arange(0, BM)[:, None] * BK + tl.arange(0, BK)[None, :]
            tl.store(out_ptr + offs, acc.to(tl.float16))


@triton.jit
def ring_flip_ok(x_desc, out_ptr, K, BM: tl.constexpr, BK: tl.constexpr, STAGES: tl.constexpr):
    """Correct too: phases kept in variables that flip when the ring wraps (p ^= (s == STAGES - 1))."""
    bufs = tlx.local_alloc((BM, BK), tl.float16, STAGES)
    full = tlx.alloc_barriers(STAGES, arrive_count=1)
    empty = tlx.alloc_barriers(STAGES, arrive_count=2)
    with tlx.async_tasks():
        with tlx.async_task("default"):
            s = 0
            p = 1
            for k in range(0, K // BK):
                tlx.barrier_wait(empty[s], p)
                tlx.barrier_expect_bytes(full[s], BM * BK * 2)
                tlx.async_descriptor_load(x_desc, bufs[s], [0, k * BK], full[s])
                p = p ^ (s == STAGES - 1)
                s = (s + 1) % STAGES
        with tlx.async_task(num_warps=4, replicate=2):
            acc = tl.zeros([BM, BK], tl.float32)
            s = 0
            p = 0
            for _k in range(0, K // BK):
                tlx.barrier_wait(full[s], p)
                acc += tlx.local_load(bufs[s]).to(tl.float32)
                tlx.barrier_arrive(empty[s])
                p = p ^ (s == STAGES - 1)
                s = (s + 1) % STAGES
            offs = tl.arange(0, BM)[:, None] * BK + tl.arange(0, BK)[None, :]
            tl.store(out_ptr + tlx.async_task_replica_id() * BM * BK + offs, acc.to(tl.float16))


@triton.jit
def ring_rewait_ok(x_desc, out_ptr, K, BM: tl.constexpr, BK: tl.constexpr, STAGES: tl.constexpr):
    """Correct too: a per-tile tile ``q`` whose barrier the consumer re-checks inside its K loop with the
    same phase (it releases ``q`` only after the loop, so the phase cannot move under it)."""
    q = tlx.local_alloc((BM, BK), tl.float16, 1)
    bufs = tlx.local_alloc((BM, BK), tl.float16, STAGES)
    q_full = tlx.alloc_barriers(1, arrive_count=1)
    q_empty = tlx.alloc_barriers(1, arrive_count=1)
    full = tlx.alloc_barriers(STAGES, arrive_count=1)
    empty = tlx.alloc_barriers(STAGES, arrive_count=1)
    with tlx.async_tasks():
        with tlx.async_task("default"):
            n = 0
            for tile in range(2):
                tlx.barrier_wait(q_empty[0], (tile & 1) ^ 1)
                tlx.barrier_expect_bytes(q_full[0], BM * BK * 2)
                tlx.async_descriptor_load(x_desc, q[0], [0, 0], q_full[0])
                for k in range(0, K // BK):
                    tlx.barrier_wait(empty[n % STAGES], ((n // STAGES) & 1) ^ 1)
                    tlx.barrier_expect_bytes(full[n % STAGES], BM * BK * 2)
                    tlx.async_descriptor_load(x_desc, bufs[n % STAGES], [0, k * BK], full[n % STAGES])
                    n += 1
        with tlx.async_task(num_warps=4):
            acc = tl.zeros([BM, BK], tl.float32)
            n = 0
            for tile in range(2):
                for _k in range(0, K // BK):
                    tlx.barrier_wait(q_full[0], tile & 1)
                    tlx.barrier_wait(full[n % STAGES], (n // STAGES) & 1)
                    acc += tlx.local_load(bufs[n % STAGES]).to(tl.float32) + tlx.local_load(q[0]).to(tl.float32)
                    tlx.barrier_arrive(empty[n % STAGES])
                    n += 1
                tlx.barrier_arrive(q_empty[0])
            offs = tl.arange(0, BM)[:, None] * BK + tl.arange(0, BK)[None, :]
            tl.store(out_ptr + offs, acc.to(tl.float16))


@triton.jit
def wait_never_completes(x_desc, out_ptr, K, BM: tl.constexpr, BK: tl.constexpr, STAGES: tl.constexpr):
    bufs = tlx.local_alloc((BM, BK), tl.float16, STAGES)
    full = tlx.alloc_barriers(STAGES, arrive_count=1)
    empty = tlx.alloc_barriers(STAGES, arrive_count=1)
    done = tlx.alloc_barriers(1, arrive_count=1)
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
            tlx.barrier_wait(done[0], 0)  # BUG: wait-never-completes
            offs = tl.arange(0, BM)[:, None] * BK + tl.arange(0, BK)[None, :]
            tl.store(out_ptr + offs, acc.to(tl.float16))


@triton.jit
def first_wait_passes(x_desc, out_ptr, K, BM: tl.constexpr, BK: tl.constexpr, STAGES: tl.constexpr):
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
                tlx.barrier_wait(full[s], p ^ 1)  # BUG: first-wait-passes
                acc += tlx.local_load(bufs[s]).to(tl.float32)
                tlx.barrier_arrive(empty[s])
            offs = tl.arange(0, BM)[:, None] * BK + tl.arange(0, BK)[None, :]
            tl.store(out_ptr + offs, acc.to(tl.float16))


@triton.jit
def phase_never_flips(x_desc, out_ptr, K, BM: tl.constexpr, BK: tl.constexpr, STAGES: tl.constexpr):
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
                tlx.barrier_wait(full[s], 0)  # BUG: phase-flip
                acc += tlx.local_load(bufs[s]).to(tl.float32)
                tlx.barrier_arrive(empty[s])
            offs = tl.arange(0, BM)[:, None] * BK + tl.arange(0, BK)[None, :]
            tl.store(out_ptr + offs, acc.to(tl.float16))


@triton.jit
def too_few_arrivals(x_desc, out_ptr, K, BM: tl.constexpr, BK: tl.constexpr, STAGES: tl.constexpr):
    bufs = tlx.local_alloc((BM, BK), tl.float16, STAGES)
    full = tlx.alloc_barriers(STAGES, arrive_count=1)
    empty = tlx.alloc_barriers(STAGES, arrive_count=2)  # BUG: arrive-count
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


@triton.jit
def too_many_arrivals(x_desc, out_ptr, K, BM: tl.constexpr, BK: tl.constexpr, STAGES: tl.constexpr):
    bufs = tlx.local_alloc((BM, BK), tl.float16, STAGES)
    full = tlx.alloc_barriers(STAGES, arrive_count=1)
    empty = tlx.alloc_barriers(STAGES, arrive_count=1)  # BUG: arrive-count
    with tlx.async_tasks():
        with tlx.async_task("default"):
            for k in range(0, K // BK):
                s = k % STAGES
                p = (k // STAGES) & 1
                tlx.barrier_wait(empty[s], p ^ 1)
                tlx.barrier_expect_bytes(full[s], BM * BK * 2)
                tlx.async_descriptor_load(x_desc, bufs[s], [0, k * BK], full[s])
        with tlx.async_task(num_warps=4, replicate=2):
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
def wrong_expect_bytes(x_desc, out_ptr, K, BM: tl.constexpr, BK: tl.constexpr, STAGES: tl.constexpr):
    bufs = tlx.local_alloc((BM, BK), tl.float16, STAGES)
    full = tlx.alloc_barriers(STAGES, arrive_count=1)
    empty = tlx.alloc_barriers(STAGES, arrive_count=1)
    with tlx.async_tasks():
        with tlx.async_task("default"):
            for k in range(0, K // BK):
                s = k % STAGES
                p = (k // STAGES) & 1
                tlx.barrier_wait(empty[s], p ^ 1)
                tlx.barrier_expect_bytes(full[s], BM * BK * 4)  # BUG: expect-bytes
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
def producer_waits_phase0(x_desc, out_ptr, K, BM: tl.constexpr, BK: tl.constexpr, STAGES: tl.constexpr):
    bufs = tlx.local_alloc((BM, BK), tl.float16, STAGES)
    full = tlx.alloc_barriers(STAGES, arrive_count=1)
    empty = tlx.alloc_barriers(STAGES, arrive_count=1)
    with tlx.async_tasks():
        with tlx.async_task("default"):
            for k in range(0, K // BK):
                s = k % STAGES
                p = (k // STAGES) & 1
                tlx.barrier_wait(empty[s], p)  # BUG: hang
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
def reads_unfilled_slot(x_desc, out_ptr, K, BM: tl.constexpr, BK: tl.constexpr, STAGES: tl.constexpr):
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
                acc += tlx.local_load(bufs[s]).to(tl.float32)  # BUG: read-before-write
                tlx.barrier_arrive(empty[s])
            offs = tl.arange(0, BM)[:, None] * BK + tl.arange(0, BK)[None, :]
            tl.store(out_ptr + offs, acc.to(tl.float16))


@triton.jit
def reads_unwritten_buffer(x_desc, out_ptr, K, BM: tl.constexpr, BK: tl.constexpr, STAGES: tl.constexpr):
    bufs = tlx.local_alloc((BM, BK), tl.float16, STAGES)
    bias = tlx.local_alloc((BM, BK), tl.float16, 1)
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
            acc = tlx.local_load(bias[0]).to(tl.float32)  # BUG: unwritten-buffer
            for k in range(0, K // BK):
                s = k % STAGES
                p = (k // STAGES) & 1
                tlx.barrier_wait(full[s], p)
                acc += tlx.local_load(bufs[s]).to(tl.float32)
                tlx.barrier_arrive(empty[s])
            offs = tl.arange(0, BM)[:, None] * BK + tl.arange(0, BK)[None, :]
            tl.store(out_ptr + offs, acc.to(tl.float16))


@triton.jit
def narrowing_store(x_desc, out_ptr, K, BM: tl.constexpr, BK: tl.constexpr, STAGES: tl.constexpr):
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
                acc += tlx.local_load(bufs[s]).to(tl.float32)
                tlx.barrier_arrive(empty[s])
            offs = tl.arange(0, BM)[:, None] * BK + tl.arange(0, BK)[None, :]
            tl.store(out_ptr + offs, acc)  # BUG: narrowing-store


@triton.jit
def mma_ring(a_desc, b_desc, c_desc, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
             STAGES: tl.constexpr, EARLY_RELEASE: tl.constexpr):
    """A GEMM ring: wgmma reads both slots; EARLY_RELEASE frees the slot before the MMA is done."""
    a = tlx.local_alloc((BM, BK), tl.float16, STAGES)
    b = tlx.local_alloc((BK, BN), tl.float16, STAGES)
    full = tlx.alloc_barriers(STAGES, arrive_count=1)
    empty = tlx.alloc_barriers(STAGES, arrive_count=1)
    with tlx.async_tasks():
        with tlx.async_task("default"):
            for k in range(0, K // BK):
                s = k % STAGES
                p = (k // STAGES) & 1
                tlx.barrier_wait(empty[s], p ^ 1)
                tlx.barrier_expect_bytes(full[s], (BM * BK + BK * BN) * 2)
                tlx.async_descriptor_load(a_desc, a[s], [0, k * BK], full[s])
                tlx.async_descriptor_load(b_desc, b[s], [k * BK, 0], full[s])  # BUG: slot-reuse
        with tlx.async_task(num_warps=4):
            acc = tl.zeros([BM, BN], tl.float32)
            for k in tl.range(0, K // BK, num_stages=0):  # no compiler pipelining: the waits are ours
                s = k % STAGES
                p = (k // STAGES) & 1
                tlx.barrier_wait(full[s], p)
                acc = tlx.async_dot(a[s], b[s], acc)
                if EARLY_RELEASE:
                    tlx.barrier_arrive(empty[s])  # released before the MMA is done
                    acc = tlx.async_dot_wait(0, acc)
                else:
                    acc = tlx.async_dot_wait(0, acc)
                    tlx.barrier_arrive(empty[s])
            c_desc.store([0, 0], acc.to(tlx.dtype_of(c_desc)))


@triton.jit
def mma_in_flight(a_desc, b_desc, c_desc, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                  STAGES: tl.constexpr, PLAIN_LOOP: tl.constexpr):
    """A GEMM ring that keeps one wgmma in flight (async_dot_wait(1)) and releases the slot of the dot before it.
    In a plain ``range`` loop Triton waits for each dot as soon as it is issued; ``tl.range(..., num_stages=0)``
    leaves the waits to the kernel."""
    a = tlx.local_alloc((BM, BK), tl.float16, STAGES)
    b = tlx.local_alloc((BK, BN), tl.float16, STAGES)
    full = tlx.alloc_barriers(STAGES, arrive_count=1)
    empty = tlx.alloc_barriers(STAGES, arrive_count=1)
    with tlx.async_tasks():
        with tlx.async_task("default"):
            for k in range(0, K // BK):
                s = k % STAGES
                tlx.barrier_wait(empty[s], ((k // STAGES) & 1) ^ 1)
                tlx.barrier_expect_bytes(full[s], (BM * BK + BK * BN) * 2)
                tlx.async_descriptor_load(a_desc, a[s], [0, k * BK], full[s])
                tlx.async_descriptor_load(b_desc, b[s], [k * BK, 0], full[s])
        with tlx.async_task(num_warps=4):
            acc = tl.zeros([BM, BN], tl.float32)
            if PLAIN_LOOP:
                for k in range(0, K // BK):
                    s = k % STAGES
                    tlx.barrier_wait(full[s], (k // STAGES) & 1)
                    acc = tlx.async_dot(a[s], b[s], acc)  # BUG: dot-waited-at-issue
                    acc = tlx.async_dot_wait(1, acc)  # the wait the kernel meant
                    if k > 0:
                        tlx.barrier_arrive(empty[(k - 1) % STAGES])
            else:
                for k in tl.range(0, K // BK, num_stages=0):
                    s = k % STAGES
                    tlx.barrier_wait(full[s], (k // STAGES) & 1)
                    acc = tlx.async_dot(a[s], b[s], acc)
                    acc = tlx.async_dot_wait(1, acc)
                    if k > 0:
                        tlx.barrier_arrive(empty[(k - 1) % STAGES])
            acc = tlx.async_dot_wait(0, acc)
            c_desc.store([0, 0], acc.to(tlx.dtype_of(c_desc)))


@triton.jit
def too_much_smem(x_desc, out_ptr, K, BM: tl.constexpr, BK: tl.constexpr, STAGES: tl.constexpr):
    bufs = tlx.local_alloc((BM, BK), tl.float16, STAGES)  # BUG: smem-limit
    full = tlx.alloc_barriers(1, arrive_count=1)
    tlx.barrier_expect_bytes(full[0], BM * BK * 2)
    tlx.async_descriptor_load(x_desc, bufs[STAGES - 1], [0, 0], full[0])
    tlx.barrier_wait(full[0], 0)
    offs = tl.arange(0, BM)[:, None] * BK + tl.arange(0, BK)[None, :]
    tl.store(out_ptr + offs, tlx.local_load(bufs[STAGES - 1]))


@triton.jit
def roles_without_async_tasks(x_desc, out_ptr, K, BM: tl.constexpr, BK: tl.constexpr, STAGES: tl.constexpr):
    bufs = tlx.local_alloc((BM, BK), tl.float16, STAGES)
    full = tlx.alloc_barriers(STAGES, arrive_count=1)
    empty = tlx.alloc_barriers(STAGES, arrive_count=1)
    with tlx.async_task("default"):  # BUG: task-outside-tasks
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


@triton.jit
def expects_on_the_next_slot(x_desc, out_ptr, K, BM: tl.constexpr, BK: tl.constexpr, STAGES: tl.constexpr):
    bufs = tlx.local_alloc((BM, BK), tl.float16, STAGES)
    full = tlx.alloc_barriers(STAGES, arrive_count=1)
    empty = tlx.alloc_barriers(STAGES, arrive_count=1)
    with tlx.async_tasks():
        with tlx.async_task("default"):
            for k in range(0, K // BK):
                s = k % STAGES
                p = (k // STAGES) & 1
                tlx.barrier_wait(empty[s], p ^ 1)
                tlx.barrier_expect_bytes(full[(s + 1) % STAGES], BM * BK * 2)  # the next slot's barrier
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
def expects_once_before_the_loop(x_desc, out_ptr, K, BM: tl.constexpr, BK: tl.constexpr, STAGES: tl.constexpr):
    bufs = tlx.local_alloc((BM, BK), tl.float16, STAGES)
    full = tlx.alloc_barriers(STAGES, arrive_count=1)
    empty = tlx.alloc_barriers(STAGES, arrive_count=1)
    with tlx.async_tasks():
        with tlx.async_task("default"):
            tlx.barrier_expect_bytes(full[1], BM * BK * 2)  # once, on another slot's barrier
            for k in range(0, K // BK):
                s = k % STAGES
                p = (k // STAGES) & 1
                tlx.barrier_wait(empty[s], p ^ 1)
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
