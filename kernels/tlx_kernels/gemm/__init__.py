"""TLX GEMMs for Hopper (bf16/fp16 in, fp32 accumulation), each with ``matmul(a, b)``.

- :mod:`.tma_pipelined`: (1) pipelined single-role TMA GEMM;
- :mod:`.ws_cooperative`: (2) warp-specialized cooperative GEMM (one producer, two consumer
  warpgroups splitting the tile), persistent;
- :mod:`.ws_pingpong`: (3) persistent ping-pong GEMM (consumer warpgroups alternate tiles, ordered by
  named barriers);
- :mod:`.triton_dot`: the baseline, Triton's ``tl.dot`` over a comparable config set;
- :mod:`.cluster_multicast`: (6) a 2-CTA cluster GEMM with TMA multicast, written out but not in ``MODULES``:
  uTLX 3.8.0.post16 cannot build it (``tests/kernels/test_gemm_cluster_compile.py`` pins the errors).

Every module has ``CONFIGS`` (first = default), ``DEFAULT``, ``prepare(a, b, config, out)`` (the launch
arguments; CPU tensors work, for compile-only inspection), ``launch(a, b, config, out)`` (one plain
``kernel[grid](...)``), ``matmul(a, b, config=None, out=None, graph=False)`` (tunes on first use, then launches
from a per-problem cache, :mod:`tlx_kernels.launch`; :mod:`.calls`) and ``candidates()`` (the configs
``bench/gemm.py --sweep`` tries); the TLX modules also name their ``kernel``. Kernels are real TLX
(``import triton.language.extra.tlx as tlx``, ``@triton.jit``, from ``triton-utlx``); nothing here imports
the workbench. TLX K loops are written
``tl.range(..., num_stages=0)``: Triton's own software pipeliner would otherwise add a wgmma wait(0)
after every ``async_dot`` and serialize the hand-pipelined loop.
"""

from __future__ import annotations

from types import ModuleType

from tlx_kernels.gemm import common, tma_pipelined, triton_dot, ws_cooperative, ws_pingpong
from tlx_kernels.gemm.common import BENCH_SHAPES, ODD_SHAPES, QUICK_SHAPES, TEST_SHAPES, reference, rel_err

MODULES: dict[str, ModuleType] = {
    "tma_pipelined": tma_pipelined,
    "ws_cooperative": ws_cooperative,
    "ws_pingpong": ws_pingpong,
    "triton_dot": triton_dot,
}
KERNELS = {
    "tma_pipelined": tma_pipelined.tma_pipelined_kernel,
    "ws_cooperative": ws_cooperative.ws_cooperative_kernel,
    "ws_pingpong": ws_pingpong.ws_pingpong_kernel,
}

__all__ = [
    "BENCH_SHAPES",
    "KERNELS",
    "MODULES",
    "ODD_SHAPES",
    "QUICK_SHAPES",
    "TEST_SHAPES",
    "common",
    "reference",
    "rel_err",
    "tma_pipelined",
    "triton_dot",
    "ws_cooperative",
    "ws_pingpong",
]
