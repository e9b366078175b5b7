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
0 goes first. While one consumer runs its main loop, the other runs its epilogue (fp32 -> output
dtype, registers -> shared memory -> TMA store, in ``EPI_SPLIT`` subtiles): the epilogue of one
overlaps the main loop of the other.
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
def _consume(c_desc, a_bufs, b_bufs, c_bufs, full, empty, M, N, K, cid: tl.constexpr, BM: tl.constexpr,
             BN: tl.constexpr, BK: tl.constexpr, NUM_STAGES: tl.constexpr, GROUP_M: tl.constexpr,
             A_T: tl.constexpr, B_T: tl.constexpr, EPI_SPLIT: tl.constexpr, EPI_BUFS: tl.constexpr):
    num_pid_m, num_pid_n, num_k = dev.tile_counts(M, N, K, BM, BN, BK)
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    my_tiles = tl.cdiv(num_pid_m * num_pid_n - pid, nprog)  # tiles of this CTA (grid <= tiles, so >= 1)
    if cid == 1:
        tlx.named_barrier_arrive(9, 256)  # consumer 0 takes the tensor cores first
    for j in range(cid, my_tiles, 2):
        pid_m, pid_n = dev.tile_coords(pid + j * nprog, num_pid_m, num_pid_n, GROUP_M)
        it = j * num_k
        tlx.named_barrier_wait(9 + cid, 256)  # my turn on the tensor cores
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        acc, prev, it = dev.mma_steps(a_bufs, b_bufs, full, empty, acc, it, num_k, 0, NUM_STAGES, A_T, B_T, 1)
        # every wgmma of this tile is issued: hand the tensor cores to the other consumer
        if j + 1 < my_tiles:
            tlx.named_barrier_arrive(10 - cid, 256)
        acc = tlx.async_dot_wait(0, acc)
        tlx.barrier_arrive(empty[prev])
        # epilogue, overlapping the other consumer's main loop
        dev.store_tile(c_desc, c_bufs, cid * EPI_BUFS, acc, pid_m * BM, pid_n * BN, EPI_SPLIT, EPI_BUFS)
    tlx.async_descriptor_store_wait(0)


@triton.jit
def ws_pingpong_kernel(a_desc, b_desc, c_desc, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                       NUM_STAGES: tl.constexpr, GROUP_M: tl.constexpr, A_T: tl.constexpr, B_T: tl.constexpr,
                       CONSUMER_REGS: tl.constexpr = 232, EPI_SPLIT: tl.constexpr = 1, EPI_BUFS: tl.constexpr = 1):
    dtype = tlx.dtype_of(a_desc)
    a_bufs = tlx.local_alloc((BK, BM) if A_T else (BM, BK), dtype, NUM_STAGES)
    b_bufs = tlx.local_alloc((BN, BK) if B_T else (BK, BN), dtype, NUM_STAGES)
    c_bufs = tlx.local_alloc((BM, BN // EPI_SPLIT), tlx.dtype_of(c_desc), 2 * EPI_BUFS)
    full = tlx.alloc_barriers(NUM_STAGES, arrive_count=1)
    empty = tlx.alloc_barriers(NUM_STAGES, arrive_count=1)

    # the roles as in ws_cooperative.py, declared in each kernel on purpose: the orchestration view names them here
    with tlx.async_tasks():
        with tlx.async_task("default"):
            dev.produce(a_desc, b_desc, a_bufs, b_bufs, full, empty, M, N, K, BM, BN, BK, NUM_STAGES, GROUP_M, A_T,
                        B_T, False)
        with tlx.async_task(num_warps=4, registers=CONSUMER_REGS, replicate=2):
            cid: tl.constexpr = tlx.async_task_replica_id()
            _consume(c_desc, a_bufs, b_bufs, c_bufs, full, empty, M, N, K, cid, BM, BN, BK, NUM_STAGES, GROUP_M,
                     A_T, B_T, EPI_SPLIT, EPI_BUFS)


# smem: ring S x (BM x BK + BK x BN) x 2 B + 2 consumers x BM x BN/EPI_SPLIT x 2 B x EPI_BUFS.
# H200 sweep 2026-12-03: first (= default) fastest at 8192^3 + 4096^3; TFLOP/s at 8192^3 / 4096^3 / 2048^3.
CONFIGS: list[dict[str, Any]] = [
    dict(BM=128, BN=128, BK=64, NUM_STAGES=6, GROUP_M=4, EPI_SPLIT=2, num_warps=4),  # 752 / 652 / 533
    dict(BM=128, BN=128, BK=64, NUM_STAGES=5, GROUP_M=8, num_warps=4),  # 709 / 669 / 584
    dict(BM=128, BN=128, BK=64, NUM_STAGES=6, GROUP_M=8, EPI_SPLIT=4, EPI_BUFS=2, num_warps=4),  # 678 / 676 / 586
    dict(BM=128, BN=128, BK=64, NUM_STAGES=6, GROUP_M=8, EPI_SPLIT=2, num_warps=4),  # 663 / 686 / 563
    dict(BM=128, BN=128, BK=64, NUM_STAGES=6, GROUP_M=16, EPI_SPLIT=4, EPI_BUFS=2, num_warps=4),  # 674 / 670 / 586
    dict(BM=64, BN=256, BK=64, NUM_STAGES=5, GROUP_M=16, EPI_SPLIT=4, num_warps=4),  # 655 / 650 / 601
]
DEFAULT: dict[str, Any] = CONFIGS[0]
KIND = "pingpong"


def candidates() -> list[dict[str, Any]]:
    """The sweep space of ``bench/gemm.py --sweep``: CONFIGS, then one knob at a time around the 128x128 tile
    with a 6-stage ring and the 64x256 tile; only configs that fit in shared memory."""
    square = dict(BM=128, BN=128, BK=64, NUM_STAGES=6, GROUP_M=8, EPI_SPLIT=2, num_warps=4)
    flat = dict(square, BM=64, BN=256, NUM_STAGES=5, EPI_SPLIT=4)
    space = list(CONFIGS)
    space += C.variants(square, GROUP_M=[16, 4], NUM_STAGES=[5, 7], EPI_SPLIT=[4, 1], CONSUMER_REGS=[240])
    space += C.variants(dict(square, EPI_SPLIT=4, EPI_BUFS=2), NUM_STAGES=[5])
    space += C.variants(flat, GROUP_M=[16], NUM_STAGES=[4], EPI_SPLIT=[2])
    return C.feasible(space, KIND)
kernel = ws_pingpong_kernel
_tuner = C.Tuner()


def prepare(a, b, config: dict[str, Any] | None = None, out=None, sms: int | None = None):
    """(args, kwargs, grid, out) of one launch: descriptors for ``config``'s tiles, persistent grid."""
    cfg = dict(config or DEFAULT)
    return C.tlx_prepare(a, b, cfg, out, KIND, cfg["BM"], sms)


_matmul = Matmul(ws_pingpong_kernel, prepare, CONFIGS, _tuner)
launch, matmul = _matmul.launch, _matmul.matmul
reference = C.reference
