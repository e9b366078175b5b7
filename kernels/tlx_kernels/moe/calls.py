"""The grouped GEMMs' launches and public calls: ``grouped_mm`` (forward) and the backward's ``grouped_mm_dx`` and
``grouped_mm_dw``.

A call checks its operands (:mod:`.problem`), answers an empty problem without a kernel, picks a variant and config
(given, or the fastest of :data:`CANDIDATES`, tuned once per problem size and kind on the GPU: not per routing,
which changes every step) and launches ``kernel[grid](...)``. Both kernels build their TMA descriptors on the device,
in global scratch memory Triton allocates per launch through its allocator (set here to torch's), so the library's
cached launches (:mod:`tlx_kernels.launch`) decline them (their reason is kept in ``PLANS``); the call is Triton's
ordinary launch path, a few microseconds of host work against kernels of a millisecond and more.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from tlx_kernels import launch as L
from tlx_kernels.gemm import common as GC
from tlx_kernels.hopper import require_sm90
from tlx_kernels.moe import triton_grouped, ws_cooperative
from tlx_kernels.moe.problem import Problem, finish_empty, problem
from tlx_kernels.tuner import Tuner

VARIANTS: dict[str, ModuleType] = {"ws_cooperative": ws_cooperative, "triton": triton_grouped}
DEFAULT_VARIANT = "ws_cooperative"


def check_config(variant: str, cfg: dict[str, Any]) -> None:
    """Raise ValueError for a config the variant cannot run (before any compile)."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {tuple(VARIANTS)}, got {variant!r}")
    if variant == "ws_cooperative":
        if cfg["BM"] != 128:
            raise ValueError(f"{GC.config_name(cfg)}: the cooperative kernel's two consumers take 64 rows each: BM=128")
        GC.check_config(cfg, ws_cooperative.KIND)


def candidates() -> list[dict[str, Any]]:
    """What a call without ``variant``/``config`` tunes over: every config of each variant, ``VARIANT`` naming it."""
    return [dict(cfg, VARIANT=name) for name, mod in VARIANTS.items() for cfg in mod.CONFIGS]


CANDIDATES = candidates()


def sweep_candidates(group_m: tuple[int, ...] = (1, 8, 16, 64)) -> list[dict[str, Any]]:
    """What ``bench/moe.py --sweep`` times: every candidate, and every variant's ``TRIALS`` (configs not yet run on a
    GPU), with each ``GROUP_M`` (how many row tiles of a group the schedule walks before the next column of tiles:
    1 walks rows first, 64 covers a whole expert of up to 8k tokens, column after column, so that the programs
    running at once share a slab of its weights in L2), deduplicated."""
    out, seen = [], set()
    trials = [dict(cfg, VARIANT=name) for name, mod in VARIANTS.items() for cfg in getattr(mod, "TRIALS", [])]
    for cfg in CANDIDATES + trials:
        for g in group_m:
            c = dict(cfg, GROUP_M=g)
            key = tuple(sorted(c.items()))
            if key not in seen:
                seen.add(key)
                out.append(c)
    return out


def candidate_name(cfg: dict[str, Any]) -> str:
    """``variant:config``, e.g. ``ws_cooperative:128x256x64_s3_g8_w4``."""
    return f"{cfg.get('VARIANT', DEFAULT_VARIANT)}:" + GC.config_name({k: v for k, v in cfg.items() if k != "VARIANT"})


def prepare(p: Problem, variant: str = DEFAULT_VARIANT, config: dict[str, Any] | None = None,
            sms: int | None = None) -> tuple[Any, tuple, dict[str, Any], tuple[int]]:
    """``(kernel, args, kwargs, grid)`` of one launch (CPU tensors work: compile-only inspection)."""
    mod = VARIANTS.get(variant)
    cfg = {k: v for k, v in (config or (mod.DEFAULT if mod else {})).items() if k != "VARIANT"}
    check_config(variant, cfg)
    return mod.kernel, p.args(), dict(cfg, **p.constexprs()), p.grid(cfg["BM"], cfg["BN"], sms)


def ensure_allocator(t) -> None:
    """The descriptors built on the device live in global scratch memory: let Triton take it from torch."""
    if t.is_cuda:
        import torch
        import triton

        triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))


def launch(kind: str, a, b, offsets, variant: str = DEFAULT_VARIANT, config: dict[str, Any] | None = None,
           out=None, sms: int | None = None):
    """One launch of ``variant`` with ``config`` (default: its first) for ``kind``; returns the output."""
    p = problem(kind, a, b, offsets, out)
    if p.empty:
        return finish_empty(p)
    ensure_allocator(a)
    kernel, args, kwargs, grid = prepare(p, variant, config, sms)
    kernel[grid](*args, **kwargs)
    return p.c


class Grouped:
    """The public calls: tuned once per problem (kind, sizes, dtype), then launched."""

    def __init__(self) -> None:
        self.tuner = Tuner(label="grouped_mm: ")
        self.plans = L.Plans()

    def tuned(self, kind: str, a, b, offsets, variant: str | None = None) -> dict[str, Any] | None:
        """The ``VARIANT`` + config a call of this problem (and ``variant``) was tuned to; None if none was yet."""
        return self.tuner.cache.get((*problem(kind, a, b, offsets).key(), variant))

    def config_for(self, p: Problem, variant: str | None) -> dict[str, Any]:
        """The tuned ``VARIANT`` + config of this problem (tuned on first use, into the call's output)."""
        cands = [c for c in CANDIDATES if variant in (None, c["VARIANT"])]
        if not cands:
            raise ValueError(f"variant must be one of {tuple(VARIANTS)}, got {variant!r}")
        key = (*p.key(), variant)
        return self.tuner.choose(key, cands, lambda cfg: launch(p.kind, p.a, p.b, p.offsets, cfg["VARIANT"], cfg, p.c),
                                 name=candidate_name)

    def __call__(self, kind: str, a, b, offsets, *, variant: str | None = None, config: dict[str, Any] | None = None,
                 out=None):
        p = problem(kind, a, b, offsets, out)
        if p.empty:
            return finish_empty(p)
        require_sm90("grouped_mm" if kind == "fwd" else f"grouped_mm_{kind}", a)
        ensure_allocator(a)
        if config is None:
            config = self.config_for(p, variant)
        name = variant or config.get("VARIANT", DEFAULT_VARIANT)
        kernel, args, kwargs, grid = prepare(p, name, config)
        compiled = kernel[grid](*args, **kwargs)
        key = (kind, *(L.layout(t) for t in (a, b, p.c, offsets)), name, tuple(sorted(kwargs.items())))
        self.plans.offer(key, kernel, compiled, args, kwargs, grid, (a, b, p.c, offsets))
        return p.c


_grouped = Grouped()
PLANS = _grouped.plans
tuned = _grouped.tuned


def grouped_mm(x, w, offsets, *, variant: str | None = None, config: dict[str, Any] | None = None, out=None):
    """``out[rows of e] = x[rows of e] @ w[e]`` for every expert ``e``: x ``[T, K]`` (tokens sorted by expert),
    w ``[E, K, N]``, offsets int32 ``[E]`` (cumulative token counts; any count, 0 included); bf16 or fp16, fp32
    accumulation. Rows past ``offsets[E - 1]`` are not written. ``variant``: ``ws_cooperative`` (TLX) or
    ``triton``; without ``config`` the first call of a problem size tunes on the GPU."""
    return _grouped("fwd", x, w, offsets, variant=variant, config=config, out=out)


def grouped_mm_dx(dy, w, offsets, *, variant: str | None = None, config: dict[str, Any] | None = None, out=None):
    """The input gradient of :func:`grouped_mm`: ``dx[rows of e] = dy[rows of e] @ w[e]^T`` (``[T, K]``)."""
    return _grouped("dx", dy, w, offsets, variant=variant, config=config, out=out)


def grouped_mm_dw(x, dy, offsets, *, variant: str | None = None, config: dict[str, Any] | None = None, out=None):
    """The weight gradient of :func:`grouped_mm`: ``dw[e] = x[rows of e]^T @ dy[rows of e]`` (``[E, K, N]``, zeros
    for an expert with no tokens)."""
    return _grouped("dw", x, dy, offsets, variant=variant, config=config, out=out)


__all__ = ["CANDIDATES", "DEFAULT_VARIANT", "PLANS", "VARIANTS", "Grouped", "candidate_name", "check_config",
           "sweep_candidates",
           "ensure_allocator",
           "tuned",
           "grouped_mm", "grouped_mm_dw", "grouped_mm_dx", "launch", "prepare"]
