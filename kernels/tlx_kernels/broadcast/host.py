"""Host side of the fused broadcast-linear kernel: operands for TMA, configs, schedule, launch, tuned entry point.

TMA reads row-major storage whose row strides and base are 16-byte aligned; an operand that is not
(a feature dimension that is not a multiple of 8 in bf16, a non-contiguous ``X``, a column-major ``W``)
is copied once into padded row-major storage, outside the kernel, and the logical shape is unchanged
(TMA zero-fills reads past the bounds and clips writes). ``prepare`` needs no GPU: with CPU tensors it
gives the launch arguments that compile-only inspection (``triton.compile`` for ``sm_90``) binds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import triton
from triton.tools.tensor_descriptor import TensorDescriptor

from tlx_kernels.broadcast.kernel import ACT_CODES, broadcast_linear_kernel
from tlx_kernels.broadcast.tuning import Tuner
from tlx_kernels.hopper import H200_SMS, SMEM_LIMIT, num_sms, require_sm90
from tlx_kernels.launch import Graphs, Plans, layout, need_outputs

BMU = 64  # rows of the user box: the smallest wgmma M (row 0 is the user, the rest are dropped)

# Small config set for the tuner (first = default). Shared memory per config: ring
# NUM_STAGES x (BM x BK + BK x BN) x 2 B, plus the epilogue's two BM x BN/2 tiles / EPI_SPLIT
# (limit 232,448 B): 4 x 48 KiB + 32 KiB = 224 KiB; 3 x 48 KiB + 64 KiB = 208 KiB; 6 x 32 KiB + 16 KiB = 208 KiB.
# M_CHUNK: candidate tiles per work unit (0: as few as keep about two units per SM).
# H200 sweep 2026-12-03: first (= default) fastest on the main shape; TFLOP/s there (and where each was fastest).
CONFIGS: list[dict[str, Any]] = [
    dict(BM=128, BN=256, BK=64, NUM_STAGES=4, EPI_SPLIT=2, CONSUMER_REGS=232, M_CHUNK=0,
         num_warps=4),  # 456; fastest on main, wide-user, mid, large
    dict(BM=128, BN=256, BK=64, NUM_STAGES=3, EPI_SPLIT=1, CONSUMER_REGS=232, M_CHUNK=0, num_warps=4),  # 435
    dict(BM=128, BN=256, BK=64, NUM_STAGES=3, EPI_SPLIT=1, CONSUMER_REGS=232, M_CHUNK=2,
         num_warps=4),  # 380; fastest on small (17)
    dict(BM=128, BN=128, BK=64, NUM_STAGES=6, EPI_SPLIT=2, CONSUMER_REGS=232, M_CHUNK=1,
         num_warps=4),  # 248; fastest on few-candidates (121, the default 109)
]
DEFAULT: dict[str, Any] = CONFIGS[0]


def sweep_configs(regs: tuple[int, ...] = (232,), m_chunks: tuple[int, ...] = (0, 1, 2)) -> list[dict[str, Any]]:
    """The candidates a config sweep tries, :data:`CONFIGS` first, then every fitting variant."""
    out = [dict(c) for c in CONFIGS]
    for BN, stages in ((256, (3, 4)), (128, (4, 5, 6))):
        for S in stages:
            for epi in (1, 2):
                for mc in m_chunks:
                    for r in regs:
                        cfg = dict(
                            BM=128, BN=BN, BK=64, NUM_STAGES=S, EPI_SPLIT=epi, CONSUMER_REGS=r, M_CHUNK=mc, num_warps=4
                        )
                        if smem_bytes(cfg) <= SMEM_LIMIT and cfg not in out:
                            out.append(cfg)
    return out


def smem_bytes(cfg: dict[str, Any], elem: int = 2) -> int:
    """Shared memory a config takes: ring, epilogue buffers, barriers, the user-row reduction's scratch."""
    BM, BN, BK, S = cfg["BM"], cfg["BN"], cfg["BK"], cfg["NUM_STAGES"]
    return S * (BM * BK + BK * BN) * elem + BM * BN * elem // cfg.get("EPI_SPLIT", 1) + 16 * S + BN * 4


def config_name(cfg: dict[str, Any]) -> str:
    name = f"{cfg['BM']}x{cfg['BN']}x{cfg['BK']}_s{cfg['NUM_STAGES']}"
    if cfg.get("EPI_SPLIT", 1) != 1:
        name += f"_e{cfg['EPI_SPLIT']}"
    if cfg.get("M_CHUNK", 0):
        name += f"_m{cfg['M_CHUNK']}"
    if cfg.get("CONSUMER_REGS", 232) != 232:
        name += f"_r{cfg['CONSUMER_REGS']}"
    return name


# ------------------------------------------------------------------------------------------------
# operands
# ------------------------------------------------------------------------------------------------


def _aligned(t, stride: int) -> bool:
    return (stride * t.element_size()) % 16 == 0 and t.data_ptr() % 16 == 0


def _padded(t):
    """Row-major copy of ``t`` (any rank) whose last dimension is padded to 16 bytes; returns the logical view."""
    import torch

    per16 = 16 // t.element_size()
    cols = t.shape[-1]
    store = torch.empty((*t.shape[:-1], -(-cols // per16) * per16), dtype=t.dtype, device=t.device)
    view = store[..., :cols]
    view.copy_(t)
    return view


def _tma_ready(t):
    """``t`` if TMA can read it as row-major with 16-byte aligned strides, else a padded copy."""
    dense = t.stride(-1) == 1 and all(_aligned(t, s) for s in t.stride()[:-1])
    if t.dim() == 3:  # X is read as (B*C, D_x): its batch stride must be C row strides
        dense = dense and t.stride(0) == t.shape[1] * t.stride(1)
    return t if dense else _padded(t)


def empty_out(B: int, C: int, N: int, dtype: Any, device: Any, fill: float | None = None):
    """A ``(B, C, N)`` output TMA can store into (row stride padded to 16 bytes); NaN-filled if asked."""
    import torch

    per16 = 16 // dtype.itemsize
    store = torch.empty((B, C, -(-N // per16) * per16), dtype=dtype, device=device)
    if fill is not None:
        store.fill_(fill)
    return store[..., :N]


@dataclass
class Operands:
    U: Any  # (B, D_u)
    X: Any  # (B, C, D_x), read as (B*C, D_x)
    W: Any  # (D_u + D_x, N), rows [0, D_u) multiply U, the rest X
    bias: Any  # (N,) or None
    Y: Any  # (B, C, N)
    B: int
    C: int
    DU: int
    DX: int
    N: int


def operands(U, X, W, bias=None, out=None) -> Operands:
    """Check shapes and dtypes, make every operand TMA-readable, allocate (or check) the output."""
    import torch

    if U.dim() != 2 or X.dim() != 3 or W.dim() != 2:
        raise ValueError(f"expected U (B, D_u), X (B, C, D_x), W (D_u + D_x, N); got {U.shape}, {X.shape}, {W.shape}")
    (B, DU), (B2, C, DX), (K, N) = U.shape, X.shape, W.shape
    if B2 != B or K != DU + DX or min(B, C, DU, DX, N) < 1:
        raise ValueError(f"shapes do not chain: U {tuple(U.shape)}, X {tuple(X.shape)}, W {tuple(W.shape)}")
    if not (U.dtype == X.dtype == W.dtype) or U.dtype not in (torch.bfloat16, torch.float16):
        raise TypeError(f"U, X and W must all be bf16 or all fp16, got {U.dtype}, {X.dtype}, {W.dtype}")
    if bias is not None and tuple(bias.shape) != (N,):
        raise ValueError(f"bias must have shape ({N},), got {tuple(bias.shape)}")
    if out is None:
        out = empty_out(B, C, N, U.dtype, U.device)
    elif tuple(out.shape) != (B, C, N) or out.dtype != U.dtype or _tma_ready(out) is not out:
        raise ValueError("out must be (B, C, N) in the inputs' dtype, row-major with a 16-byte aligned row stride")
    W = _tma_ready(W)
    if W.data_ptr() % 16 or (DU * W.stride(0) * W.element_size()) % 16:  # W[D_u:] must start aligned too
        W = _padded(W)
    bias = bias.contiguous() if bias is not None else None
    return Operands(_tma_ready(U), _tma_ready(X), W, bias, out, B, C, DU, DX, N)


def _desc(base, shape, strides, block) -> TensorDescriptor:
    return TensorDescriptor(base, list(shape), list(strides), list(block))


# ------------------------------------------------------------------------------------------------
# schedule and launch arguments
# ------------------------------------------------------------------------------------------------


def schedule(B: int, C: int, N: int, cfg: dict[str, Any], sms: int) -> tuple[int, int, int, int]:
    """(work units, chunks per user, candidate tiles per chunk, persistent grid size).

    A unit is (user, chunk of that user's candidate tiles, column tile); each unit computes its user's
    projection once. Users are split into chunks only when there are too few (user, column tile)
    pairs to give every SM about two units.
    """
    num_m = triton.cdiv(C, cfg["BM"])
    base = B * triton.cdiv(N, cfg["BN"])
    if cfg.get("M_CHUNK", 0):
        m_chunk = min(cfg["M_CHUNK"], num_m)
    else:
        m_chunk = triton.cdiv(num_m, min(num_m, max(1, triton.cdiv(2 * sms, base))))
    chunks = triton.cdiv(num_m, m_chunk)
    units = base * chunks
    return units, chunks, m_chunk, max(1, min(units, sms))


def prepare(
    U, X, W, bias=None, act: str = "none", config: dict[str, Any] | None = None, out=None, sms: int | None = None
):
    """(args, kwargs, grid, out) of one launch of :func:`broadcast_linear_kernel` with ``config``."""
    cfg = dict(config or DEFAULT)
    if act not in ACT_CODES:
        raise ValueError(f"act must be one of {sorted(ACT_CODES)}, got {act!r}")
    ops = operands(U, X, W, bias, out)
    BM, BN, BK = cfg["BM"], cfg["BN"], cfg["BK"]
    BNH = BN // 2
    epn = BNH // cfg.get("EPI_SPLIT", 1)
    B, C, DU, DX, N = ops.B, ops.C, ops.DU, ops.DX, ops.N
    w_stride = ops.W.stride(0)
    descs = (
        _desc(ops.U, (B, DU), (ops.U.stride(0), 1), (BMU, BK)),
        _desc(ops.X, (B * C, DX), (ops.X.stride(1), 1), (BM, BK)),
        _desc(ops.W, (DU, N), (w_stride, 1), (BK, BNH)),
        _desc(ops.W[DU:], (DX, N), (w_stride, 1), (BK, BNH)),
        _desc(ops.Y, (B, C, N), ops.Y.stride(), (1, BM, epn)),
    )
    units, chunks, m_chunk, grid = schedule(B, C, N, cfg, sms or num_sms(U.device))
    bias_arg = ops.bias if ops.bias is not None else ops.Y  # never read without HAS_BIAS
    args = (*descs, bias_arg, C, N, DU, DX, units, chunks, m_chunk)
    kwargs = dict(
        BM=BM,
        BN=BN,
        BK=BK,
        BMU=BMU,
        NUM_STAGES=cfg["NUM_STAGES"],
        CONSUMER_REGS=cfg["CONSUMER_REGS"],
        EPI_SPLIT=cfg.get("EPI_SPLIT", 1),
        ACT=ACT_CODES[act],
        HAS_BIAS=ops.bias is not None,
        num_warps=cfg.get("num_warps", 4),
        num_stages=0,  # the ring is explicit: keep Triton's software pipeliner (and its wgmma waits) out
    )
    return args, kwargs, (grid,), ops.Y


# ------------------------------------------------------------------------------------------------
# launch
# ------------------------------------------------------------------------------------------------

def launch(U, X, W, bias=None, act: str = "none", config: dict[str, Any] | None = None, out=None):
    """One launch (``kernel[grid](...)``) with ``config`` (default :data:`DEFAULT`); returns the output."""
    return _launch(U, X, W, bias, act, config, out, None)


def _launch(U, X, W, bias, act: str, config: dict[str, Any] | None, out, key: tuple | None):
    args, kwargs, grid, y = prepare(U, X, W, bias, act, config, out)
    compiled = broadcast_linear_kernel[grid](*args, **kwargs)
    if key is not None:
        _plans.offer(key, broadcast_linear_kernel, compiled, args, kwargs, grid, (U, X, W, bias, y))
    return y


def _config_for(U, X, W, bias, act: str) -> dict[str, Any]:
    """The tuned config of this problem (sizes, dtype, activation, bias or not), tuned on first use."""
    key = (tuple(U.shape), tuple(X.shape), W.shape[1], str(U.dtype), act, bias is not None)
    config = _tuner.cache.get(key)
    if config is None:
        B, C, _ = X.shape
        scratch = empty_out(B, C, W.shape[1], U.dtype, U.device)
        config = _tuner.choose(key, CONFIGS, lambda cfg: launch(U, X, W, bias, act, cfg, scratch), config_name)
    return config


_tuner = Tuner()
_plans, _graphs = Plans(), Graphs()


def broadcast_linear(U, X, W, bias=None, act: str = "none", *, config: dict[str, Any] | None = None, out=None,
                     graph: bool = False):
    """``Y[b, c] = act(concat(U[b], X[b, c]) @ W + bias)`` with the fused kernel; see :mod:`tlx_kernels.broadcast`.

    Without ``config`` the first call for a problem (sizes, dtype, activation, bias or not) tunes over
    :data:`CONFIGS` on the GPU into a scratch output and remembers the fastest. Repeated calls with the same
    layouts launch from a cache (:mod:`tlx_kernels.launch`); ``graph=True`` (with ``out``) replays a CUDA graph
    captured for these tensors.
    """
    key = (layout(U), layout(X), layout(W), layout(bias), layout(out), act,
           None if config is None else tuple(config.items()))
    if graph:
        need_outputs("broadcast_linear", out=out)
        _graphs.replay(key, (U, X, W, bias, out), lambda: broadcast_linear(U, X, W, bias, act, config=config, out=out),
                       "broadcast_linear")
        return out
    if _plans.get(key) is not None:  # then the operands were checked when it was made
        y = out if out is not None else empty_out(X.shape[0], X.shape[1], W.shape[1], U.dtype, U.device)
        if _plans.launch(key, (U, X, W, bias, y)):
            return y
    require_sm90("broadcast_linear", U, X, W)
    return _launch(U, X, W, bias, act, config if config is not None else _config_for(U, X, W, bias, act), out, key)


__all__ = [
    "BMU",
    "CONFIGS",
    "DEFAULT",
    "H200_SMS",
    "Operands",
    "broadcast_linear",
    "config_name",
    "empty_out",
    "launch",
    "num_sms",
    "operands",
    "prepare",
    "schedule",
    "smem_bytes",
    "sweep_configs",
]
