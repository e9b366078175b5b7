"""Shared pieces of the GEMM library: operand views for TMA, descriptors, configs, tuner, reference, shapes.

Operands may be row-major (``x.stride(1) == 1``) or column-major (``x.stride(0) == 1``, i.e. the
transpose of a row-major tensor). TMA reads the underlying row-major storage: for a column-major
``A`` (``M x K``) that is ``A.T`` (``K x M``), loaded as ``[BK, BM]`` tiles and transposed in shared
memory (``tlx.local_trans``) for wgmma; likewise ``B.T`` (``N x K``) for a column-major ``B``. TMA needs
16-byte aligned row strides; storage that is not is copied once into padded storage (the logical
shape is unchanged: TMA zero-fills out-of-bounds reads and clips out-of-bounds writes, so shapes that
are not multiples of the tiles need no masks).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

# Benchmark shapes of issue 8 (M, N, K); quick set first.
BENCH_SHAPES: list[tuple[int, int, int]] = [
    (8192, 8192, 8192),
    (4096, 4096, 4096),
    (2048, 2048, 2048),
    (8192, 8192, 1024),
    (16384, 1024, 4096),
    (1024, 16384, 4096),
    (512, 8192, 8192),
]
QUICK_SHAPES: list[tuple[int, int, int]] = BENCH_SHAPES[:2]
# Shapes for correctness tests: one not a multiple of any tile, one large.
TEST_SHAPES: list[tuple[int, int, int]] = [(1000, 1500, 777), (4096, 4096, 4096)]

H200_SMS = 132  # streaming multiprocessors of an H200 / H100 SXM (used when no GPU is present)


def num_sms(device: Any = None) -> int:
    """SM count of ``device`` (a CUDA device or tensor); 132 (H100/H200 SXM) without a GPU."""
    try:
        import torch

        if torch.cuda.is_available():
            dev = getattr(device, "device", device)
            if dev is None or getattr(dev, "type", "cuda") == "cuda":
                return torch.cuda.get_device_properties(dev or 0).multi_processor_count
    except Exception:  # pragma: no cover - best effort
        pass
    return H200_SMS


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
    if x.stride(1) == 1 and (x.shape[0] == 1 or _aligned(x.stride(0), e)) and x.data_ptr() % 16 == 0:
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
    if fill is None:
        store = torch.empty((M, padded), dtype=dtype, device=device)
    else:
        store = torch.full((M, padded), fill, dtype=dtype, device=device)
    return store[:, :N]


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
    """TMA-ready operands and descriptors (block shapes set per config by :func:`descriptors`)."""

    a: Any  # storage of A (A or A.T, row-major)
    b: Any  # storage of B (B or B.T, row-major)
    c: Any  # output M x N, row-major
    a_t: bool
    b_t: bool
    M: int
    N: int
    K: int


def operands(a, b, out=None) -> Operands:
    """Check and view ``a``/``b`` for TMA and allocate (or check) the output."""
    M, N, K = check_operands(a, b)
    a_s, a_t = tma_operand(a)
    b_s, b_t = tma_operand(b)
    if out is None:
        out = empty_out(M, N, a.dtype, a.device)
    elif (
        tuple(out.shape) != (M, N)
        or out.stride(1) != 1
        or not _aligned(out.stride(0), out.element_size())
        or out.data_ptr() % 16
    ):
        raise ValueError("matmul: out must be M x N, row-major, 16-byte aligned with a 16-byte aligned row stride")
    return Operands(a_s, b_s, out, a_t, b_t, M, N, K)


def descriptor(t, block: Sequence[int]) -> TensorDescriptor:
    return TensorDescriptor(t, list(t.shape), list(t.stride()), list(block))


def ab_descriptors(ops: Operands, a_rows: int, BN: int, BK: int) -> tuple[TensorDescriptor, TensorDescriptor]:
    """Descriptors of A (tiles of ``a_rows`` x BK, or BK x ``a_rows`` if transposed) and B (BK x BN / BN x BK)."""
    a_desc = descriptor(ops.a, [BK, a_rows] if ops.a_t else [a_rows, BK])
    b_desc = descriptor(ops.b, [BN, BK] if ops.b_t else [BK, BN])
    return a_desc, b_desc


# ------------------------------------------------------------------------------------------------
# device helpers
# ------------------------------------------------------------------------------------------------


@triton.jit
def tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M: tl.constexpr):
    """(pid_m, pid_n) of a linear tile id, grouped GROUP_M tiles down M so neighbours share L2 lines."""
    in_group = GROUP_M * num_pid_n
    group = tile_id // in_group
    first_m = group * GROUP_M
    size_m = min(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (tile_id % in_group) % size_m
    pid_n = (tile_id % in_group) // size_m
    return pid_m, pid_n


# ------------------------------------------------------------------------------------------------
# configs and tuning
# ------------------------------------------------------------------------------------------------


def config_name(cfg: dict[str, Any]) -> str:
    keys = ("BM", "BN", "BK", "NUM_STAGES", "GROUP_M", "num_warps")
    short = {"NUM_STAGES": "s", "GROUP_M": "g", "num_warps": "w"}
    parts = []
    for k in keys:
        if k in cfg:
            parts.append(f"{short.get(k, '')}{cfg[k]}" if k in short else str(cfg[k]))
    dims = "x".join(parts[:3])
    if cfg.get("EPI_SPLIT", 1) != 1:  # variants must get distinct names (preflight and tuner key on them)
        parts.append(f"e{cfg['EPI_SPLIT']}")
    return "_".join([dims] + parts[3:])


def smem_bytes(cfg: dict[str, Any], kind: str, elem: int = 2) -> int:
    """Shared memory a config's buffers need (ring + epilogue + barriers), for static checks."""
    BM, BN, BK, S = cfg["BM"], cfg["BN"], cfg["BK"], cfg["NUM_STAGES"]
    ring = S * (BM * BK + BK * BN) * elem
    if kind == "pingpong":
        epi = 2 * BM * BN * elem
    else:
        epi = BM * BN * elem // cfg.get("EPI_SPLIT", 1)
    return ring + epi + 8 * 3 * S


def tuned_matmul(launch, configs, tuner, a, b, config=None, out=None):
    """``launch(a, b, config, out)`` with ``config``, or with the config ``tuner`` picks from ``configs``
    for this problem (tuned once per size, dtype and operand majorness, into a scratch output)."""
    if config is None:
        key = (a.shape[0], b.shape[1], a.shape[1], str(a.dtype), a.stride(0) == 1, b.stride(0) == 1)
        config = tuner.cache.get(key)
        if config is None:
            scratch = empty_out(a.shape[0], b.shape[1], a.dtype, a.device)
            config = tuner.choose(key, configs, lambda cfg: launch(a, b, cfg, out=scratch))
    return launch(a, b, config, out)


@dataclass
class Tuner:
    """Pick the fastest config per problem key on the GPU (configs that fail are skipped, not fatal).

    ``choose(key, configs, run)`` times ``run(cfg)`` for each config with ``triton.testing.do_bench``
    and remembers the winner; set ``TLX_KERNELS_NO_TUNE=1`` to always use the first config.
    """

    cache: dict[Any, dict[str, Any]] = field(default_factory=dict)
    timings: dict[Any, list[tuple[str, float]]] = field(default_factory=dict)
    warmup_ms: int = 10
    rep_ms: int = 40

    def choose(self, key: Any, configs: Sequence[dict[str, Any]], run: Callable[[dict[str, Any]], Any]):
        if key in self.cache:
            return self.cache[key]
        if len(configs) == 1 or os.environ.get("TLX_KERNELS_NO_TUNE"):
            self.cache[key] = dict(configs[0])
            return self.cache[key]
        best, best_ms, rows, errors = None, math.inf, [], []
        for cfg in configs:
            try:
                run(cfg)  # compile outside the timed region
                ms, _ = bench_ms(lambda cfg=cfg: run(cfg), warmup_ms=self.warmup_ms, rep_ms=self.rep_ms)
            except Exception as e:  # a config that does not compile or launch is skipped
                errors.append(f"{config_name(cfg)}: {type(e).__name__}: {str(e).splitlines()[0][:200]}")
                continue
            rows.append((config_name(cfg), ms))
            if ms < best_ms:
                best, best_ms = cfg, ms
        if best is None:
            raise RuntimeError("no config ran: " + "; ".join(errors))
        self.timings[key] = rows
        self.cache[key] = dict(best)
        return self.cache[key]


def bench_ms(fn: Callable[[], Any], warmup_ms: int = 25, rep_ms: int = 100, graph: bool = True) -> tuple[float, str]:
    """(median ms, method) of ``fn`` on the GPU: CUDA-graph replay (no launch overhead) when it captures,
    else ``triton.testing.do_bench`` (L2 flushed between runs)."""
    import triton.testing as tt

    if graph:
        try:
            return float(tt.do_bench_cudagraph(fn, rep=rep_ms, return_mode="median")), "cudagraph"
        except Exception:  # capture failed: fall back to event timing
            import torch

            torch.cuda.synchronize()
    return float(tt.do_bench(fn, warmup=warmup_ms, rep=rep_ms, return_mode="median")), "do_bench"


def problem_key(ops: Operands) -> tuple:
    return (ops.M, ops.N, ops.K, str(ops.c.dtype), ops.a_t, ops.b_t)


# ------------------------------------------------------------------------------------------------
# reference and error
# ------------------------------------------------------------------------------------------------


def reference(a, b):
    """fp32-accumulated product in the inputs' dtype (torch.matmul on the GPU, fp32 on the CPU)."""
    if a.is_cuda:
        return a @ b
    return (a.float() @ b.float()).to(a.dtype)


def rel_err(out, ref) -> float:
    """max |out - ref| / max |ref| (inf if ``out`` holds NaN or inf)."""
    import torch

    o, r = out.float(), ref.float()
    if not torch.isfinite(o).all():
        return math.inf
    den = r.abs().max().item() or 1.0
    return (o - r).abs().max().item() / den


def gemm_flops(M: int, N: int, K: int) -> float:
    return 2.0 * M * N * K


__all__ = [
    "BENCH_SHAPES",
    "H200_SMS",
    "QUICK_SHAPES",
    "TEST_SHAPES",
    "Operands",
    "Tuner",
    "ab_descriptors",
    "bench_ms",
    "check_operands",
    "config_name",
    "descriptor",
    "empty_out",
    "gemm_flops",
    "num_sms",
    "operands",
    "problem_key",
    "reference",
    "rel_err",
    "smem_bytes",
    "tile_coords",
    "tma_operand",
]
