"""Shared pieces of the GEMM library: shapes, operand views for TMA, descriptors, reference and error.

It also re-exports the device helpers (:mod:`.device`), the configs (:mod:`.tuning`), the GPU's facts
(:mod:`tlx_kernels.hopper`), the tuner (:mod:`tlx_kernels.tuner`) and the relative error
(:mod:`tlx_kernels.accuracy`), so kernels and scripts use one name, ``common`` (``C``).

Operands may be row-major (``x.stride(1) == 1``) or column-major (``x.stride(0) == 1``, i.e. the
transpose of a row-major tensor). TMA reads the underlying row-major storage: for a column-major
``A`` (``M x K``) that is ``A.T`` (``K x M``), loaded as ``[BK, BM]`` tiles and transposed in shared
memory (``tlx.local_trans``) for wgmma; likewise ``B.T`` (``N x K``) for a column-major ``B``. TMA needs
16-byte aligned row strides; storage that is not is copied once into padded storage (the logical
shape is unchanged: TMA zero-fills out-of-bounds reads and clips out-of-bounds writes, so shapes that
are not multiples of the tiles need no masks).

Nothing here imports the workbench: the library stands on Triton, TLX (``triton-utlx``) and torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import triton
from triton.tools.tensor_descriptor import TensorDescriptor

from tlx_kernels.accuracy import rel_err
from tlx_kernels.gemm.device import operand, store_tile, tile_coords
from tlx_kernels.gemm.tuning import check_config, config_name, feasible, problem_key, smem_bytes, variants
from tlx_kernels.hopper import H200_SMS, SMEM_LIMIT, num_sms
from tlx_kernels.tuner import Tuner, bench_ms

# Benchmark shapes (M, N, K): the cubes (the quick set first), then rectangles: tall, wide, small K, large K,
# skinny M. Multiples of 16 (like most model shapes): operands go to TMA as they are.
BENCH_SHAPES: list[tuple[int, int, int]] = [
    (8192, 8192, 8192),
    (4096, 4096, 4096),
    (2048, 2048, 2048),
    (1024, 1024, 1024),
    (16384, 1024, 4096),  # tall
    (1024, 16384, 4096),  # wide
    (8192, 8192, 1024),  # small K
    (8192, 4096, 512),
    (2048, 2048, 16384),  # large K
    (1024, 1024, 8192),
    (512, 8192, 8192),  # skinny M
]
QUICK_SHAPES: list[tuple[int, int, int]] = BENCH_SHAPES[:3]
# Shapes for correctness tests: odd sizes (no multiple of any tile; 4095 and 777 make row strides that TMA cannot
# read, so an operand is copied into padded storage), then a large one.
ODD_SHAPES: list[tuple[int, int, int]] = [(1000, 1000, 1000), (4095, 4095, 4095), (4095, 1000, 4096),
                                          (1000, 4095, 2048), (1000, 1500, 777), (3000, 200, 5000)]
TEST_SHAPES: list[tuple[int, int, int]] = [*ODD_SHAPES, (4096, 4096, 4096)]

# ------------------------------------------------------------------------------------------------
# operands
# ------------------------------------------------------------------------------------------------


def _aligned(stride: int, elem: int) -> bool:
    return (stride * elem) % 16 == 0


def _padded_copy(t2d):
    """Row-major copy of a 2-D tensor with its row stride padded to 16 bytes (a view of the logical shape)."""
    import torch

    rows, cols = t2d.shape
    per16 = 16 // t2d.element_size()
    padded = -(-cols // per16) * per16
    store = torch.empty(rows, padded, dtype=t2d.dtype, device=t2d.device)
    view = store[:, :cols]
    view.copy_(t2d)
    return view


def tma_operand(x) -> tuple[Any, bool]:
    """(row-major 2-D storage TMA can read, transposed?) for a row- or column-major matrix ``x``.

    ``transposed`` is True when the storage is ``x.T`` (``x`` column-major). Anything else (a
    non-unit inner stride, a misaligned row stride) is copied into padded row-major storage.
    """
    if x.dim() != 2:
        raise ValueError(f"expected a 2-D matrix, got shape {tuple(x.shape)}")
    e = x.element_size()
    if x.stride(1) == 1 and _aligned(x.stride(0), e) and x.data_ptr() % 16 == 0:
        return x, False
    if x.stride(0) == 1 and x.shape[1] > 1 and _aligned(x.stride(1), e) and x.data_ptr() % 16 == 0:
        return x.T, True
    if x.stride(0) == 1 and x.shape[1] > 1:  # column-major but misaligned: keep it column-major
        return _padded_copy(x.T), True
    return _padded_copy(x), False


def empty_out(M: int, N: int, dtype: Any, device: Any, fill: float | None = None):
    """An ``M x N`` output whose row stride is 16-byte aligned (TMA-storable); NaN-filled if asked."""
    import torch

    per16 = 16 // dtype.itemsize
    padded = -(-N // per16) * per16
    if fill is None and padded == N:
        return torch.empty((M, N), dtype=dtype, device=device)
    if fill is None:
        store = torch.empty((M, padded), dtype=dtype, device=device)
    else:
        store = torch.full((M, padded), fill, dtype=dtype, device=device)
    return store[:, :N]


def new_out(a, b):
    """The output of ``a @ b`` as :func:`empty_out` makes it, through ``a.new_empty`` when no padding is needed
    (the common case): the public ``matmul``'s per-call allocation, where torch's argument parsing of ``dtype=`` and
    ``device=`` costs about as much as the allocation."""
    M, N = a.shape[0], b.shape[1]
    if _aligned(N, a.element_size()):
        return a.new_empty((M, N))
    return empty_out(M, N, a.dtype, a.device)


def check_operands(a, b) -> tuple[int, int, int]:
    import torch

    if a.dim() != 2 or b.dim() != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"matmul: shapes do not chain: a {tuple(a.shape)}, b {tuple(b.shape)}")
    if a.dtype != b.dtype or a.dtype not in (torch.bfloat16, torch.float16):
        raise TypeError(f"matmul: a and b must both be bf16 or both fp16, got {a.dtype} and {b.dtype}")
    if a.device != b.device:
        raise ValueError(f"matmul: a on {a.device}, b on {b.device}")
    return a.shape[0], b.shape[1], a.shape[1]


@dataclass
class Operands:
    """TMA-ready operands (descriptors are made per config by :func:`ab_descriptors`)."""

    a: Any  # storage of A (A or A.T, row-major)
    b: Any  # storage of B (B or B.T, row-major)
    c: Any  # output M x N, row-major
    a_t: bool
    b_t: bool
    M: int
    N: int
    K: int

    @property
    def empty(self) -> bool:
        """Nothing for a kernel to do: no output elements, or K == 0 (then the output is zeros)."""
        return self.M == 0 or self.N == 0 or self.K == 0


def operands(a, b, out=None) -> Operands:
    """Check and view ``a``/``b`` for TMA and allocate (or check) the output."""
    M, N, K = check_operands(a, b)
    a_s, a_t = tma_operand(a)
    b_s, b_t = tma_operand(b)
    if out is None:
        out = empty_out(M, N, a.dtype, a.device)
    elif (
        tuple(out.shape) != (M, N)
        or out.dtype != a.dtype
        or out.stride(1) != 1
        or not _aligned(out.stride(0), out.element_size())
        or out.data_ptr() % 16
    ):
        raise ValueError(
            "matmul: out must be M x N in the inputs' dtype, row-major, 16-byte aligned with a 16-byte "
            "aligned row stride (common.empty_out makes one)"
        )
    return Operands(a_s, b_s, out, a_t, b_t, M, N, K)


def descriptor(t, block: Sequence[int]) -> TensorDescriptor:
    return TensorDescriptor(t, list(t.shape), list(t.stride()), list(block))


def ab_descriptors(ops: Operands, a_rows: int, BN: int, BK: int) -> tuple[TensorDescriptor, TensorDescriptor]:
    """Descriptors of A (tiles of ``a_rows`` x BK, or BK x ``a_rows`` if transposed) and B (BK x BN / BN x BK)."""
    a_desc = descriptor(ops.a, [BK, a_rows] if ops.a_t else [a_rows, BK])
    b_desc = descriptor(ops.b, [BN, BK] if ops.b_t else [BK, BN])
    return a_desc, b_desc


def tiles_grid(ops: Operands, BM: int, BN: int) -> tuple[int]:
    """One CTA per ``BM x BN`` output tile."""
    return (triton.cdiv(ops.M, BM) * triton.cdiv(ops.N, BN),)


def persistent_grid(ops: Operands, BM: int, BN: int, sms: int | None, device: Any) -> tuple[int]:
    """At most one CTA per SM, never more CTAs than tiles."""
    return (max(1, min(tiles_grid(ops, BM, BN)[0], sms or num_sms(device))),)


def tlx_prepare(a, b, cfg: dict[str, Any], out, kind: str, rows: int, sms: int | None = None,
                persistent: bool = True) -> tuple[tuple, dict[str, Any], tuple[int], Any]:
    """(args, kwargs, grid, out) of one launch of a TLX GEMM with ``cfg`` (checked for ``kind``): descriptors whose
    A and C boxes are ``rows`` rows tall (what one consumer stores: a whole tile, or half of it), and a persistent
    grid (``sms`` overrides the SM count) or one CTA per tile."""
    check_config(cfg, kind)
    ops = operands(a, b, out)
    BM, BN, BK = cfg["BM"], cfg["BN"], cfg["BK"]
    a_desc, b_desc = ab_descriptors(ops, rows, BN, BK)
    c_desc = descriptor(ops.c, [rows, BN // cfg.get("EPI_SPLIT", 1)])
    grid = persistent_grid(ops, BM, BN, sms, a) if persistent else tiles_grid(ops, BM, BN)
    kwargs = dict(cfg, A_T=ops.a_t, B_T=ops.b_t)
    return (a_desc, b_desc, c_desc, ops.M, ops.N, ops.K), kwargs, grid, ops.c


def empty_product(a, b, out=None):
    """The output of a product with nothing to compute (M, N or K is 0: zeros), else None."""
    M, N, K = check_operands(a, b)
    if M and N and K:
        return None
    if out is None:
        out = empty_out(M, N, a.dtype, a.device)
    elif tuple(out.shape) != (M, N):
        raise ValueError(f"matmul: out must be {M} x {N}, got {tuple(out.shape)}")
    return out.zero_()


# ------------------------------------------------------------------------------------------------
# reference and error
# ------------------------------------------------------------------------------------------------


def reference(a, b):
    """fp32-accumulated product in the inputs' dtype (torch.matmul on the GPU, fp32 on the CPU)."""
    if a.is_cuda:
        return a @ b
    return (a.float() @ b.float()).to(a.dtype)


def fp32_tolerance(dtype) -> float:
    """Bound on :func:`rel_err` against the fp32 product: rounding the output to bf16 (fp16) moves an element by at
    most 2^-8 = 3.9e-3 (2^-11 = 4.9e-4) of itself, fp32 summation order adds ~1e-6."""
    import torch

    return 5e-3 if dtype == torch.bfloat16 else 1e-3


def gemm_flops(M: int, N: int, K: int) -> float:
    return 2.0 * M * N * K


__all__ = [
    "BENCH_SHAPES",
    "H200_SMS",
    "ODD_SHAPES",
    "QUICK_SHAPES",
    "SMEM_LIMIT",
    "TEST_SHAPES",
    "ab_descriptors",
    "bench_ms",
    "check_config",
    "check_operands",
    "config_name",
    "descriptor",
    "empty_out",
    "empty_product",
    "feasible",
    "new_out",
    "fp32_tolerance",
    "gemm_flops",
    "num_sms",
    "operand",
    "Operands",
    "operands",
    "persistent_grid",
    "problem_key",
    "reference",
    "rel_err",
    "smem_bytes",
    "store_tile",
    "tile_coords",
    "tiles_grid",
    "tlx_prepare",
    "tma_operand",
    "Tuner",
    "variants",
]
