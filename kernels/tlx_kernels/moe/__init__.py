"""Grouped GEMM for mixture-of-experts layers (issue 27): the forward and both backward products, on Hopper.

- :mod:`.schedule`: the tile schedule every kernel here shares (``@triton.jit``): which tile of which group a
  persistent program handles, walking ``offsets`` on the device;
- :mod:`.triton_grouped`: the baseline in plain Triton (``tl.dot``, device-built TMA descriptors);
- :mod:`.ws_cooperative`: the TLX kernel: a TMA producer and two wgmma consumer warpgroups, one mbarrier ring
  across tiles and groups, descriptors built per group on the device;
- :mod:`.problem`: the three products (``fwd``, ``dx``, ``dw``) as kernel arguments; :mod:`.reference`: a loop of
  ``torch.matmul`` in fp32; :mod:`.routing`: token counts per expert and the benchmark's shapes;
- :mod:`.calls`: :func:`grouped_mm`, :func:`grouped_mm_dx`, :func:`grouped_mm_dw` (tuned per problem size);
- :mod:`.autograd`: :func:`grouped_linear`, the forward with its backward for ``torch.autograd``;
- :mod:`.dispatch`: the MoE layer around it (routing, weighted combine), on one device or expert-parallel over a
  process group with plain all-to-alls (the baseline of ``bench/notes/moe-communication.md``).

Nothing here imports the workbench.
"""

from __future__ import annotations

from tlx_kernels.moe import autograd, dispatch, problem, reference, routing, schedule, triton_grouped, ws_cooperative
from tlx_kernels.moe.autograd import grouped_linear
from tlx_kernels.moe.calls import (
    CANDIDATES,
    VARIANTS,
    grouped_mm,
    grouped_mm_dw,
    grouped_mm_dx,
    launch,
    prepare,
)

__all__ = ["CANDIDATES", "VARIANTS", "autograd", "dispatch", "grouped_linear", "grouped_mm",
           "grouped_mm_dw", "grouped_mm_dx", "launch", "prepare",
           "problem", "reference", "routing", "schedule", "triton_grouped", "ws_cooperative"]
