"""FlashAttention forward for Hopper: a plain Triton baseline and four TLX kernels, each one step further.

- :mod:`.triton_baseline`: (a) ``tl.dot`` and Triton's software pipeliner;
- :mod:`.ws`: (b) warp-specialized: a TMA producer and consumer warpgroups, K and V rings with mbarriers;
- :mod:`.ws_pipelined`: (c) each consumer overlaps its softmax of block j with its ``P V`` product of block j-1;
- :mod:`.ws_pingpong`: (d) the consumers take turns on the tensor cores (named barriers);
- :mod:`.ws_persistent`: (e) one CTA per SM over a static tile schedule (longest tiles first for causal).

Every module has ``CONFIGS`` (the default for a head dim is the first one that :func:`common.fits` it),
``DEFAULT``, ``prepare(q, k, v, causal, config, ...)`` -> :class:`common.Launch` (CPU tensors work, for
compile-only inspection with :mod:`.compile_only`), ``launch(...)`` and ``attention(...)`` (tuned per problem).
:func:`attention` here picks the best variant and config on first use per problem; repeated calls launch from a
per-problem cache (:mod:`.calls`, :mod:`tlx_kernels.launch`).

Inputs: ``(B, H, S, D)`` contiguous bf16/fp16, ``D`` 64 or 128, any lengths (``S_q`` and ``S_kv`` may differ;
causal masking is top-left aligned, as ``torch``'s ``is_causal``). Output in the input dtype; the natural-log
logsumexp ``(B, H, S_q)`` fp32 on request.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from tlx_kernels.attention import common, triton_baseline, ws, ws_persistent, ws_pingpong, ws_pipelined
from tlx_kernels.attention.calls import Attention
from tlx_kernels.attention.common import (
    BENCH_SHAPES,
    LONG_SHAPES,
    QUICK_SHAPES,
    TEST_SHAPES,
    attention_flops,
    reference,
    rel_err,
    tolerance,
)

MODULES: dict[str, ModuleType] = {
    "triton_baseline": triton_baseline,
    "ws": ws,
    "ws_pipelined": ws_pipelined,
    "ws_pingpong": ws_pingpong,
    "ws_persistent": ws_persistent,
}
TLX_MODULES = ("ws", "ws_pipelined", "ws_pingpong", "ws_persistent")
# What attention() tries on first use of a problem: (module, how many of its fitting configs), fastest first.
CANDIDATES: list[tuple[str, int]] = [("ws_persistent", 3), ("ws_pingpong", 2), ("ws_pipelined", 1),
                                     ("triton_baseline", 2)]
_tuner = common.Tuner()


def candidates(D: int) -> list[tuple[str, tuple[str, dict[str, Any]]]]:
    """(name, (module, config)) pairs :func:`attention` tunes over for head dim ``D``."""
    out = []
    for name, n in CANDIDATES:
        for cfg in common.configs_for(MODULES[name].CONFIGS, D)[:n]:
            out.append((f"{name}:{common.config_name(cfg)}", (name, cfg)))
    return out


def _checker(q, k, v, causal: bool, sm_scale: float):
    """Accepts an output within :func:`common.tolerance` of torch SDPA (the same top-left causal mask)."""
    import torch

    ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal, scale=sm_scale)
    return lambda out: common.rel_err(out, ref) < common.tolerance(q.dtype)


def _choose(q, k, v, causal: bool, sm_scale: float | None):
    """(prepare, config) of the fastest candidate for this problem whose output matches torch SDPA (tuned once)."""
    p = common.problem(q, k, v, causal, sm_scale)
    name, cfg = _tuner.pick(p.key(), candidates(p.D),
                            lambda c: MODULES[c[0]].prepare(q, k, v, causal, c[1], sm_scale).run(),
                            check=_checker(q, k, v, causal, p.sm_scale) if p.key() not in _tuner.cache else None)
    return MODULES[name].prepare, cfg


_attention = Attention(_choose)


def attention(q, k, v, causal: bool = False, sm_scale: float | None = None, *, out=None, lse=None,
              return_lse: bool = False, graph: bool = False):
    """``softmax(q k^T * sm_scale [+ causal mask]) v`` in ``q``'s dtype (and the logsumexp if ``return_lse``).

    The first call for a problem (sizes bucketed to powers of two, dtype, head dim, causal) times
    :func:`candidates` on the GPU and keeps the fastest whose output matches torch SDPA;
    ``TLX_KERNELS_NO_TUNE=1`` takes the first. Repeated calls with the same layouts launch from a cache
    (:mod:`.calls`); ``graph=True`` (with ``out``, and ``lse`` if ``return_lse``) replays a CUDA graph
    captured for these tensors.
    """
    return _attention(q, k, v, causal, sm_scale, out=out, lse=lse, return_lse=return_lse, graph=graph)


__all__ = [
    "BENCH_SHAPES",
    "CANDIDATES",
    "LONG_SHAPES",
    "MODULES",
    "QUICK_SHAPES",
    "TEST_SHAPES",
    "TLX_MODULES",
    "attention",
    "attention_flops",
    "candidates",
    "common",
    "reference",
    "rel_err",
    "tolerance",
    "triton_baseline",
    "ws",
    "ws_persistent",
    "ws_pingpong",
    "ws_pipelined",
]
