"""Two ops whose correct kernels a judge once rejected (found on Liger-Kernel's rope and cross entropy on the H100):
- ``rotate``: the table's two halves are equal by construction (as rotary cos/sin tables are) and the kernel reads
  only the first half: refilling the inputs with random values breaks that, so fresh inputs must come from the
  input maker;
- ``total``: the output is a 0-dim tensor (a loss);
- ``mean16``: a bfloat16 mean of values near 10: two fresh batches round to the same output (correctly: it is not a
  cached result);
- ``tf32mm``: an fp32 matmul whose dot rounds its operands to tf32 (rounded by hand too, so that Triton's
  interpreter, which multiplies in full fp32, shows the error a GPU shows): every check of it, the in-place refill's
  too, must use the tf32 rule its TTIR asks for."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

HALF = 16


def rotate_inputs(shape, seed, device):
    (rows,) = shape
    g = torch.Generator(device="cpu").manual_seed(seed)
    half = torch.rand(HALF, generator=g) + 0.5
    return torch.randn(rows, 2 * HALF, generator=g).to(device), torch.cat([half, half]).to(device)


def rotate_reference(x, table):
    return x * table


@triton.jit
def _rotate_kernel(x_ptr, t_ptr, y_ptr, HALF: tl.constexpr):
    row = tl.program_id(0)
    h = tl.arange(0, HALF)
    t = tl.load(t_ptr + h)  # the first half only: the second is the same
    tl.store(y_ptr + row * 2 * HALF + h, tl.load(x_ptr + row * 2 * HALF + h) * t)
    tl.store(y_ptr + row * 2 * HALF + HALF + h, tl.load(x_ptr + row * 2 * HALF + HALF + h) * t)


def rotate(x, table):
    y = torch.empty_like(x)
    _rotate_kernel[(x.shape[0],)](x, table, y, HALF=HALF)
    return y


def total_inputs(shape, seed, device):
    (n,) = shape
    g = torch.Generator(device="cpu").manual_seed(seed)
    return (torch.randn(n, generator=g).to(device),)


def total_reference(x):
    return x.sum()


@triton.jit
def _total_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr, tl.sum(tl.load(x_ptr + offs, mask=offs < n, other=0.0), axis=0))


def total(x):
    y = torch.empty((), dtype=x.dtype, device=x.device)
    _total_kernel[(1,)](x, y, x.numel(), BLOCK=triton.next_power_of_2(x.numel()))
    return y


def mean16_inputs(shape, seed, device):
    (n,) = shape
    g = torch.Generator(device="cpu").manual_seed(seed)
    v = torch.randn(n, generator=g)
    return ((10 + 0.2 * (v - v.mean())).to(torch.bfloat16).to(device),)  # other values, a mean that rounds to 10


def mean16_reference(x):
    return x.float().mean().to(x.dtype)


@triton.jit
def _mean_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0).to(tl.float32)
    tl.store(y_ptr, (tl.sum(x, axis=0) / n).to(y_ptr.dtype.element_ty))


def mean16(x):
    y = torch.empty((), dtype=x.dtype, device=x.device)
    _mean_kernel[(1,)](x, y, x.numel(), BLOCK=triton.next_power_of_2(x.numel()))
    return y


def tf32mm_inputs(shape, seed, device):
    (m,) = shape
    g = torch.Generator(device="cpu").manual_seed(seed)
    return torch.randn(m, 32, generator=g).to(device), torch.randn(32, 32, generator=g).to(device)


def tf32mm_reference(a, b):
    return a @ b


@triton.jit
def _tf32_kernel(a_ptr, b_ptr, c_ptr, m, BM: tl.constexpr, K: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    k = tl.arange(0, K)
    a = tl.load(a_ptr + rows[:, None] * K + k[None, :], mask=rows[:, None] < m, other=0.0)
    b = tl.load(b_ptr + k[:, None] * K + k[None, :])
    a = (a.to(tl.int32, bitcast=True) & -8192).to(tl.float32, bitcast=True)  # tf32: 10 mantissa bits
    b = (b.to(tl.int32, bitcast=True) & -8192).to(tl.float32, bitcast=True)
    c = tl.dot(a, b, input_precision="tf32")
    tl.store(c_ptr + rows[:, None] * K + k[None, :], c, mask=rows[:, None] < m)


def tf32mm(a, b):
    c = torch.empty(a.shape[0], b.shape[1], dtype=a.dtype, device=a.device)
    _tf32_kernel[(triton.cdiv(a.shape[0], 16),)](a, b, c, a.shape[0], BM=16, K=32)
    return c
