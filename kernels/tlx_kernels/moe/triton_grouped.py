"""The baseline grouped GEMM in plain Triton (no TLX): persistent, ``tl.dot``, TMA descriptors built on the device.

One program per SM walks the shared tile schedule (:func:`.schedule.next_tile`). For each group it has tiles in,
it builds the group's descriptors with ``tl.make_tensor_descriptor``: A over the group's rows, B over its weight,
C over its output rows (TMA zero-fills what lies past a group's rows and clips the store there, so a count that is
no multiple of the tile, or 0, needs no mask). Per tile it runs the K loop under Triton's software pipeliner
(``num_stages``) and stores the tile. It is the tutorial's step 2, one persistent kernel over a static group
schedule, and the baseline the TLX kernel (:mod:`.ws_cooperative`) is timed against. On a GPU the descriptors
live in global scratch memory that Triton's allocator provides (:func:`.calls.ensure_allocator`).
"""

from __future__ import annotations

from typing import Any

import triton
import triton.language as tl

from tlx_kernels.gemm.triton_dot import _dot_step  # the dense baseline's K-step (tl.dot, transposed views)
from tlx_kernels.moe import schedule as S


@triton.jit
def grouped_dot_kernel(a, b, c, offsets, E, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                       GROUP_M: tl.constexpr, B_T: tl.constexpr, RAGGED_K: tl.constexpr,
                       NUM_STAGES: tl.constexpr):
    dtype = a.dtype.element_ty
    tile = tl.program_id(0)
    g, g_first, start, gm, gk, pid_m, pid_n = S.next_tile(tile, 0, 0, offsets, E, M, N, K, BM, BN, GROUP_M,
                                                          RAGGED_K)
    while g < E:  # one group per iteration: its descriptors, then its tiles of this program
        a_base, b_base, c_base = S.group_bases(a, b, c, g, start, M, N, K, RAGGED_K)
        if RAGGED_K:  # A = the group's rows of x, read transposed
            a_desc = tl.make_tensor_descriptor(a_base, [gk, gm], [gm, 1], [BK, BM])
        else:
            a_desc = tl.make_tensor_descriptor(a_base, [gm, gk], [gk, 1], [BM, BK])
        if B_T:
            b_desc = tl.make_tensor_descriptor(b_base, [N, gk], [gk, 1], [BN, BK])
        else:
            b_desc = tl.make_tensor_descriptor(b_base, [gk, N], [N, 1], [BK, BN])
        c_desc = tl.make_tensor_descriptor(c_base, [gm, N], [N, 1], [BM, BN])
        group = g
        while g == group:
            off_m = pid_m * BM
            off_n = pid_n * BN
            acc = tl.zeros((BM, BN), dtype=tl.float32)
            for kt in tl.range(0, tl.cdiv(gk, BK), num_stages=NUM_STAGES):
                acc = _dot_step(a_desc, b_desc, acc, off_m, off_n, kt * BK, RAGGED_K, B_T)
            c_desc.store([off_m, off_n], acc.to(dtype))
            tile += tl.num_programs(0)
            g, g_first, start, gm, gk, pid_m, pid_n = S.next_tile(tile, g, g_first, offsets, E, M, N, K, BM, BN,
                                                                  GROUP_M, RAGGED_K)

KIND = "triton"
kernel = grouped_dot_kernel
CONFIGS: list[dict[str, Any]] = [
    dict(BM=128, BN=256, BK=64, GROUP_M=8, NUM_STAGES=3, num_warps=8),
    dict(BM=128, BN=128, BK=64, GROUP_M=8, NUM_STAGES=4, num_warps=8),
    dict(BM=64, BN=128, BK=64, GROUP_M=8, NUM_STAGES=4, num_warps=4),  # small groups (many experts, few tokens)
]
DEFAULT: dict[str, Any] = CONFIGS[0]
