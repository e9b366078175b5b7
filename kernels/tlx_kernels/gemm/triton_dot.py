"""Baseline: Triton's own ``tl.dot`` GEMM, tuned over a config set comparable to ours.

Two kernels, both reading A and B through host TMA descriptors (row- or column-major, like ours) and
storing C through one:

- ``dot_kernel``: one CTA per tile, Triton's software pipeliner (``num_stages``) over K;
- ``dot_persistent_kernel``: a persistent grid (one CTA per SM) over ``tl.range(..., flatten=True,
  warp_specialize=WS)``: Triton's automatic warp specialization, its strongest Hopper GEMM path.

The tuner (``common.Tuner``) picks the fastest of :data:`CONFIGS` per problem on the GPU.
"""

from __future__ import annotations

from typing import Any

import triton
import triton.language as tl

from tlx_kernels.gemm import common as C
from tlx_kernels.gemm import device as dev
from tlx_kernels.gemm.calls import Matmul


@triton.jit
def _dot_step(a_desc, b_desc, acc, off_m, off_n, off_k, A_T: tl.constexpr, B_T: tl.constexpr):
    """``acc`` plus the product of one K-step's A and B boxes, loaded through their descriptors (a transposed view
    where the storage is ``A.T`` or ``B.T``)."""
    if A_T:
        a = a_desc.load([off_k, off_m]).T
    else:
        a = a_desc.load([off_m, off_k])
    if B_T:
        b = b_desc.load([off_n, off_k]).T
    else:
        b = b_desc.load([off_k, off_n])
    return tl.dot(a, b, acc)


@triton.jit
def dot_kernel(a_desc, b_desc, c_desc, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
               GROUP_M: tl.constexpr, A_T: tl.constexpr, B_T: tl.constexpr, NUM_STAGES: tl.constexpr):
    num_pid_m = tl.cdiv(M, BM)
    num_pid_n = tl.cdiv(N, BN)
    pid_m, pid_n = dev.tile_coords(tl.program_id(0), num_pid_m, num_pid_n, GROUP_M)
    off_m = pid_m * BM
    off_n = pid_n * BN
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for kt in tl.range(0, tl.cdiv(K, BK), num_stages=NUM_STAGES):
        acc = _dot_step(a_desc, b_desc, acc, off_m, off_n, kt * BK, A_T, B_T)
    c_desc.store([off_m, off_n], acc.to(c_desc.dtype))


@triton.jit
def dot_persistent_kernel(a_desc, b_desc, c_desc, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                          GROUP_M: tl.constexpr, A_T: tl.constexpr, B_T: tl.constexpr, NUM_SMS: tl.constexpr,
                          WS: tl.constexpr):
    num_pid_m = tl.cdiv(M, BM)
    num_pid_n = tl.cdiv(N, BN)
    num_tiles = num_pid_m * num_pid_n
    k_tiles = tl.cdiv(K, BK)
    for tile in tl.range(tl.program_id(0), num_tiles, NUM_SMS, flatten=True, warp_specialize=WS):
        pid_m, pid_n = dev.tile_coords(tile, num_pid_m, num_pid_n, GROUP_M)
        off_m = pid_m * BM
        off_n = pid_n * BN
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for kt in range(k_tiles):
            acc = _dot_step(a_desc, b_desc, acc, off_m, off_n, kt * BK, A_T, B_T)
        c_desc.store([off_m, off_n], acc.to(c_desc.dtype))


# PERSISTENT selects dot_persistent_kernel (NUM_SMS set at launch); WS asks Triton to warp-specialize its loop
# (tests/kernels/test_gemm_compile.py records whether Triton 3.8 does on sm_90).
# H200 sweep 2026-12-03: first (= default) fastest at 8192^3 + 4096^3; TFLOP/s at 8192^3 / 4096^3 / 2048^3.
CONFIGS: list[dict[str, Any]] = [
    dict(PERSISTENT=True, WS=True, BM=128, BN=256, BK=64, GROUP_M=8, num_stages=3, num_warps=8),  # 706 / 696 / 559
    dict(PERSISTENT=False, BM=128, BN=256, BK=64, GROUP_M=16, NUM_STAGES=3, num_stages=3,
         num_warps=8),  # 696 / 697 / 593
]
DEFAULT: dict[str, Any] = CONFIGS[0]
KIND = "triton"


def candidates() -> list[dict[str, Any]]:
    """The sweep space of ``bench/gemm.py --sweep``: CONFIGS, then the 128x256 and 128x128 tiles, persistent and
    not, with GROUP_M 8 and 16."""
    tiles = [dict(PERSISTENT=True, WS=True, BM=128, BN=256, BK=64, GROUP_M=8, num_stages=3, num_warps=8),
             dict(PERSISTENT=True, WS=True, BM=128, BN=128, BK=64, GROUP_M=8, num_stages=4, num_warps=8),
             dict(PERSISTENT=False, BM=128, BN=256, BK=64, GROUP_M=8, NUM_STAGES=3, num_stages=3, num_warps=8)]
    tiles += [dict(c, GROUP_M=16) for c in tiles]
    tiles += [dict(PERSISTENT=False, BM=128, BN=128, BK=64, GROUP_M=8, NUM_STAGES=4, num_stages=4, num_warps=w)
              for w in (4, 8)]
    named: dict[str, dict[str, Any]] = {}
    for cfg in [*CONFIGS, *tiles]:
        named.setdefault(C.config_name(cfg), dict(cfg))
    return list(named.values())
_tuner = C.Tuner()


def _ensure_allocator() -> None:
    # Triton's warp specialization / TMA paths may ask for a global scratch allocator.
    try:
        import torch

        triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
    except Exception:  # pragma: no cover
        pass


def prepare(a, b, config: dict[str, Any] | None = None, out=None, sms: int | None = None):
    """(kernel, args, kwargs, grid, out) of one launch."""
    cfg = dict(config or DEFAULT)
    ops = C.operands(a, b, out)
    BM, BN, BK = cfg["BM"], cfg["BN"], cfg["BK"]
    a_desc, b_desc = C.ab_descriptors(ops, BM, BN, BK)
    c_desc = C.descriptor(ops.c, [BM, BN])
    persistent = cfg.pop("PERSISTENT")
    kw = dict(cfg, A_T=ops.a_t, B_T=ops.b_t)
    if persistent:
        grid = C.persistent_grid(ops, BM, BN, sms, a)
        kw["NUM_SMS"] = grid[0]
        kernel = dot_persistent_kernel
    else:
        kernel, grid = dot_kernel, C.tiles_grid(ops, BM, BN)
    return kernel, (a_desc, b_desc, c_desc, ops.M, ops.N, ops.K), kw, grid, ops.c


_matmul = Matmul(None, prepare, CONFIGS, _tuner, before=lambda a: _ensure_allocator() if a.is_cuda else None)
launch, matmul = _matmul.launch, _matmul.matmul
reference = C.reference
