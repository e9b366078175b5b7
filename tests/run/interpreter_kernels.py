"""Plain Triton kernels for the interpreter tests: one calls device functions (``tl.cdiv`` lives in
``triton.language.standard``, whose module sees ``tl.core``), two multiply with ``tl.dot``, one adds
elementwise, one sums."""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def twice(v):
    return v * 2


@triton.jit
def helper_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    blocks = tl.cdiv(n, BLOCK)
    tl.store(out_ptr + offs, twice(tl.load(x_ptr + offs, mask=mask)) + blocks, mask=mask)


@triton.jit
def failing_kernel(x_ptr, BLOCK: tl.constexpr):
    tl.static_assert(tl.cdiv(BLOCK, 2) == 0, "fails on purpose")
    tl.store(x_ptr + tl.arange(0, BLOCK), 0.0)


@triton.jit
def dot_kernel(a_ptr, b_ptr, c_ptr, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    rm, rn, rk = tl.arange(0, M), tl.arange(0, N), tl.arange(0, K)
    a = tl.load(a_ptr + rm[:, None] * K + rk[None, :])
    b = tl.load(b_ptr + rk[:, None] * N + rn[None, :])
    c = tl.dot(a, b)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], c.to(c_ptr.dtype.element_ty))


@triton.jit
def desc_gemm(a_desc, b_desc, c_desc, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        acc = tl.dot(a_desc.load([pid_m * BM, k * BK]), b_desc.load([k * BK, pid_n * BN]), acc)
    c_desc.store([pid_m * BM, pid_n * BN], acc.to(c_desc.dtype))


@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) + tl.load(y_ptr + offs))


@triton.jit
def sum_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    tl.store(out_ptr, tl.sum(tl.load(x_ptr + tl.arange(0, BLOCK)), axis=0))
