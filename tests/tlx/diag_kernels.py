"""Small TLX kernels that break one rule each; the offending line carries the marker ``# ERR``."""

from __future__ import annotations

import triton.language as tl

from workbench import tlx


@tlx.jit
def task_outside(x_ptr, BLOCK: tl.constexpr):
    with tlx.async_task(num_warps=4):  # ERR
        tl.store(x_ptr + tl.arange(0, BLOCK), tl.zeros((BLOCK,), tl.float32))


@tlx.jit
def replica_outside(x_ptr, BLOCK: tl.constexpr):
    bufs = tlx.local_alloc((BLOCK,), tl.float32, 1)
    with tlx.async_tasks():
        with tlx.async_task("default"):
            tlx.local_store(bufs[0], tl.zeros((BLOCK,), tl.float32))
        with tlx.async_task(num_warps=4):
            rid = tlx.async_task_replica_id()  # ERR
            tl.store(x_ptr + rid, 1.0)


@tlx.jit
def too_many_warps(x_ptr, BLOCK: tl.constexpr):
    with tlx.async_tasks():  # ERR
        with tlx.async_task("default"):
            tl.store(x_ptr + tl.arange(0, BLOCK), tl.zeros((BLOCK,), tl.float32))
        with tlx.async_task(num_warps=8, replicate=4):
            tl.store(x_ptr + tl.arange(0, BLOCK), tl.zeros((BLOCK,), tl.float32))


@tlx.jit
def index_out_of_range(x_ptr, BLOCK: tl.constexpr):
    bufs = tlx.local_alloc((BLOCK,), tl.float32, 2)
    tlx.local_store(bufs[2], tl.zeros((BLOCK,), tl.float32))  # ERR


@tlx.jit
def dot_b_in_registers(c_ptr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    a = tlx.local_alloc((BM, BK), tl.bfloat16, 1)
    b = tl.zeros((BK, BN), tl.bfloat16)
    acc = tlx.async_dot(a[0], b)  # ERR
    acc = tlx.async_dot_wait(0, acc)
    tl.store(c_ptr + tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :], acc)


@tlx.jit
def dot_shape_mismatch(c_ptr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    a = tlx.local_alloc((BM, BK), tl.bfloat16, 1)
    b = tlx.local_alloc((BK * 2, BN), tl.bfloat16, 1)
    acc = tlx.async_dot(a[0], b[0])  # ERR
    acc = tlx.async_dot_wait(0, acc)
    tl.store(c_ptr + tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :], acc)


@tlx.jit
def dot_dtype_mismatch(c_ptr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    a = tlx.local_alloc((BM, BK), tl.bfloat16, 1)
    b = tlx.local_alloc((BK, BN), tl.float16, 1)
    acc = tlx.async_dot(a[0], b[0])  # ERR
    acc = tlx.async_dot_wait(0, acc)
    tl.store(c_ptr + tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :], acc)


@tlx.jit
def expect_bytes_mismatch(a_desc, BM: tl.constexpr, BK: tl.constexpr):
    bufs = tlx.local_alloc((BM, BK), tl.bfloat16, 2)
    bars = tlx.alloc_barriers(1)
    tlx.barrier_expect_bytes(bars[0], BM * BK * 2)  # ERR
    tlx.async_descriptor_load(a_desc, bufs[0], [0, 0], bars[0])
    tlx.async_descriptor_load(a_desc, bufs[1], [0, BK], bars[0])
    tlx.barrier_wait(bars[0], 0)


@tlx.jit
def smem_over_limit(x_ptr, BM: tl.constexpr, BK: tl.constexpr):
    a = tlx.local_alloc((BM, BK), tl.bfloat16, 8)  # ERR
    b = tlx.local_alloc((BM, BK), tl.bfloat16, 2)
    tlx.local_store(a[0], tlx.local_load(b[0]))


@tlx.jit
def unsupported_tl_dot(c_ptr, BM: tl.constexpr):
    offs = tl.arange(0, BM)
    x = tl.load(c_ptr + offs[:, None] * BM + offs[None, :])
    y = tl.dot(x, x)  # ERR
    tl.store(c_ptr + offs[:, None] * BM + offs[None, :], y)


@tlx.jit
def unsupported_remote_arrive(x_ptr):
    bars = tlx.alloc_barriers(1)
    tlx.barrier_arrive(bars[0], 1, remote_cta_rank=1)  # ERR


@tlx.jit
def register_tensor_into_task(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    with tlx.async_tasks():
        with tlx.async_task("default"):
            tl.store(x_ptr + offs, 1.0)
        with tlx.async_task(num_warps=4):
            tl.store(x_ptr + offs, 2.0)  # ERR


@tlx.jit
def statement_between_tasks(x_ptr, BLOCK: tl.constexpr):
    with tlx.async_tasks():
        with tlx.async_task("default"):
            tl.store(x_ptr + tl.arange(0, BLOCK), 1.0)
        tl.store(x_ptr, 2.0)  # ERR
