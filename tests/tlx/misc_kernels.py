"""A kernel touching the small helpers: named barriers, thread_id, clock64, local_trans/slice."""

from __future__ import annotations

import triton.language as tl

from workbench import tlx


@tlx.jit
def misc(x_ptr, BM: tl.constexpr, BK: tl.constexpr):
    a = tlx.local_alloc((BM, BK), tl.bfloat16, 1)
    b = tlx.local_alloc((BM, BK), tl.bfloat16, 1)
    tlx.named_barrier_arrive(9, 256)
    tlx.named_barrier_wait(9, 256)
    t = tlx.thread_id(0)
    c0 = tlx.clock64()
    acc = tlx.async_dot(a[0], tlx.local_trans(b[0]))
    acc = tlx.async_dot_wait(0, acc)
    s = tlx.local_slice(a[0], [0, 0], [BM // 2, BK])
    v = tlx.local_load(s)
    offs = tl.arange(0, BM)
    tl.store(x_ptr + offs, tl.sum(acc, axis=1) + t + (tlx.clock64() - c0).to(tl.float32))
    tl.store(x_ptr + tl.arange(0, BM // 2), tl.max(v.to(tl.float32), axis=1))
