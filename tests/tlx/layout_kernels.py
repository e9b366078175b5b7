"""Kernels that override inferred layouts with layout=."""

from __future__ import annotations

import triton.experimental.gluon.language as gl
import triton.language as tl

from workbench import tlx

MY_BLOCKED = gl.constexpr(gl.BlockedLayout([1, 4], [8, 4], [4, 1], [1, 0]))
MY_SHARED = gl.constexpr(gl.SwizzledSharedLayout(8, 1, 8, [1, 0]))


@tlx.jit
def overrides(x_ptr, y_ptr, BM: tl.constexpr, BN: tl.constexpr):
    offs_m = tl.arange(0, BM)
    offs_n = tl.arange(0, BN)
    ptrs = offs_m[:, None] * BN + offs_n[None, :]
    x = tl.load(x_ptr + ptrs)
    buf = tlx.local_alloc((BM, BN), tl.float32, 1, layout=MY_SHARED)
    tlx.local_store(buf[0], x)
    z = tl.zeros((BM, BN), tl.float32, layout=MY_BLOCKED)
    y = tlx.local_load(buf[0], layout=MY_BLOCKED) + z
    tl.store(y_ptr + ptrs, y)


@tlx.jit
def tma_into_overridden_buffer(a_desc, BM: tl.constexpr, BK: tl.constexpr):
    bufs = tlx.local_alloc((BM, BK), tl.bfloat16, 1, layout=MY_SHARED)
    bars = tlx.alloc_barriers(1)
    tlx.barrier_expect_bytes(bars[0], BM * BK * 2)
    tlx.async_descriptor_load(a_desc, bufs[0], [0, 0], bars[0])  # ERR
    tlx.barrier_wait(bars[0], 0)
