"""Kernels the search tests compile and run: a vector kernel with a deliberate wrong answer and an invalid block,
and a TLX ring whose ``BUG`` constexpr switches in a slot nobody frees (1: a hang), the producer's phase in the
consumer's first wait (2: a fault on the H200, README TLX facts), a slot released before it is read (3: a race
that plain runs rarely show: the stress run's case), no wait for the data (4) or an expect-bytes of half the copy
(5): the racy set of tests/search/racy_kernels.py takes 3, 4 and 5."""

from __future__ import annotations

import triton
import triton.language as tl
import triton.language.extra.tlx as tlx


@triton.jit
def scale(x_ptr, y_ptr, n, BLOCK: tl.constexpr, WRONG: tl.constexpr = 0):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    if WRONG:
        tl.store(y_ptr + offs, x * 3, mask=m)
    else:
        tl.store(y_ptr + offs, x * 2, mask=m)


@triton.jit
def ring_sum(x_desc, out_ptr, K, BM: tl.constexpr, BK: tl.constexpr, STAGES: tl.constexpr, BUG: tl.constexpr = 0):
    bufs = tlx.local_alloc((BM, BK), tl.float16, STAGES)
    full = tlx.alloc_barriers(STAGES, arrive_count=1)
    empty = tlx.alloc_barriers(STAGES, arrive_count=1)
    with tlx.async_tasks():
        with tlx.async_task("default"):
            for k in range(0, K // BK):
                s = k % STAGES
                p = (k // STAGES) & 1
                tlx.barrier_wait(empty[s], p ^ 1)
                if BUG == 5:  # BUG 5: expects half the bytes the copy brings
                    tlx.barrier_expect_bytes(full[s], BM * BK)
                else:
                    tlx.barrier_expect_bytes(full[s], BM * BK * 2)
                tlx.async_descriptor_load(x_desc, bufs[s], [0, k * BK], full[s])
        with tlx.async_task(num_warps=4):
            acc = tl.zeros([BM, BK], tl.float32)
            for k in range(0, K // BK):
                s = k % STAGES
                p = (k // STAGES) & 1
                if BUG == 2:
                    tlx.barrier_wait(full[s], p ^ 1)  # BUG 2: the producer's phase
                elif BUG != 4:  # BUG 4: no wait for the data at all
                    tlx.barrier_wait(full[s], p)
                if BUG == 3:  # BUG 3: the slot released before it is read (a write-after-read race)
                    tlx.barrier_arrive(empty[s])
                acc += tlx.local_load(bufs[s]).to(tl.float32)
                if BUG != 1 and BUG != 3:  # BUG 1: the slot is never freed
                    tlx.barrier_arrive(empty[s])  # slot free again
            offs = tl.arange(0, BM)[:, None] * BK + tl.arange(0, BK)[None, :]
            tl.store(out_ptr + offs, acc.to(tl.float16))


class ExitOnLoad:
    """A constexpr value whose unpickling ends the process: a compile worker that dies under its task (the
    compiler's own aborts are guarded now: workbench.compile.plugin_reach)."""

    def __reduce__(self):
        import os

        return os._exit, (3,)
