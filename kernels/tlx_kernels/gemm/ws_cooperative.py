"""(2) Warp-specialized cooperative GEMM: one TMA producer task, two consumer warpgroups splitting each tile.

Persistent: the grid is at most one CTA per SM; each CTA walks the output tiles ``pid, pid + grid,
...`` in GROUP_M-swizzled order. Roles (``tlx.async_tasks``):

- producer (the default task, 4 warps; its register budget drops to what the consumers leave, 40
  with ``CONSUMER_REGS=232``): waits for a free slot of the ``NUM_STAGES``-deep ring (``empty``),
  arms ``full`` with the bytes to expect and issues three TMA copies: the top and bottom halves of the
  A tile and the whole B tile;
- two consumers (``replicate=2``, 4 warps each, ``CONSUMER_REGS`` registers via setmaxnreg): consumer
  ``cid`` owns rows ``cid * BM/2 ...`` of the tile, waits on ``full``, issues an asynchronous wgmma on
  its half of A and the shared B tile, keeps one wgmma group in flight and releases the previous slot
  (``MMA_WAIT=0``: waits for each step's wgmma and releases its slot at once, a deeper effective ring)
  (``empty`` completes when both consumers have arrived; with ``WARP_BAR`` every consumer thread
  arrives, so no warpgroup barrier precedes the arrival). Epilogue: fp32 -> output dtype -> shared
  memory -> TMA store, in ``EPI_SPLIT`` column subtiles through ``EPI_BUFS`` buffers per consumer,
  while the producer already fills the ring for the next tile.
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
             A_T: tl.constexpr, B_T: tl.constexpr, EPI_SPLIT: tl.constexpr, EPI_BUFS: tl.constexpr,
             MMA_WAIT: tl.constexpr):
    HALF: tl.constexpr = BM // 2
    num_pid_m, num_pid_n, num_k = dev.tile_counts(M, N, K, BM, BN, BK)
    it = 0
    for tile in range(tl.program_id(0), num_pid_m * num_pid_n, tl.num_programs(0)):
        pid_m, pid_n = dev.tile_coords(tile, num_pid_m, num_pid_n, GROUP_M)
        acc = tl.zeros((HALF, BN), dtype=tl.float32)
        acc, prev, it = dev.mma_steps(a_bufs, b_bufs, full, empty, acc, it, num_k, cid * NUM_STAGES, NUM_STAGES, A_T,
                                      B_T, MMA_WAIT)
        acc = tlx.async_dot_wait(0, acc)
        if MMA_WAIT != 0:
            tlx.barrier_arrive(empty[prev])
        dev.store_tile(c_desc, c_bufs, cid * EPI_BUFS, acc, pid_m * BM + cid * HALF, pid_n * BN, EPI_SPLIT, EPI_BUFS)
    tlx.async_descriptor_store_wait(0)


@triton.jit
def ws_cooperative_kernel(a_desc, b_desc, c_desc, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                          NUM_STAGES: tl.constexpr, GROUP_M: tl.constexpr, A_T: tl.constexpr, B_T: tl.constexpr,
                          CONSUMER_REGS: tl.constexpr = 232, EPI_SPLIT: tl.constexpr = 1, EPI_BUFS: tl.constexpr = 1,
                          WARP_BAR: tl.constexpr = False, MMA_WAIT: tl.constexpr = 1):
    dtype = tlx.dtype_of(a_desc)
    HALF: tl.constexpr = BM // 2
    a_bufs = tlx.local_alloc((BK, HALF) if A_T else (HALF, BK), dtype, 2 * NUM_STAGES)  # [slot] top, [S + slot] bottom
    b_bufs = tlx.local_alloc((BN, BK) if B_T else (BK, BN), dtype, NUM_STAGES)
    c_bufs = tlx.local_alloc((HALF, BN // EPI_SPLIT), tlx.dtype_of(c_desc), 2 * EPI_BUFS)
    full = tlx.alloc_barriers(NUM_STAGES, arrive_count=1)
    if WARP_BAR:
        empty = tlx.alloc_warp_barrier(NUM_STAGES, num_warps=4, num_arrivals=2)
    else:
        empty = tlx.alloc_barriers(NUM_STAGES, arrive_count=2)

    # the roles as in ws_pingpong.py, declared in each kernel on purpose: the orchestration view names them here
    with tlx.async_tasks():
        with tlx.async_task("default"):
            dev.produce(a_desc, b_desc, a_bufs, b_bufs, full, empty, M, N, K, BM, BN, BK, NUM_STAGES, GROUP_M, A_T,
                        B_T, True)
        with tlx.async_task(num_warps=4, registers=CONSUMER_REGS, replicate=2):
            cid: tl.constexpr = tlx.async_task_replica_id()
            _consume(c_desc, a_bufs, b_bufs, c_bufs, full, empty, M, N, K, cid, BM, BN, BK, NUM_STAGES, GROUP_M,
                     A_T, B_T, EPI_SPLIT, EPI_BUFS, MMA_WAIT)


# smem: ring S x (BM x BK + BK x BN) x 2 B + epilogue 2 x BM/2 x BN/EPI_SPLIT x 2 B x EPI_BUFS
# (limit 232,448 B): 128x256x64 with 4 stages (196,608 B) leaves room for 32 KiB of epilogue buffers.
# H200 sweep 2026-12-03: first (= default) fastest at 8192^3 + 4096^3; TFLOP/s at 8192^3 / 4096^3 / 2048^3.
CONFIGS: list[dict[str, Any]] = [
    dict(BM=128, BN=256, BK=64, NUM_STAGES=3, GROUP_M=16, EPI_SPLIT=1, num_warps=4),  # 728 / 722 / 553
    dict(BM=128, BN=256, BK=64, NUM_STAGES=4, GROUP_M=8, EPI_SPLIT=2, MMA_WAIT=0, num_warps=4),  # 736 / 700 / 578
    dict(BM=128, BN=256, BK=64, NUM_STAGES=4, GROUP_M=8, EPI_SPLIT=2, CONSUMER_REGS=240,
         num_warps=4),  # 724 / 709 / 575
    dict(BM=128, BN=256, BK=64, NUM_STAGES=4, GROUP_M=16, EPI_SPLIT=2, num_warps=4),  # 717 / 702 / 605
    dict(BM=128, BN=256, BK=64, NUM_STAGES=4, GROUP_M=8, EPI_SPLIT=2, MMA_WAIT=0, WARP_BAR=True,
         num_warps=4),  # 706 / 705 / 595
    dict(BM=128, BN=256, BK=64, NUM_STAGES=4, GROUP_M=8, EPI_SPLIT=4, num_warps=4),  # 694 / 698 / 585
    dict(BM=128, BN=256, BK=64, NUM_STAGES=4, GROUP_M=16, EPI_SPLIT=4, EPI_BUFS=2, num_warps=4),  # 690 / 697 / 586
]
DEFAULT: dict[str, Any] = CONFIGS[0]
KIND = "cooperative"


def candidates() -> list[dict[str, Any]]:
    """The sweep space of ``bench/gemm.py --sweep``: CONFIGS, then one knob at a time around three bases
    (the 128x256 and 256x128 tiles with a 4-stage ring and split epilogue, 128x256 with 3 stages and a
    whole-tile epilogue), most promising first; only configs that fit in shared memory."""
    wide = dict(BM=128, BN=256, BK=64, NUM_STAGES=4, GROUP_M=8, EPI_SPLIT=2, num_warps=4)
    tall, deep = dict(wide, BM=256, BN=128), dict(wide, NUM_STAGES=3, EPI_SPLIT=1)
    knobs = dict(MMA_WAIT=[0], GROUP_M=[16, 4, 32], EPI_SPLIT=[4, 1], WARP_BAR=[True], CONSUMER_REGS=[240, 0])
    space = list(CONFIGS)
    space += C.variants(wide, **knobs) + C.variants(dict(wide, EPI_SPLIT=4, EPI_BUFS=2), GROUP_M=[16], WARP_BAR=[True])
    space += C.variants(dict(wide, MMA_WAIT=0), GROUP_M=[16], EPI_SPLIT=[4], WARP_BAR=[True])
    space += C.variants(tall, MMA_WAIT=[0], GROUP_M=[16, 4], EPI_SPLIT=[4], WARP_BAR=[True])
    space += C.variants(deep, MMA_WAIT=[0], GROUP_M=[16], EPI_SPLIT=[2], EPI_BUFS=[2], WARP_BAR=[True])
    space += [dict(BM=128, BN=128, BK=64, NUM_STAGES=s, GROUP_M=8, num_warps=4) for s in (6, 7)]
    return C.feasible(space, KIND)
kernel = ws_cooperative_kernel
_tuner = C.Tuner()


def prepare(a, b, config: dict[str, Any] | None = None, out=None, sms: int | None = None):
    """(args, kwargs, grid, out) of one launch: descriptors for ``config``'s tiles, persistent grid."""
    cfg = dict(config or DEFAULT)
    return C.tlx_prepare(a, b, cfg, out, KIND, cfg["BM"] // 2, sms)


_matmul = Matmul(ws_cooperative_kernel, prepare, CONFIGS, _tuner)
launch, matmul = _matmul.launch, _matmul.matmul
reference = C.reference
