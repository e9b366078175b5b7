"""The tests' sample kernels, one copy of each: real kernels the compile tests build for sm_90 (tests find lines by
searching this file's text), and ``kernel_text`` for the tests that put one into a ``%%tlx`` cell."""

from pathlib import Path

import torch
import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier, tma, warpgroup_mma


@triton.jit
def vector_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    y = tl.load(y_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x + y, mask=mask)


@triton.jit
def softmax(out_ptr, in_ptr, in_stride, out_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(in_ptr + row * in_stride + cols, mask=cols < n_cols, other=-float("inf"))
    z = x - tl.max(x, axis=0)
    num = tl.exp(z)
    tl.store(out_ptr + row * out_stride + cols, num / tl.sum(num, axis=0), mask=cols < n_cols)


@triton.jit
def _scale(x, s):
    return x * s


@triton.jit
def matmul(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_bk, stride_cm,
           BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    rm = pid_m * BM + tl.arange(0, BM)
    rn = pid_n * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(a_ptr + rm[:, None] * stride_am + (k + rk)[None, :], mask=(k + rk)[None, :] < K, other=0.0)
        b = tl.load(b_ptr + (k + rk)[:, None] * stride_bk + rn[None, :], mask=(k + rk)[:, None] < K, other=0.0)
        acc = tl.dot(a, b, acc)
    acc = _scale(acc, 0.5)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    tl.store(c_ptr + rm[:, None] * stride_cm + rn[None, :], acc.to(tl.float16), mask=mask)


@gluon.jit
def gluon_wgmma_tma(a_desc, b_desc, c_desc, K):
    BM: gl.constexpr = a_desc.block_type.shape[0]
    BK: gl.constexpr = a_desc.block_type.shape[1]
    BN: gl.constexpr = b_desc.block_type.shape[1]
    pid_m = gl.program_id(0)
    pid_n = gl.program_id(1)
    a_s = gl.allocate_shared_memory(a_desc.dtype, [BM, BK], a_desc.layout)
    b_s = gl.allocate_shared_memory(b_desc.dtype, [BK, BN], b_desc.layout)
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    mma: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[gl.num_warps(), 1],
                                                  instr_shape=[16, BN, 16])
    acc = gl.zeros((BM, BN), gl.float32, mma)
    phase = 0
    for k in range(0, K, BK):
        mbarrier.expect(bar, a_desc.block_type.nbytes + b_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(a_desc, [pid_m * BM, k], bar, a_s)
        tma.async_copy_global_to_shared(b_desc, [k, pid_n * BN], bar, b_s)
        mbarrier.wait(bar, phase)
        phase ^= 1
        acc = warpgroup_mma(a_s, b_s, acc)
    mbarrier.invalidate(bar)
    c_s = gl.allocate_shared_memory(c_desc.dtype, [BM, BN], c_desc.layout)
    c_s.store(acc.to(c_desc.dtype))
    fence_async_shared()
    tma.async_copy_shared_to_global(c_desc, [pid_m * BM, pid_n * BN], c_s)
    tma.store_wait(0)


def gluon_descriptors(M=256, N=256, K=256, BM=128, BN=128, BK=64):
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

    a = torch.empty(M, K, dtype=torch.float16)
    b = torch.empty(K, N, dtype=torch.float16)
    c = torch.empty(M, N, dtype=torch.float16)

    def desc(t, block):
        layout = gl.NVMMASharedLayout.get_default_for(block, gl.float16)
        return TensorDescriptor.from_tensor(t, block, layout)

    return desc(a, [BM, BK]), desc(b, [BK, BN]), desc(c, [BM, BN])


def kernel_text(name: str, path: str | Path | None = None) -> str:
    """The text of kernel ``name`` in this file (or in the file ``path``, e.g. :data:`RING_KERNELS`), from its
    decorator to its last line, as a cell holds it."""
    lines = Path(path or __file__).read_text().splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith(f"def {name}(")) - 1
    end = next((i for i in range(start, len(lines)) if not lines[i].strip()), len(lines))
    return "\n".join(lines[start:end]) + "\n"


RING_KERNELS = Path(__file__).parent / "check" / "ring_kernels.py"  #: the orchestration checks' ring kernels


def line_of(fragment: str, after: str | None = None) -> int:
    """1-based line in this file of the first line containing ``fragment`` (after ``after``)."""
    lines = open(__file__).read().splitlines()
    start = 0
    if after is not None:
        start = next(i for i, ln in enumerate(lines) if after in ln)
    return next(i for i, ln in enumerate(lines) if i >= start and fragment in ln) + 1


@triton.jit
def broken_shapes(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    other = tl.arange(0, BLOCK * 2)
    tl.store(x_ptr + offs, offs + other)


@triton.jit
def broken_name(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, undefined_thing)  # noqa: F821


@triton.jit
def block_ptr_element_type(x_ptr, y_ptr, n, BLOCK: tl.constexpr):  # as FlagGems 5.0.2's pointwise kernels write
    xb = tl.make_block_ptr(x_ptr, shape=(n,), strides=(1,), offsets=(0,), block_shape=(BLOCK,), order=(0,))
    yb = tl.make_block_ptr(y_ptr, shape=(n,), strides=(1,), offsets=(0,), block_shape=(BLOCK,), order=(0,))
    v = tl.load(xb, boundary_check=(0,))
    tl.store(yb, v.to(yb.type.element_ty), boundary_check=(0,))


@triton.jit
def double_unmasked(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * 1024 + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs) * 2)


def oob_check_cell() -> str:
    """Issue 25's crash: an unmasked kernel launched on twice its tensors' size, under --check (the store at cell
    line 6). Its tensors: ``x``, ``y`` of 1024 floats."""
    launch = "\ndouble_unmasked[(2,)](x, y, 1024, BLOCK=1024)"
    return '%%tlx --check "y: x * 2"\n' + kernel_text("double_unmasked") + launch
