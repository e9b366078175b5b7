"""Plain Triton kernels for the interpreter tests: one calls device functions (``tl.cdiv`` lives in
``triton.language.standard``, whose module sees ``tl.core``), two multiply with ``tl.dot``, one adds
elementwise, one sums; one stores past its tensor's end, one loops long enough to be stopped or crashed while
it runs (lines marked ``# OOB``, ``# LOOP``)."""

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


@triton.jit
def unmasked_double(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs) * 2)  # OOB


@triton.jit
def long_loop(x_ptr, y_ptr, ITERS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.float32)
    for _ in range(ITERS):  # LOOP
        acc += tl.load(x_ptr + offs)  # LOOP
    tl.store(y_ptr + offs, acc)


def lines_marked(fn, mark: str) -> list[int]:
    """The file's line numbers of ``fn``'s lines that end with ``# mark``."""
    import inspect

    lines, first = inspect.getsourcelines(fn.fn)
    return [first + i for i, ln in enumerate(lines) if ln.rstrip().endswith(f"# {mark}")]
