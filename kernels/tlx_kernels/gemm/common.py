"""Shared pieces of the GEMM library: operand views for TMA, descriptors, the epilogue, configs, tuner, reference.

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

import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import triton
import triton.language as tl
import triton.language.extra.tlx as tlx
from triton.tools.tensor_descriptor import TensorDescriptor

# Benchmark shapes (M, N, K); the quick set first.
BENCH_SHAPES: list[tuple[int, int, int]] = [
    (8192, 8192, 8192),
    (4096, 4096, 4096),
    (2048, 2048, 2048),
    (8192, 8192, 1024),
    (16384, 1024, 4096),
    (1024, 16384, 4096),
    (512, 8192, 8192),
]
QUICK_SHAPES: list[tuple[int, int, int]] = BENCH_SHAPES[:3]
# Shapes for correctness tests: one not a multiple of any tile, one large.
TEST_SHAPES: list[tuple[int, int, int]] = [(1000, 1500, 777), (4096, 4096, 4096)]

H200_SMS = 132  # streaming multiprocessors of an H200 / H100 SXM (used when no GPU is present)
SMEM_LIMIT = 232448  # dynamic shared memory per CTA on sm_90 (227 KiB)


def num_sms(device: Any = None) -> int:
    """SM count of ``device`` (a CUDA device or tensor); 132 (H100/H200 SXM) without a GPU."""
    try:
        import torch

        dev = getattr(device, "device", device)
        if torch.cuda.is_available() and (dev is None or getattr(dev, "type", "cuda") == "cuda"):
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


def persistent_grid(ops: Operands, BM: int, BN: int, sms: int | None, device: Any) -> tuple[int]:
    """At most one CTA per SM, never more CTAs than tiles."""
    tiles = triton.cdiv(ops.M, BM) * triton.cdiv(ops.N, BN)
    return (max(1, min(tiles, sms or num_sms(device))),)


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


def launch(kernel, prepare, a, b, config, out):
    """``kernel[grid](*args, **kwargs)`` from ``prepare(a, b, config, out)``; returns the output.

    ``kernel`` None: ``prepare`` returns the kernel first (the tl.dot baseline picks one of two)."""
    done = empty_product(a, b, out)
    if done is not None:
        return done
    prepared = prepare(a, b, config, out)
    if kernel is None:
        kernel, prepared = prepared[0], prepared[1:]
    args, kwargs, grid, c = prepared
    kernel[grid](*args, **kwargs)
    return c


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


@triton.jit
def operand(buf, TRANSPOSED: tl.constexpr):
    """A shared-memory tile as a wgmma operand: transposed in place (a view) if its storage is."""
    if TRANSPOSED:
        view = tlx.local_trans(buf)
    else:
        view = buf
    return view


@triton.jit
def _halves(x):
    """Left and right column halves of a 2-D register tile (a register renaming: no data moves)."""
    R: tl.constexpr = x.shape[0]
    W: tl.constexpr = x.shape[1] // 2
    return tl.split(tl.permute(tl.reshape(x, [R, 2, W]), [0, 2, 1]))


@triton.jit
def _store_subtile(c_desc, buf, x, row, col, EPI_BUFS: tl.constexpr):
    # the TMA store that last read `buf` was EPI_BUFS stores ago: wait until at most EPI_BUFS - 1 are pending
    tlx.async_descriptor_store_wait(EPI_BUFS - 1)
    tlx.local_store(buf, x.to(tlx.dtype_of(c_desc)))
    tlx.fence_async_shared()
    tlx.async_descriptor_store(c_desc, buf, [row, col])


@triton.jit
def store_tile(c_desc, c_bufs, first, acc, row, col, EPI_SPLIT: tl.constexpr, EPI_BUFS: tl.constexpr):
    """TMA-store the fp32 tile ``acc`` at (row, col) as EPI_SPLIT column subtiles, converted to the output
    dtype one subtile at a time, through the EPI_BUFS shared buffers ``c_bufs[first + i]`` in turn: each
    subtile waits only for the store that last read its buffer, so stores overlap the next conversion.
    EPI_SPLIT must be a multiple of EPI_BUFS (the turn order then repeats from tile to tile)."""
    W: tl.constexpr = acc.shape[1] // EPI_SPLIT
    if EPI_SPLIT == 1:
        _store_subtile(c_desc, c_bufs[first], acc, row, col, EPI_BUFS)
    elif EPI_SPLIT == 2:
        x0, x1 = _halves(acc)
        _store_subtile(c_desc, c_bufs[first], x0, row, col, EPI_BUFS)
        _store_subtile(c_desc, c_bufs[first + (1 % EPI_BUFS)], x1, row, col + W, EPI_BUFS)
    else:
        tl.static_assert(EPI_SPLIT == 4, "EPI_SPLIT must be 1, 2 or 4")
        lo, hi = _halves(acc)
        x0, x1 = _halves(lo)
        x2, x3 = _halves(hi)
        _store_subtile(c_desc, c_bufs[first], x0, row, col, EPI_BUFS)
        _store_subtile(c_desc, c_bufs[first + (1 % EPI_BUFS)], x1, row, col + W, EPI_BUFS)
        _store_subtile(c_desc, c_bufs[first + (2 % EPI_BUFS)], x2, row, col + 2 * W, EPI_BUFS)
        _store_subtile(c_desc, c_bufs[first + (3 % EPI_BUFS)], x3, row, col + 3 * W, EPI_BUFS)


# ------------------------------------------------------------------------------------------------
# configs
# ------------------------------------------------------------------------------------------------

_SHORT = {
    "NUM_STAGES": "s",
    "num_stages": "ns",
    "GROUP_M": "g",
    "num_warps": "w",
    "EPI_SPLIT": "e",
    "EPI_BUFS": "b",
    "CONSUMER_REGS": "r",
    "WARP_BAR": "wb",
    "WS": "ws",
}
_DEFAULTS = {"EPI_SPLIT": 1, "EPI_BUFS": 1, "WARP_BAR": False, "CONSUMER_REGS": 232}


_ORDER = ("PERSISTENT", "WS", "NUM_STAGES", "num_stages", "GROUP_M", "EPI_SPLIT", "EPI_BUFS", "WARP_BAR",
          "CONSUMER_REGS", "num_warps")


def config_name(cfg: dict[str, Any]) -> str:
    """A short name, the same for equal configs, e.g. ``128x256x64_s4_g8_e2_w4`` (default values left out)."""
    parts = ["x".join(str(cfg[k]) for k in ("BM", "BN", "BK") if k in cfg)]
    rest = sorted((k for k in cfg if k not in ("BM", "BN", "BK")), key=lambda k: (_ORDER + (k,)).index(k))
    for k in rest:
        v = cfg[k]
        if _DEFAULTS.get(k, object()) == v or (k == "num_stages" and cfg.get("NUM_STAGES") == v):
            continue
        if k == "PERSISTENT":
            parts.append("persistent" if v else "grid")
        else:
            parts.append(f"{_SHORT.get(k, k)}{int(v) if isinstance(v, bool) else v}")
    return "_".join(p for p in parts if p)


def smem_bytes(cfg: dict[str, Any], kind: str, elem: int = 2) -> int:
    """Shared memory a config's buffers need (ring + epilogue buffers + barriers), for static checks.

    ``kind``: "single-role" (one epilogue buffer set), "cooperative" (one per consumer, each half a
    tile tall), "pingpong" (one per consumer, each a whole tile)."""
    BM, BN, BK, S = cfg["BM"], cfg["BN"], cfg["BK"], cfg["NUM_STAGES"]
    split, bufs = cfg.get("EPI_SPLIT", 1), cfg.get("EPI_BUFS", 1)
    ring = S * (BM * BK + BK * BN) * elem
    sub = BM * (BN // split) * elem
    if kind == "single-role":
        epi = sub * bufs
    elif kind == "cooperative":
        epi = 2 * (sub // 2) * bufs
    elif kind == "pingpong":
        epi = 2 * sub * bufs
    else:
        raise ValueError(f"unknown kind {kind!r}")
    return ring + epi + 8 * 2 * S + 64


def check_config(cfg: dict[str, Any], kind: str) -> None:
    """Raise ValueError for a config that cannot work (before any compile)."""
    split, bufs = cfg.get("EPI_SPLIT", 1), cfg.get("EPI_BUFS", 1)
    if split not in (1, 2, 4) or bufs not in (1, 2) or split % bufs:
        raise ValueError(f"{config_name(cfg)}: EPI_SPLIT in (1, 2, 4), EPI_BUFS in (1, 2), EPI_BUFS | EPI_SPLIT")
    need = smem_bytes(cfg, kind)
    if need > SMEM_LIMIT:
        raise ValueError(f"{config_name(cfg)}: needs {need} B of shared memory, the limit is {SMEM_LIMIT}")


def variants(base: dict[str, Any], **choices: Sequence[Any]) -> list[dict[str, Any]]:
    """``base``, then ``base`` with one key changed to each of its listed values (one knob at a time)."""
    out = [dict(base)]
    for key, values in choices.items():
        out.extend(dict(base, **{key: v}) for v in values if base.get(key, _DEFAULTS.get(key)) != v)
    return out


def feasible(configs: Sequence[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    """``configs`` without duplicates (by name) and without those :func:`check_config` rejects, in order."""
    seen, out = set(), []
    for cfg in configs:
        name = config_name(cfg)
        try:
            check_config(cfg, kind)
        except ValueError:
            continue
        if name not in seen:
            seen.add(name)
            out.append(dict(cfg))
    return out


# ------------------------------------------------------------------------------------------------
# tuning and timing
# ------------------------------------------------------------------------------------------------


def bench_ms(fn: Callable[[], Any], warmup_ms: int = 25, rep_ms: int = 100) -> float:
    """Median ms of ``fn`` on the GPU with ``triton.testing.do_bench`` (L2 flushed before each run)."""
    import triton.testing as tt

    return float(tt.do_bench(fn, warmup=warmup_ms, rep=rep_ms, return_mode="median"))


def problem_key(a, b) -> tuple:
    """What a tuned config is valid for: sizes, dtype, operand majorness."""
    return (a.shape[0], b.shape[1], a.shape[1], str(a.dtype), a.stride(0) == 1, b.stride(0) == 1)


@dataclass
class Tuner:
    """Pick the fastest config per problem key on the GPU (configs that fail are skipped, not fatal).

    ``choose(key, configs, run)`` times ``run(cfg)`` for each config with :func:`bench_ms` and remembers
    the winner; set ``TLX_KERNELS_NO_TUNE=1`` to always use the first config.
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
                ms = bench_ms(lambda cfg=cfg: run(cfg), warmup_ms=self.warmup_ms, rep_ms=self.rep_ms)
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


def tuned_matmul(launch, configs, tuner: Tuner, a, b, config=None, out=None):
    """``launch(a, b, config, out)`` with ``config``, or with the config ``tuner`` picks from ``configs``
    for this problem (tuned once per size, dtype and operand majorness, into a scratch output)."""
    if config is None:
        key = problem_key(a, b)
        config = tuner.cache.get(key)
        if config is None:
            scratch = empty_out(a.shape[0], b.shape[1], a.dtype, a.device)
            config = tuner.choose(key, configs, lambda cfg: launch(a, b, cfg, out=scratch))
    return launch(a, b, config, out)


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
    "SMEM_LIMIT",
    "TEST_SHAPES",
    "Operands",
    "Tuner",
    "ab_descriptors",
    "bench_ms",
    "check_config",
    "check_operands",
    "config_name",
    "descriptor",
    "empty_out",
    "feasible",
    "gemm_flops",
    "num_sms",
    "operands",
    "persistent_grid",
    "problem_key",
    "reference",
    "empty_product",
    "launch",
    "rel_err",
    "smem_bytes",
    "store_tile",
    "tile_coords",
    "tma_operand",
    "variants",
]
