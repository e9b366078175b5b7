"""(3) Persistent ping-pong GEMM: two consumer warpgroups alternate whole tiles.

The grid is at most one CTA per SM; a CTA's tiles are ``pid, pid + grid, ...`` (GROUP_M-swizzled),
numbered ``j = 0, 1, 2, ...`` locally. Roles (``tlx.async_tasks``):

- producer (default task, 4 warps, low register budget): streams the A and B tiles of every local
  tile, in order, through one ``NUM_STAGES``-deep ring (``full``/``empty`` mbarriers);
- consumer ``cid`` (``replicate=2``, 4 warps, ``CONSUMER_REGS`` registers) computes the whole
  ``BM x BN`` tile of every local tile ``j`` with ``j % 2 == cid``. Its ring position for tile ``j``,
  step ``k`` is ``j * num_k + k``: the ring is shared and consumed in the producer's order.

Named barriers (hardware ids 9 and 10, 256 threads = both consumer warpgroups) hand the tensor
cores back and forth: consumer 0 waits on 9 before its main loop, consumer 1 on 10; each arrives on
the other's barrier once it has issued its last wgmma of a tile (only if the other has a next tile,
so no arrival is left dangling at exit), and consumer 1 arrives on 9 once at the start so consumer
0 goes first. While one consumer runs its main loop, the other runs its epilogue (fp32 -> bf16,
registers -> shared memory -> TMA store): the epilogue of one overlaps the main loop of the other.
"""

from __future__ import annotations

from typing import Any

import triton
import triton.language as tl

from tlx_kernels.gemm import common as C
from tlx_kernels.gemm.fastlaunch import FastLauncher
from workbench import tlx


@tlx.jit
def ws_pingpong_kernel(
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
    c_bufs = tlx.local_alloc((BM, BN), out_dtype, 2)
    full = tlx.alloc_barriers(NUM_STAGES, arrive_count=1)
    empty = tlx.alloc_barriers(NUM_STAGES, arrive_count=1)

    num_pid_m = tl.cdiv(M, BM)
    num_pid_n = tl.cdiv(N, BN)
    num_tiles = num_pid_m * num_pid_n
    num_k = tl.cdiv(K, BK)
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    my_tiles = tl.cdiv(num_tiles - pid, nprog)  # tiles of this CTA (grid <= num_tiles, so >= 1)
    with tlx.async_tasks():
        with tlx.async_task("default"):  # producer
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
                    else:
                        tlx.async_descriptor_load(a_desc, a_bufs[slot], [off_m, k * BK], full[slot])
                    if B_T:
                        tlx.async_descriptor_load(b_desc, b_bufs[slot], [off_n, k * BK], full[slot])
                    else:
                        tlx.async_descriptor_load(b_desc, b_bufs[slot], [k * BK, off_n], full[slot])
                    it += 1
        with tlx.async_task(num_warps=4, num_regs=CONSUMER_REGS, replicate=2):  # consumers: alternate tiles
            cid = tlx.async_task_replica_id()
            if cid == 1:
                tlx.named_barrier_arrive(9, 256)  # consumer 0 takes the tensor cores first
            for j in range(cid, my_tiles, 2):
                tile = pid + j * nprog
                pid_m, pid_n = C.tile_coords(tile, num_pid_m, num_pid_n, GROUP_M)
                it = j * num_k
                # my turn on the tensor cores
                if cid == 0:
                    tlx.named_barrier_wait(9, 256)
                else:
                    tlx.named_barrier_wait(10, 256)
                acc = tl.zeros((BM, BN), dtype=tl.float32)
                for k in range(num_k):
                    slot, phase = tlx.get_bufidx_phase(it, NUM_STAGES)
                    tlx.barrier_wait(full[slot], phase)
                    a = a_bufs[slot]
                    if A_T:
                        a = tlx.local_trans(a)
                    b = b_bufs[slot]
                    if B_T:
                        b = tlx.local_trans(b)
                    acc = tlx.async_dot(a, b, acc)
                    acc = tlx.async_dot_wait(1, acc)
                    if k > 0:
                        tlx.barrier_arrive(empty[(it + NUM_STAGES - 1) % NUM_STAGES])
                    it += 1
                # all wgmmas of this tile are issued: hand the tensor cores to the other consumer
                if j + 1 < my_tiles:
                    if cid == 0:
                        tlx.named_barrier_arrive(10, 256)
                    else:
                        tlx.named_barrier_arrive(9, 256)
                acc = tlx.async_dot_wait(0, acc)
                tlx.barrier_arrive(empty[(it + NUM_STAGES - 1) % NUM_STAGES])
                # epilogue, overlapping the other consumer's main loop
                c = acc.to(out_dtype)
                tlx.async_descriptor_store_wait(0)  # my previous tile's store has read c_bufs[cid]
                tlx.local_store(c_bufs[cid], c)
                tlx.fence_async_shared()
                tlx.async_descriptor_store(c_desc, c_bufs[cid], [pid_m * BM, pid_n * BN])
            tlx.async_descriptor_store_wait(0)


# First = default. smem: ring S x (BM x BK + BK x BN) x 2 B + 2 epilogue tiles BM x BN x 2 B.
CONFIGS: list[dict[str, Any]] = [
    dict(BM=128, BN=128, BK=64, NUM_STAGES=5, GROUP_M=8, CONSUMER_REGS=232, num_warps=4),
    dict(BM=128, BN=128, BK=64, NUM_STAGES=4, GROUP_M=8, CONSUMER_REGS=232, num_warps=4),
    dict(BM=128, BN=128, BK=64, NUM_STAGES=5, GROUP_M=16, CONSUMER_REGS=232, num_warps=4),
    dict(BM=64, BN=256, BK=64, NUM_STAGES=4, GROUP_M=8, CONSUMER_REGS=232, num_warps=4),
]
DEFAULT: dict[str, Any] = CONFIGS[0]
KIND = "pingpong"
_tuner = C.Tuner()


def prepare(a, b, config: dict[str, Any] | None = None, out=None, sms: int | None = None):
    """(args, kwargs, grid, out) of one launch: descriptors for ``config``'s tiles, persistent grid."""
    cfg = dict(config or DEFAULT)
    ops = C.operands(a, b, out)
    BM, BN, BK = cfg["BM"], cfg["BN"], cfg["BK"]
    a_desc, b_desc = C.ab_descriptors(ops, BM, BN, BK)
    c_desc = C.descriptor(ops.c, [BM, BN])
    tiles = triton.cdiv(ops.M, BM) * triton.cdiv(ops.N, BN)
    grid = (max(1, min(tiles, sms or C.num_sms(a))),)
    kwargs = dict(cfg, A_T=ops.a_t, B_T=ops.b_t)
    return (a_desc, b_desc, c_desc, ops.M, ops.N, ops.K), kwargs, grid, ops.c


_launcher = FastLauncher(ws_pingpong_kernel, prepare)


def launch(a, b, config: dict[str, Any] | None = None, out=None):
    """One launch with ``config`` (default :data:`DEFAULT`); repeats of a problem skip Triton's dispatch."""
    return _launcher(a, b, dict(config or DEFAULT), out)


def matmul(a, b, *, config: dict[str, Any] | None = None, out=None):
    """``a @ b`` (bf16/fp16, fp32 accumulation), row- or column-major operands, any shape.

    Without ``config`` the first call for a problem size tunes over :data:`CONFIGS` on the GPU.
    """
    return C.tuned_matmul(launch, CONFIGS, _tuner, a, b, config, out)


reference = C.reference
