"""(2) Warp-specialized cooperative GEMM: one TMA producer task, two consumer warpgroups splitting each tile.

Persistent: the grid is at most one CTA per SM; each CTA walks the output tiles ``pid, pid + grid,
...`` in GROUP_M-swizzled order. Roles (``tlx.async_tasks``):

- producer (the default task, 4 warps, register budget lowered by setmaxnreg): waits for a free slot
  of the ``NUM_STAGES``-deep ring (``empty``), arms ``full`` with the bytes to expect and issues three
  TMA copies: the top and bottom halves of the A tile and the whole B tile;
- two consumers (``replicate=2``, 4 warps each, ``CONSUMER_REGS`` registers): consumer ``cid`` owns rows
  ``cid * BM/2 ...`` of the tile, waits on ``full``, issues an asynchronous wgmma on its half of A and
  the shared B tile, keeps one wgmma in flight and releases the previous slot (``empty`` completes
  when both consumers have arrived). Epilogue: registers -> shared memory -> TMA store, which runs
  while the producer already fills the ring for the next tile (with ``EPI_SPLIT=2``: two column
  halves in turn through a buffer half the size, so the ring can be one stage deeper).
"""

from __future__ import annotations

from typing import Any

import triton
import triton.language as tl

from tlx_kernels.gemm import common as C
from tlx_kernels.gemm.fastlaunch import FastLauncher
from workbench import tlx


@tlx.jit
def ws_cooperative_kernel(
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
    CONSUMER_REGS: tl.constexpr,
    EPI_SPLIT: tl.constexpr,
):
    dtype = tlx.dtype_of(a_desc)
    out_dtype = tlx.dtype_of(c_desc)
    HALF: tl.constexpr = BM // 2
    if A_T:
        a_bufs = tlx.local_alloc((BK, HALF), dtype, 2 * NUM_STAGES)
    else:
        a_bufs = tlx.local_alloc((HALF, BK), dtype, 2 * NUM_STAGES)
    if B_T:
        b_bufs = tlx.local_alloc((BN, BK), dtype, NUM_STAGES)
    else:
        b_bufs = tlx.local_alloc((BK, BN), dtype, NUM_STAGES)
    EPI_N: tl.constexpr = BN // EPI_SPLIT
    c_bufs = tlx.local_alloc((HALF, EPI_N), out_dtype, 2)
    full = tlx.alloc_barriers(NUM_STAGES, arrive_count=1)
    empty = tlx.alloc_barriers(NUM_STAGES, arrive_count=2)

    num_pid_m = tl.cdiv(M, BM)
    num_pid_n = tl.cdiv(N, BN)
    num_tiles = num_pid_m * num_pid_n
    num_k = tl.cdiv(K, BK)
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    with tlx.async_tasks():
        with tlx.async_task("default"):  # producer: TMA into the ring
            it = 0
            for tile in range(pid, num_tiles, nprog):
                pid_m, pid_n = C.tile_coords(tile, num_pid_m, num_pid_n, GROUP_M)
                off_m = pid_m * BM
                off_n = pid_n * BN
                for k in range(num_k):
                    slot, phase = tlx.get_bufidx_phase(it, NUM_STAGES)
                    tlx.barrier_wait(empty[slot], phase ^ 1)
                    tlx.barrier_expect_bytes(full[slot], (BM * BK + BK * BN) * tlx.size_of(dtype))
                    if A_T:
                        tlx.async_descriptor_load(a_desc, a_bufs[slot], [k * BK, off_m], full[slot])
                        tlx.async_descriptor_load(a_desc, a_bufs[NUM_STAGES + slot], [k * BK, off_m + HALF], full[slot])
                    else:
                        tlx.async_descriptor_load(a_desc, a_bufs[slot], [off_m, k * BK], full[slot])
                        tlx.async_descriptor_load(a_desc, a_bufs[NUM_STAGES + slot], [off_m + HALF, k * BK], full[slot])
                    if B_T:
                        tlx.async_descriptor_load(b_desc, b_bufs[slot], [off_n, k * BK], full[slot])
                    else:
                        tlx.async_descriptor_load(b_desc, b_bufs[slot], [k * BK, off_n], full[slot])
                    it += 1
        with tlx.async_task(num_warps=4, num_regs=CONSUMER_REGS, replicate=2):  # consumers: half a tile each
            cid = tlx.async_task_replica_id()
            it = 0
            for tile in range(pid, num_tiles, nprog):
                pid_m, pid_n = C.tile_coords(tile, num_pid_m, num_pid_n, GROUP_M)
                acc = tl.zeros((HALF, BN), dtype=tl.float32)
                for k in range(num_k):
                    slot, phase = tlx.get_bufidx_phase(it, NUM_STAGES)
                    tlx.barrier_wait(full[slot], phase)
                    a = a_bufs[cid * NUM_STAGES + slot]
                    if A_T:
                        a = tlx.local_trans(a)
                    b = b_bufs[slot]
                    if B_T:
                        b = tlx.local_trans(b)
                    acc = tlx.async_dot(a, b, acc)
                    # one wgmma stays in flight: the one of the previous step is done, free its slot
                    acc = tlx.async_dot_wait(1, acc)
                    if k > 0:
                        tlx.barrier_arrive(empty[(it + NUM_STAGES - 1) % NUM_STAGES])
                    it += 1
                acc = tlx.async_dot_wait(0, acc)
                tlx.barrier_arrive(empty[(it + NUM_STAGES - 1) % NUM_STAGES])
                c = acc.to(out_dtype)
                if EPI_SPLIT == 1:
                    tlx.async_descriptor_store_wait(0)  # the previous tile's store has read c_bufs[cid]
                    tlx.local_store(c_bufs[cid], c)
                    tlx.fence_async_shared()
                    tlx.async_descriptor_store(c_desc, c_bufs[cid], [pid_m * BM + cid * HALF, pid_n * BN])
                else:  # two column halves through one HALF x BN/2 buffer (frees shared memory for the ring)
                    c0, c1 = tl.split(tl.permute(tl.reshape(c, [HALF, 2, EPI_N]), [0, 2, 1]))
                    tlx.async_descriptor_store_wait(0)
                    tlx.local_store(c_bufs[cid], c0)
                    tlx.fence_async_shared()
                    tlx.async_descriptor_store(c_desc, c_bufs[cid], [pid_m * BM + cid * HALF, pid_n * BN])
                    tlx.async_descriptor_store_wait(0)
                    tlx.local_store(c_bufs[cid], c1)
                    tlx.fence_async_shared()
                    tlx.async_descriptor_store(c_desc, c_bufs[cid], [pid_m * BM + cid * HALF, pid_n * BN + EPI_N])
            tlx.async_descriptor_store_wait(0)


# Small config set for the GPU tuner (first = default).
# smem: ring S x (BM x BK + BK x BN) x 2 B + epilogue BM x BN x 2 B / EPI_SPLIT (limit 232,448 B).
# EPI_SPLIT=2: each consumer stores its HALF x BN accumulator as two HALF x BN/2 TMA stores through one
# buffer (the split is free: no convert_layout, same stmatrix count), which leaves room for a 4th stage
# of the 128x256x64 ring: 4 x 48 KiB + 32 KiB = 229,376 B (+ barriers) instead of 3 x 48 KiB + 64 KiB.
CONFIGS: list[dict[str, Any]] = [
    dict(BM=128, BN=256, BK=64, NUM_STAGES=3, GROUP_M=8, CONSUMER_REGS=232, num_warps=4),
    dict(BM=128, BN=256, BK=64, NUM_STAGES=4, GROUP_M=16, CONSUMER_REGS=232, EPI_SPLIT=2, num_warps=4),
    dict(BM=128, BN=256, BK=64, NUM_STAGES=3, GROUP_M=16, CONSUMER_REGS=232, num_warps=4),
    dict(BM=128, BN=128, BK=64, NUM_STAGES=5, GROUP_M=8, CONSUMER_REGS=232, num_warps=4),
    dict(BM=256, BN=128, BK=64, NUM_STAGES=3, GROUP_M=8, CONSUMER_REGS=232, num_warps=4),
    dict(BM=128, BN=256, BK=64, NUM_STAGES=4, GROUP_M=8, CONSUMER_REGS=232, EPI_SPLIT=2, num_warps=4),
]
DEFAULT: dict[str, Any] = CONFIGS[0]
KIND = "cooperative"
_tuner = C.Tuner()


def prepare(a, b, config: dict[str, Any] | None = None, out=None, sms: int | None = None):
    """(args, kwargs, grid, out) of one launch: descriptors for ``config``'s tiles, persistent grid."""
    cfg = dict(config or DEFAULT)
    ops = C.operands(a, b, out)
    BM, BN, BK = cfg["BM"], cfg["BN"], cfg["BK"]
    a_desc, b_desc = C.ab_descriptors(ops, BM // 2, BN, BK)
    c_desc = C.descriptor(ops.c, [BM // 2, BN // cfg.get("EPI_SPLIT", 1)])
    tiles = triton.cdiv(ops.M, BM) * triton.cdiv(ops.N, BN)
    grid = (max(1, min(tiles, sms or C.num_sms(a))),)
    kwargs = dict(cfg, A_T=ops.a_t, B_T=ops.b_t)
    kwargs.setdefault("EPI_SPLIT", 1)
    return (a_desc, b_desc, c_desc, ops.M, ops.N, ops.K), kwargs, grid, ops.c


_launcher = FastLauncher(ws_cooperative_kernel, prepare)


def launch(a, b, config: dict[str, Any] | None = None, out=None):
    """One launch with ``config`` (default :data:`DEFAULT`); repeats of a problem skip Triton's dispatch."""
    return _launcher(a, b, dict(config or DEFAULT), out)


def matmul(a, b, *, config: dict[str, Any] | None = None, out=None):
    """``a @ b`` (bf16/fp16, fp32 accumulation), row- or column-major operands, any shape.

    Without ``config`` the first call for a problem size tunes over :data:`CONFIGS` on the GPU.
    """
    return C.tuned_matmul(launch, CONFIGS, _tuner, a, b, config, out)


reference = C.reference
