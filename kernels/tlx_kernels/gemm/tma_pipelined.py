"""(1) Pipelined single-role TMA GEMM: every warp loads, multiplies and stores (no warp specialization).

One CTA per ``BM x BN`` output tile (GROUP_M-swizzled launch order). A ``NUM_STAGES``-deep ring of
shared buffers, one ``ready`` mbarrier per slot: the prologue issues the TMA copies of the first
``NUM_STAGES - 1`` K-steps; each step waits for its slot, issues an asynchronous wgmma, waits until
only that wgmma is in flight (so the previous step's slot is free) and refills that slot with the
K-step ``NUM_STAGES - 1`` ahead. Epilogue: fp32 accumulator -> output dtype -> shared memory -> TMA
store (clipped at the matrix edge). With ``num_warps=8`` the accumulator is split by rows over two
warpgroups (64 rows each).
"""

from __future__ import annotations

from typing import Any

import triton
import triton.language as tl

from tlx_kernels.gemm import common as C
from tlx_kernels.gemm.fastlaunch import FastLauncher
from workbench import tlx


@tlx.jit
def tma_pipelined_kernel(
    a_desc,
    b_desc,
    c_desc,
    M,
    N,
    K,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
    NUM_STAGES: tl.constexpr,
    GROUP_M: tl.constexpr,
    A_T: tl.constexpr,
    B_T: tl.constexpr,
):
    dtype = tlx.dtype_of(a_desc)
    out_dtype = tlx.dtype_of(c_desc)
    if A_T:
        a_bufs = tlx.local_alloc((BK, BM), dtype, NUM_STAGES)
    else:
        a_bufs = tlx.local_alloc((BM, BK), dtype, NUM_STAGES)
    if B_T:
        b_bufs = tlx.local_alloc((BN, BK), dtype, NUM_STAGES)
    else:
        b_bufs = tlx.local_alloc((BK, BN), dtype, NUM_STAGES)
    c_buf = tlx.local_alloc((BM, BN), out_dtype, 1)
    ready = tlx.alloc_barriers(NUM_STAGES, arrive_count=1)

    num_pid_m = tl.cdiv(M, BM)
    num_pid_n = tl.cdiv(N, BN)
    pid_m, pid_n = C.tile_coords(tl.program_id(0), num_pid_m, num_pid_n, GROUP_M)
    off_m = pid_m * BM
    off_n = pid_n * BN
    num_k = tl.cdiv(K, BK)
    STEP_BYTES: tl.constexpr = (BM * BK + BK * BN) * tlx.size_of(dtype)

    # prologue: the first NUM_STAGES - 1 K-steps in flight
    for i in tl.static_range(NUM_STAGES - 1):
        if i < num_k:
            tlx.barrier_expect_bytes(ready[i], STEP_BYTES)
            if A_T:
                tlx.async_descriptor_load(a_desc, a_bufs[i], [i * BK, off_m], ready[i])
            else:
                tlx.async_descriptor_load(a_desc, a_bufs[i], [off_m, i * BK], ready[i])
            if B_T:
                tlx.async_descriptor_load(b_desc, b_bufs[i], [off_n, i * BK], ready[i])
            else:
                tlx.async_descriptor_load(b_desc, b_bufs[i], [i * BK, off_n], ready[i])

    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(num_k):
        slot, phase = tlx.get_bufidx_phase(k, NUM_STAGES)
        tlx.barrier_wait(ready[slot], phase)
        a = a_bufs[slot]
        if A_T:
            a = tlx.local_trans(a)
        b = b_bufs[slot]
        if B_T:
            b = tlx.local_trans(b)
        acc = tlx.async_dot(a, b, acc)
        acc = tlx.async_dot_wait(1, acc)  # step k-1's wgmma is done: its slot can be refilled
        nxt = k + NUM_STAGES - 1
        if nxt < num_k:
            ns = nxt % NUM_STAGES
            tlx.barrier_expect_bytes(ready[ns], STEP_BYTES)
            if A_T:
                tlx.async_descriptor_load(a_desc, a_bufs[ns], [nxt * BK, off_m], ready[ns])
            else:
                tlx.async_descriptor_load(a_desc, a_bufs[ns], [off_m, nxt * BK], ready[ns])
            if B_T:
                tlx.async_descriptor_load(b_desc, b_bufs[ns], [off_n, nxt * BK], ready[ns])
            else:
                tlx.async_descriptor_load(b_desc, b_bufs[ns], [nxt * BK, off_n], ready[ns])
    acc = tlx.async_dot_wait(0, acc)

    tlx.local_store(c_buf[0], acc.to(out_dtype))
    tlx.fence_async_shared()
    tlx.async_descriptor_store(c_desc, c_buf[0], [off_m, off_n])
    tlx.async_descriptor_store_wait(0)


# First = default. smem: ring S x (BM x BK + BK x BN) x 2 B + epilogue BM x BN x 2 B (limit 232,448 B).
CONFIGS: list[dict[str, Any]] = [
    dict(BM=128, BN=256, BK=64, NUM_STAGES=3, GROUP_M=8, num_warps=8),
    dict(BM=128, BN=128, BK=64, NUM_STAGES=4, GROUP_M=8, num_warps=4),
    dict(BM=128, BN=128, BK=64, NUM_STAGES=5, GROUP_M=8, num_warps=8),
    dict(BM=256, BN=128, BK=64, NUM_STAGES=3, GROUP_M=8, num_warps=8),
]
DEFAULT: dict[str, Any] = CONFIGS[0]
KIND = "single-role"
_tuner = C.Tuner()


def prepare(a, b, config: dict[str, Any] | None = None, out=None, sms: int | None = None):
    """(args, kwargs, grid, out) of one launch: descriptors for ``config``'s tiles, one CTA per tile."""
    cfg = dict(config or DEFAULT)
    ops = C.operands(a, b, out)
    BM, BN, BK = cfg["BM"], cfg["BN"], cfg["BK"]
    a_desc, b_desc = C.ab_descriptors(ops, BM, BN, BK)
    c_desc = C.descriptor(ops.c, [BM, BN])
    grid = (triton.cdiv(ops.M, BM) * triton.cdiv(ops.N, BN),)
    kwargs = dict(cfg, A_T=ops.a_t, B_T=ops.b_t)
    return (a_desc, b_desc, c_desc, ops.M, ops.N, ops.K), kwargs, grid, ops.c


_launcher = FastLauncher(tma_pipelined_kernel, prepare)


def launch(a, b, config: dict[str, Any] | None = None, out=None):
    """One launch with ``config`` (default :data:`DEFAULT`); repeats of a problem skip Triton's dispatch."""
    return _launcher(a, b, dict(config or DEFAULT), out)


def matmul(a, b, *, config: dict[str, Any] | None = None, out=None):
    """``a @ b`` (bf16/fp16, fp32 accumulation), row- or column-major operands, any shape.

    Without ``config`` the first call for a problem size tunes over :data:`CONFIGS` on the GPU.
    """
    return C.tuned_matmul(launch, CONFIGS, _tuner, a, b, config, out)


reference = C.reference
