"""Host side of the attention library: problem checks, TMA descriptors, launch records, reference, shapes, tuner
(the library's: :mod:`tlx_kernels.tuner`; the GPU's facts and the relative error are the library's too).

Layout: ``q`` is ``(B, H, S_q, D)``, ``k`` and ``v`` are ``(B, H, S_kv, D)``, all contiguous, bf16 or fp16,
``D`` 64 or 128. The kernels see them as 2-D row-major matrices ``(B*H*S, D)``: head ``bh``'s rows start at
``bh * S``. TMA reads past the last row of a head land in the next head's rows (finite data, masked out of the
scores, so ``p = 0`` there) or past the end of the tensor (zero-filled). The TLX kernels store whole tiles
with TMA: when ``S_q`` is not a multiple of the CTA's query tile, they write into a per-head padded buffer
(``S_o`` rows per head) and :class:`Launch` copies the ``S_q`` valid rows into the output afterwards.

Causal masking is top-left aligned like ``torch.nn.functional.scaled_dot_product_attention(is_causal=True)``:
query ``i`` sees keys ``j <= i`` (with ``S_q != S_kv`` too).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from triton.tools.tensor_descriptor import TensorDescriptor

from tlx_kernels import tuner
from tlx_kernels.accuracy import rel_err
from tlx_kernels.hopper import H200_SMS, SMEM_LIMIT, num_sms
from tlx_kernels.tuner import bench_ms

# (B, H, S, D, causal): the main shape first (non-causal, causal), then D64 and S1024.
BENCH_SHAPES: list[tuple[int, int, int, int, bool]] = [
    (4, 32, 4096, 128, False),
    (4, 32, 4096, 128, True),
    (4, 32, 4096, 64, False),
    (4, 32, 4096, 64, True),
    (16, 32, 1024, 128, False),
    (16, 32, 1024, 128, True),
    (16, 32, 1024, 64, False),
]
QUICK_SHAPES = BENCH_SHAPES[:2]
# Long sequences (the same tokens per batch as the main shape, or more): 8k to 32k.
LONG_SHAPES: list[tuple[int, int, int, int, bool]] = [
    (2, 32, 8192, 128, False),
    (1, 32, 16384, 128, False),
    (1, 32, 32768, 128, False),
    (1, 32, 16384, 128, True),
]
# (B, H, S_q, S_kv, D, causal) for correctness: odd lengths, tails in Q and KV, S_q != S_kv.
TEST_SHAPES: list[tuple[int, int, int, int, int, bool]] = [
    (2, 3, 1000, 1000, 128, False),
    (2, 3, 1000, 1000, 128, True),
    (1, 4, 777, 1531, 64, False),
    (1, 4, 1531, 777, 64, True),
    (2, 2, 65, 200, 128, False),
    (1, 2, 4096, 4096, 128, True),
]
LOG2E = 1.4426950408889634


@dataclass(frozen=True)
class Problem:
    B: int
    H: int
    S_q: int
    S_kv: int
    D: int
    causal: bool
    sm_scale: float
    dtype: Any

    @property
    def BH(self) -> int:
        return self.B * self.H

    def key(self) -> tuple:
        """Tuning key: sizes bucketed to a power of two (configs do not depend on exact lengths)."""
        return (self.BH, _bucket(self.S_q), _bucket(self.S_kv), self.D, self.causal, str(self.dtype))


def _bucket(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def problem(q, k, v, causal: bool, sm_scale: float | None) -> Problem:
    """Check ``q``, ``k``, ``v`` and describe the problem (raises ValueError/TypeError with what is wrong)."""
    import torch

    if q.dim() != 4 or k.dim() != 4 or v.dim() != 4:
        raise ValueError(f"attention: q, k, v must be (B, H, S, D); got {tuple(q.shape)}, {tuple(k.shape)}, "
                         f"{tuple(v.shape)}")
    B, H, S_q, D = q.shape
    if tuple(k.shape) != tuple(v.shape) or k.shape[0] != B or k.shape[1] != H or k.shape[3] != D:
        raise ValueError(f"attention: k and v must be (B, H, S_kv, D) matching q {tuple(q.shape)}; "
                         f"got {tuple(k.shape)}, {tuple(v.shape)}")
    if D not in (64, 128):
        raise ValueError(f"attention: head dim {D} is not supported (64 or 128)")
    if not (q.dtype == k.dtype == v.dtype) or q.dtype not in (torch.bfloat16, torch.float16):
        raise TypeError(f"attention: q, k, v must all be bf16 or all fp16; got {q.dtype}, {k.dtype}, {v.dtype}")
    if not (q.is_contiguous() and k.is_contiguous() and v.is_contiguous()):
        raise ValueError("attention: q, k, v must be contiguous (B, H, S, D) tensors")
    if not (q.device == k.device == v.device):
        raise ValueError(f"attention: q, k, v on different devices ({q.device}, {k.device}, {v.device})")
    if any(t.data_ptr() % 16 for t in (q, k, v)):
        raise ValueError("attention: q, k, v must be 16-byte aligned")
    if k.shape[2] == 0:
        raise ValueError("attention: S_kv must be at least 1")
    scale = 1.0 / math.sqrt(D) if sm_scale is None else float(sm_scale)
    return Problem(B, H, S_q, k.shape[2], D, bool(causal), scale, q.dtype)


def rows2d(t):
    """``(B, H, S, D)`` contiguous -> ``(B*H*S, D)`` view."""
    return t.view(-1, t.shape[-1])


def descriptor(t2d, block: Sequence[int]) -> TensorDescriptor:
    return TensorDescriptor(t2d, list(t2d.shape), list(t2d.stride()), list(block))


_NO_LSE: dict[Any, Any] = {}  # device -> the 1-element tensor passed for lse when none is stored (never written)


def outputs(q, out=None, lse=None, want_lse: bool = False):
    """(out, lse, store_lse): ``out`` like ``q`` (checked if given); ``lse`` fp32 ``(B, H, S_q)`` when given or
    asked for (``store_lse`` True), else a 1-element placeholder per device that the kernels never write."""
    import torch

    if out is None:
        out = torch.empty_like(q)
    elif tuple(out.shape) != tuple(q.shape) or out.dtype != q.dtype or not out.is_contiguous():
        raise ValueError("attention: out must be a contiguous tensor with q's shape and dtype")
    if lse is None and want_lse:
        return out, torch.empty(tuple(q.shape[:3]), dtype=torch.float32, device=q.device), True
    if lse is None:
        placeholder = _NO_LSE.get(q.device)
        if placeholder is None:
            placeholder = _NO_LSE[q.device] = torch.empty(1, dtype=torch.float32, device=q.device)
        return out, placeholder, False
    if tuple(lse.shape) != tuple(q.shape[:3]) or lse.dtype != torch.float32 or not lse.is_contiguous():
        raise ValueError("attention: lse must be a contiguous fp32 tensor of shape (B, H, S_q)")
    return out, lse, True


@dataclass
class Launch:
    """Everything one launch needs: ``kernel[grid](*args, **kwargs)`` writes ``out`` (and ``lse``); when the
    kernel wrote a padded buffer ``staged``, ``run`` copies its valid rows into ``out``. (The public calls launch
    repeats of a problem from a cache instead: :mod:`.calls`.)"""

    kernel: Any
    args: tuple
    kwargs: dict[str, Any]
    grid: tuple[int, ...]
    out: Any
    lse: Any
    problem: Problem
    staged: Any = None
    compiled: Any = None  # what the last run's kernel[grid](...) returned (Triton's CompiledKernel)

    def run(self):
        if self.problem.S_q and self.problem.BH:
            self.compiled = self.kernel[self.grid](*self.args, **self.kwargs)
            if self.staged is not None:
                self.out.copy_(self.staged[:, :, : self.problem.S_q])
        return self.out


def tlx_args(p: Problem, q, k, v, out, lse, BLOCK_M: int, BLOCK_N: int, TILE_M: int,
             store_lse: bool) -> tuple[tuple, dict, Any]:
    """(positional arguments, shape constexprs, padded output or None) of the TLX kernels: 2-D descriptors,
    ``BLOCK_M`` rows per consumer warpgroup, ``TILE_M`` query rows per tile (the output's padding unit)."""
    import torch

    S_o = -(-p.S_q // TILE_M) * TILE_M
    staged = None if S_o == p.S_q else torch.empty(p.B, p.H, S_o, p.D, dtype=out.dtype, device=out.device)
    d_q = descriptor(rows2d(q), [BLOCK_M, p.D])
    d_k = descriptor(rows2d(k), [BLOCK_N, p.D])
    d_v = descriptor(rows2d(v), [BLOCK_N, p.D])
    d_o = descriptor(rows2d(out if staged is None else staged), [BLOCK_M, p.D])
    args = (d_q, d_k, d_v, d_o, lse, p.sm_scale * LOG2E, p.S_q, p.S_kv, S_o, p.BH)
    return args, dict(HEAD_DIM=p.D, CAUSAL=p.causal, STORE_LSE=bool(store_lse)), staged


def tlx_launch(kernel: Any, configs: Sequence[dict[str, Any]], q, k, v, causal: bool, config: dict[str, Any] | None,
               sm_scale: float | None, out, lse, want_lse: bool) -> Launch:
    """The launch of a TLX kernel with ``config`` (default: the first of ``configs`` that :func:`fits` the head
    dim): one CTA per ``NUM_GROUPS * BLOCK_M`` query rows of one head, 4 warps per role."""
    p = problem(q, k, v, causal, sm_scale)
    cfg = dict(config or configs_for(configs, p.D)[0])
    out, lse, store_lse = outputs(q, out, lse, want_lse)
    tile_m = cfg["NUM_GROUPS"] * cfg["BLOCK_M"]
    args, kw, staged = tlx_args(p, q, k, v, out, lse, cfg["BLOCK_M"], cfg["BLOCK_N"], tile_m, store_lse)
    grid = (-(-p.S_q // tile_m), p.BH)
    return Launch(kernel, args, dict(cfg, **kw, num_warps=4, num_stages=1), grid, out, lse, p, staged)


def config_name(cfg: dict[str, Any]) -> str:
    short = {"BLOCK_M": "m", "BLOCK_N": "n", "NUM_GROUPS": "g", "NUM_BUFFERS": "b", "CONSUMER_REGS": "r",
             "PV_IN_TURN": "pv", "WARP_RELEASE": "wr", "TURN_WAITS_S": "tw", "GROUP_HEADS": "gh",
             "SNAKE": "sn", "NUM_STAGES": "s", "num_warps": "w"}
    return "_".join(f"{short.get(k, k)}{int(v) if isinstance(v, bool) else v}" for k, v in cfg.items())


def smem_bytes(cfg: dict[str, Any], D: int, elem: int = 2) -> int:
    """Shared memory of a TLX config: Q per group, the K and V rings, barriers, and for the persistent kernel
    (its configs carry ``GROUP_HEADS``) one output staging tile per group; the others stage O in Q's buffer."""
    G, BM, BN, NB = cfg.get("NUM_GROUPS", 1), cfg["BLOCK_M"], cfg["BLOCK_N"], cfg.get("NUM_BUFFERS", 2)
    q_tiles = 2 * G if "GROUP_HEADS" in cfg else G
    return (q_tiles * BM * D + 2 * NB * BN * D) * elem + 8 * (3 * G + 4 * NB) + 512


def consumer_registers(cfg: dict[str, Any], D: int) -> int:
    """Registers per consumer thread for the big live tensors: O (fp32), S (fp32) and P (16-bit)."""
    BM, BN = cfg["BLOCK_M"], cfg["BLOCK_N"]
    return BM * D // 128 + BM * BN // 128 + BM * BN // 256


def fits(cfg: dict[str, Any], D: int) -> bool:
    """Whether a TLX config is worth compiling for head dim ``D``: shared memory under the limit, the register
    budgets of all warpgroups within the register file, and ~70 registers to spare per consumer thread beyond
    the big tensors (fewer spilled or serialised the wgmmas in compile-only checks)."""
    if "NUM_GROUPS" not in cfg:  # the plain Triton baseline
        return cfg["NUM_STAGES"] * 2 * cfg["BLOCK_N"] * D * 2 + cfg["BLOCK_M"] * D * 2 <= SMEM_LIMIT
    G, regs = cfg["NUM_GROUPS"], cfg["CONSUMER_REGS"]
    return (smem_bytes(cfg, D) <= SMEM_LIMIT and G * regs + 24 <= 512
            and consumer_registers(cfg, D) <= regs - 70)


def configs_for(configs: Sequence[dict[str, Any]], D: int) -> list[dict[str, Any]]:
    """The configs of a list that :func:`fits` head dim ``D``, in order."""
    return [dict(c) for c in configs if fits(c, D)]


# ------------------------------------------------------------------------------------------------
# reference and error
# ------------------------------------------------------------------------------------------------


def causal_mask(S_q: int, S_kv: int, device: Any):
    """True where query i may see key j (top-left aligned, as torch's ``is_causal``)."""
    import torch

    return torch.ones(S_q, S_kv, dtype=torch.bool, device=device).tril()


def reference(q, k, v, causal: bool = False, sm_scale: float | None = None, with_lse: bool = False,
              heads_per_chunk: int = 8):
    """fp32 attention (``softmax(q k^T * scale) v``), computed a few heads at a time; returns fp32 ``out``
    (and the natural-log ``lse`` if ``with_lse``)."""
    import torch

    B, H, S_q, D = q.shape
    scale = 1.0 / math.sqrt(D) if sm_scale is None else sm_scale
    qf, kf, vf = (t.reshape(B * H, t.shape[2], D) for t in (q, k, v))
    out = torch.empty(B * H, S_q, D, dtype=torch.float32, device=q.device)
    lse = torch.empty(B * H, S_q, dtype=torch.float32, device=q.device)
    mask = causal_mask(S_q, k.shape[2], q.device) if causal else None
    for i in range(0, B * H, heads_per_chunk):
        s = torch.matmul(qf[i:i + heads_per_chunk].float(), kf[i:i + heads_per_chunk].float().transpose(1, 2))
        s = s * scale
        if mask is not None:
            s = s.masked_fill(~mask, float("-inf"))
        lse[i:i + heads_per_chunk] = torch.logsumexp(s, dim=-1)
        out[i:i + heads_per_chunk] = torch.matmul(torch.softmax(s, dim=-1), vf[i:i + heads_per_chunk].float())
    out = out.view(B, H, S_q, D)
    return (out, lse.view(B, H, S_q)) if with_lse else out


def tolerance(dtype) -> float:
    """Bound on :func:`rel_err` for our kernels (P is rounded to the input dtype before the PV product)."""
    import torch

    return 2e-2 if dtype == torch.bfloat16 else 1e-2


def attention_flops(B: int, H: int, S_q: int, S_kv: int, D: int, causal: bool) -> float:
    """4 * B * H * S_q * S_kv * D (QK^T and PV), halved for causal."""
    f = 4.0 * B * H * S_q * S_kv * D
    return f / 2 if causal else f


# ------------------------------------------------------------------------------------------------
# tuning
# ------------------------------------------------------------------------------------------------


@dataclass
class Tuner(tuner.Tuner):
    """The library's tuner (:mod:`tlx_kernels.tuner`); :meth:`~tlx_kernels.tuner.Tuner.pick` takes
    ``(name, candidate)`` pairs (a config, or a variant and its config) and a check of the output."""

    label: str = "attention: "


__all__ = ["BENCH_SHAPES", "H200_SMS", "LOG2E", "LONG_SHAPES", "QUICK_SHAPES", "SMEM_LIMIT", "TEST_SHAPES", "Launch",
           "Problem", "Tuner", "attention_flops", "bench_ms", "causal_mask", "config_name", "configs_for",
           "consumer_registers", "descriptor", "fits", "num_sms", "outputs", "problem", "reference", "rel_err",
           "rows2d", "smem_bytes", "tlx_args", "tlx_launch", "tolerance"]
