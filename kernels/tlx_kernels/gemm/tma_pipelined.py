"""(1) Pipelined single-role TMA GEMM: every warp loads, multiplies and stores (no warp specialization).

One CTA per ``BM x BN`` output tile (GROUP_M-swizzled launch order). A ``NUM_STAGES``-deep ring of
shared buffers, one ``ready`` mbarrier per slot: the prologue issues the TMA copies of the first
``NUM_STAGES - 1`` K-steps; each step waits for its slot, issues an asynchronous wgmma, waits until
only that wgmma is in flight (so the previous step's slot is free) and refills that slot with the
K-step ``NUM_STAGES - 1`` ahead. Epilogue: fp32 accumulator -> output dtype -> shared memory -> TMA
store (clipped at the matrix edge), in ``EPI_SPLIT`` column subtiles. With ``num_warps=8`` the
accumulator is split by rows over two warpgroups (64 rows each).
"""

from __future__ import annotations

from typing import Any

import triton
import triton.language as tl
import triton.language.extra.tlx as tlx

from tlx_kernels.gemm import common as C
from tlx_kernels.gemm import device as dev
from tlx_kernels.gemm.calls import Matmul


@triton.jit
def tma_pipelined_kernel(a_desc, b_desc, c_desc, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                         NUM_STAGES: tl.constexpr, GROUP_M: tl.constexpr, A_T: tl.constexpr, B_T: tl.constexpr,
                         EPI_SPLIT: tl.constexpr = 1, EPI_BUFS: tl.constexpr = 1):
    dtype = tlx.dtype_of(a_desc)
    a_bufs = tlx.local_alloc((BK, BM) if A_T else (BM, BK), dtype, NUM_STAGES)
    b_bufs = tlx.local_alloc((BN, BK) if B_T else (BK, BN), dtype, NUM_STAGES)
    c_bufs = tlx.local_alloc((BM, BN // EPI_SPLIT), tlx.dtype_of(c_desc), EPI_BUFS)
    ready = tlx.alloc_barriers(NUM_STAGES, arrive_count=1)
    STEP_BYTES: tl.constexpr = (BM * BK + BK * BN) * tlx.size_of(dtype)

    pid_m, pid_n = dev.tile_coords(tl.program_id(0), tl.cdiv(M, BM), tl.cdiv(N, BN), GROUP_M)
    off_m = pid_m * BM
    off_n = pid_n * BN
    num_k = tl.cdiv(K, BK)

    # prologue: the first NUM_STAGES - 1 K-steps in flight
    for i in tl.static_range(NUM_STAGES - 1):
        if i < num_k:
            tlx.barrier_expect_bytes(ready[i], STEP_BYTES)
            dev.load_step(a_desc, b_desc, a_bufs[i], b_bufs[i], ready[i], off_m, off_n, i * BK, A_T, B_T)

    acc = tl.zeros((BM, BN), dtype=tl.float32)
    # num_stages=0: Triton's software pipeliner must leave this loop alone (it would add a wait(0)
    # after every async_dot); TLX pipelines it by hand
    for k in tl.range(0, num_k, num_stages=0):
        slot = k % NUM_STAGES
        tlx.barrier_wait(ready[slot], (k // NUM_STAGES) & 1)
        acc = tlx.async_dot(dev.operand(a_bufs[slot], A_T), dev.operand(b_bufs[slot], B_T), acc)
        acc = tlx.async_dot_wait(1, acc)  # step k-1's wgmma is done: its slot can be refilled
        nxt = k + NUM_STAGES - 1
        if nxt < num_k:
            ns = nxt % NUM_STAGES
            tlx.barrier_expect_bytes(ready[ns], STEP_BYTES)
            dev.load_step(a_desc, b_desc, a_bufs[ns], b_bufs[ns], ready[ns], off_m, off_n, nxt * BK, A_T, B_T)
    acc = tlx.async_dot_wait(0, acc)

    dev.store_tile(c_desc, c_bufs, 0, acc, off_m, off_n, EPI_SPLIT, EPI_BUFS)
    tlx.async_descriptor_store_wait(0)


# smem: ring S x (BM x BK + BK x BN) x 2 B + epilogue BM x BN/EPI_SPLIT x 2 B x EPI_BUFS.
# H200 sweep 2026-12-03: first (= default) fastest at 8192^3 + 4096^3; TFLOP/s at 8192^3 / 4096^3 / 2048^3.
CONFIGS: list[dict[str, Any]] = [
    dict(BM=128, BN=256, BK=64, NUM_STAGES=4, GROUP_M=16, EPI_SPLIT=4, EPI_BUFS=2, num_warps=8),  # 725 / 694 / 549
    dict(BM=128, BN=256, BK=64, NUM_STAGES=3, GROUP_M=8, EPI_SPLIT=4, EPI_BUFS=2, num_warps=8),  # 707 / 689 / 588
    dict(BM=128, BN=256, BK=64, NUM_STAGES=3, GROUP_M=8, num_warps=8),  # 697 / 692 / 600
]
DEFAULT: dict[str, Any] = CONFIGS[0]
KIND = "single-role"


def candidates() -> list[dict[str, Any]]:
    """The sweep space of ``bench/gemm.py --sweep``: CONFIGS, then one knob at a time around the 4-stage 128x256
    tile with a split epilogue and around the 256x128 tile, and the 128x128 tile; only configs that fit in
    shared memory."""
    wide = dict(BM=128, BN=256, BK=64, NUM_STAGES=4, GROUP_M=8, EPI_SPLIT=4, EPI_BUFS=2, num_warps=8)
    tall = dict(BM=256, BN=128, BK=64, NUM_STAGES=4, GROUP_M=8, EPI_SPLIT=2, num_warps=8)
    square = dict(BM=128, BN=128, BK=64, NUM_STAGES=5, GROUP_M=8, num_warps=8)
    space = list(CONFIGS) + C.variants(wide, GROUP_M=[16], NUM_STAGES=[3], EPI_SPLIT=[2])
    space += C.variants(tall, GROUP_M=[16], EPI_SPLIT=[4]) + [square]
    return C.feasible(space, KIND)
kernel = tma_pipelined_kernel
_tuner = C.Tuner()


def prepare(a, b, config: dict[str, Any] | None = None, out=None, sms: int | None = None):
    """(args, kwargs, grid, out) of one launch: descriptors for ``config``'s tiles, one CTA per tile."""
    cfg = dict(config or DEFAULT)
    return C.tlx_prepare(a, b, cfg, out, KIND, cfg["BM"], sms, persistent=False)


_matmul = Matmul(tma_pipelined_kernel, prepare, CONFIGS, _tuner)
launch, matmul = _matmul.launch, _matmul.matmul
reference = C.reference
