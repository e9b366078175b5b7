"""(6) A 2-CTA cluster GEMM with TMA multicast of B, as cuBLAS runs Hopper GEMMs: written, and refused by uTLX.

Not part of the library's public calls: ``triton-utlx`` 3.8.0.post16 cannot build it (below), and
``tests/kernels/test_gemm_cluster_compile.py`` pins the compile error, so the day a uTLX release builds it that
test fails and says to run it on a GPU.

What it would do. Two CTAs of a cluster (``ctas_per_cga=(2, 1, 1)``) compute two ``BM x BN`` tiles one above the
other, which need the same ``BK x BN`` tile of B at every K step. Each CTA loads its own A tile and one half (in K)
of the shared B tile, and multicasts that half into both CTAs' shared memory: the L2-to-SM traffic for B halves,
48 -> 32 KiB per K step and SM at 128x256x64. The roles are the cooperative kernel's (``ws_cooperative.py``): a
producer and two consumer warpgroups, each consumer owning half of the tile's rows.

Why uTLX refuses it, twice over:

- **The remote arrive.** CTA ``r``'s producer writes into slot ``s`` of *both* CTAs, so it may do so only when the
  consumers of both CTAs have released slot ``s``: each ``empty`` barrier counts four arrivals, two from its own
  CTA's consumers and two from the peer's. A consumer therefore arrives on its peer's barrier
  (``tlx.barrier_arrive(bar, remote_cta_rank=peer)``), which uTLX lowers through ``tlx.remote_view``; that needs
  ``ttng.map_to_remote_buffer`` (``mapa.shared::cluster``), which upstream Triton lacks, and uTLX raises
  ``NotImplementedError`` there (``SUPPORTS_MULTI_CTA = False``).
- **Shared buffers in a cluster.** Without that arrival (``REMOTE_ARRIVE=False``) the front end passes, and an
  MLIR pass rejects the first ``tlx.local_alloc``: under ``num_ctas=2`` (what uTLX makes of ``ctas_per_cga``) the
  NVMMA shared layout it gets is "an invalid layout". The library's cooperative kernel launched with
  ``ctas_per_cga=(2, 1, 1)`` fails the same way, at its first ``local_alloc``. On one CTA the same code compiles
  and the multicast copies become plain TMA loads.

Row-major A and B only (``A_T``/``B_T`` are not written); the grid is an even number of CTAs (whole clusters).
"""

from __future__ import annotations

import triton
import triton.language as tl
import triton.language.extra.tlx as tlx

from tlx_kernels.gemm import device as dev


@triton.jit
def _produce(a_desc, b_desc, a_bufs, b_bufs, full, empty, rank, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
             BK: tl.constexpr, NUM_STAGES: tl.constexpr, GROUP_M: tl.constexpr):
    """Per K step: wait until both CTAs freed the slot, arm ``full`` with the whole step (own A, both B halves),
    copy this CTA's A tile (two halves, one per consumer) and multicast its half of B to both CTAs."""
    HALF: tl.constexpr = BM // 2
    STEP_BYTES: tl.constexpr = (BM * BK + BK * BN) * tlx.size_of(tlx.dtype_of(a_desc))
    num_pid_m, num_pid_n, num_k = dev.tile_counts(M, N, K, 2 * BM, BN, BK)
    it = 0
    for pair in range(tl.program_id(0) // 2, num_pid_m * num_pid_n, tl.num_programs(0) // 2):
        pid_m, pid_n = dev.tile_coords(pair, num_pid_m, num_pid_n, GROUP_M)
        off_m = (2 * pid_m + rank) * BM
        off_n = pid_n * BN
        for k in range(num_k):
            slot = it % NUM_STAGES
            tlx.barrier_wait(empty[slot], ((it // NUM_STAGES) & 1) ^ 1)
            tlx.barrier_expect_bytes(full[slot], STEP_BYTES)
            tlx.async_descriptor_load(a_desc, a_bufs[slot], [off_m, k * BK], full[slot])
            tlx.async_descriptor_load(a_desc, a_bufs[NUM_STAGES + slot], [off_m + HALF, k * BK], full[slot])
            if rank == 0:  # the upper K half of B, into rows 0 .. BK/2 of the slot in both CTAs
                tlx.async_descriptor_load(b_desc, tlx.local_slice(b_bufs[slot], [0, 0], [BK // 2, BN]),
                                          [k * BK, off_n], full[slot], multicast_targets=[0, 1])
            else:  # the lower K half
                tlx.async_descriptor_load(b_desc, tlx.local_slice(b_bufs[slot], [BK // 2, 0], [BK // 2, BN]),
                                          [k * BK + BK // 2, off_n], full[slot], multicast_targets=[0, 1])
            it += 1


@triton.jit
def _consume(c_desc, a_bufs, b_bufs, c_bufs, full, empty, rank, M, N, K, cid: tl.constexpr, BM: tl.constexpr,
             BN: tl.constexpr, BK: tl.constexpr, NUM_STAGES: tl.constexpr, GROUP_M: tl.constexpr,
             REMOTE_ARRIVE: tl.constexpr):
    """Per K step: wait for the slot, one wgmma on this consumer's half of A and the shared B, then release the
    slot to both CTAs' producers (the peer's multicast writes into it too)."""
    HALF: tl.constexpr = BM // 2
    num_pid_m, num_pid_n, num_k = dev.tile_counts(M, N, K, 2 * BM, BN, BK)
    it = 0
    for pair in range(tl.program_id(0) // 2, num_pid_m * num_pid_n, tl.num_programs(0) // 2):
        pid_m, pid_n = dev.tile_coords(pair, num_pid_m, num_pid_n, GROUP_M)
        acc = tl.zeros((HALF, BN), dtype=tl.float32)
        for _ in tl.range(0, num_k, num_stages=0):
            slot = it % NUM_STAGES
            tlx.barrier_wait(full[slot], (it // NUM_STAGES) & 1)
            acc = tlx.async_dot(a_bufs[cid * NUM_STAGES + slot], b_bufs[slot], acc)
            acc = tlx.async_dot_wait(0, acc)
            tlx.barrier_arrive(empty[slot])
            if REMOTE_ARRIVE:
                tlx.barrier_arrive(empty[slot], remote_cta_rank=1 - rank)  # uTLX: NotImplementedError (remote_view)
            it += 1
        dev.store_tile(c_desc, c_bufs, cid, acc, (2 * pid_m + rank) * BM + cid * HALF, pid_n * BN, 1, 1)
    tlx.async_descriptor_store_wait(0)


@triton.jit
def cluster_multicast_kernel(a_desc, b_desc, c_desc, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                             NUM_STAGES: tl.constexpr, GROUP_M: tl.constexpr, CONSUMER_REGS: tl.constexpr = 232,
                             REMOTE_ARRIVE: tl.constexpr = True):
    """``REMOTE_ARRIVE=False`` leaves out the peer's arrival (then every ``empty`` wait expects four arrivals and
    gets two: the kernel would hang). It exists for the compile test, to reach the next refusal, never to run."""
    dtype = tlx.dtype_of(a_desc)
    HALF: tl.constexpr = BM // 2
    a_bufs = tlx.local_alloc((HALF, BK), dtype, 2 * NUM_STAGES)  # [slot] top half, [S + slot] bottom half
    b_bufs = tlx.local_alloc((BK, BN), dtype, NUM_STAGES)  # filled by both CTAs' producers
    c_bufs = tlx.local_alloc((HALF, BN), tlx.dtype_of(c_desc), 2)
    full = tlx.alloc_barriers(NUM_STAGES, arrive_count=1)
    empty = tlx.alloc_barriers(NUM_STAGES, arrive_count=4)  # two consumers in each of the two CTAs
    rank = tlx.cluster_cta_rank()

    with tlx.async_tasks():
        with tlx.async_task("default"):
            _produce(a_desc, b_desc, a_bufs, b_bufs, full, empty, rank, M, N, K, BM, BN, BK, NUM_STAGES, GROUP_M)
        with tlx.async_task(num_warps=4, registers=CONSUMER_REGS, replicate=2):
            cid: tl.constexpr = tlx.async_task_replica_id()
            _consume(c_desc, a_bufs, b_bufs, c_bufs, full, empty, rank, M, N, K, cid, BM, BN, BK, NUM_STAGES,
                     GROUP_M, REMOTE_ARRIVE)


CONFIG: dict = dict(BM=128, BN=256, BK=64, NUM_STAGES=3, GROUP_M=8, num_warps=4, ctas_per_cga=(2, 1, 1))
kernel = cluster_multicast_kernel


def launch_args(a, b, c, config: dict | None = None) -> tuple[tuple, dict]:
    """(args, kwargs) of a launch for row-major ``a`` (M x K), ``b`` (K x N) and ``c`` (M x N): the descriptors' boxes
    are a consumer's half of A, a K half of B and a consumer's half of C. The grid would be an even number of CTAs
    (whole clusters), at most one per SM."""
    from triton.tools.tensor_descriptor import TensorDescriptor

    cfg = dict(config or CONFIG)
    BM, BN, BK = cfg["BM"], cfg["BN"], cfg["BK"]
    M, K = a.shape
    N = b.shape[1]
    a_desc = TensorDescriptor(a, [M, K], [a.stride(0), 1], [BM // 2, BK])
    b_desc = TensorDescriptor(b, [K, N], [b.stride(0), 1], [BK // 2, BN])
    c_desc = TensorDescriptor(c, [M, N], [c.stride(0), 1], [BM // 2, BN])
    return (a_desc, b_desc, c_desc, M, N, K), cfg


__all__ = ["CONFIG", "cluster_multicast_kernel", "kernel", "launch_args"]
