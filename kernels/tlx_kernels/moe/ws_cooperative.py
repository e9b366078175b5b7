"""The TLX grouped GEMM: persistent, warp-specialized (cooperative), TMA descriptors built on the device per group.

One CTA per SM walks the shared tile schedule (:func:`.schedule.next_tile`) in every role, group by group: the
outer loop takes the next group the CTA has tiles in, the inner loop its tiles there. Roles
(``tlx.async_tasks``), as in the dense cooperative GEMM (:mod:`tlx_kernels.gemm.ws_cooperative`):

- producer (the default task, 4 warps, the registers the consumers leave): at a new group it builds the group's
  A and B descriptors with ``tl.make_tensor_descriptor`` (Triton writes them into the CTA's global scratch
  memory, one 128-byte slot per call site, with the tensormap proxy fences); then, per K step, it waits for a
  free ring slot (``empty``), arms ``full`` with the step's bytes and issues the TMA copies of the top and
  bottom halves of the A tile and of the B tile. The ring's counter and phases run on across tiles and groups,
  so the consumers never drain it at a group boundary; only the producer pauses there: before it rewrites the
  descriptors it waits (on ``full``) until the copies it still has in flight, the last ``NUM_STAGES`` steps
  at most, have landed, since those read the old descriptors. The consumers meanwhile work on the stages
  already loaded.
- two consumer warpgroups (``replicate=2``, ``CONSUMER_REGS`` registers each): consumer ``cid`` computes rows
  ``cid * BM/2 ...`` of the tile with asynchronous wgmma (one group in flight; a slot is released once the
  wgmma after it is issued), converts and TMA-stores its half (:func:`tlx_kernels.gemm.device.store_tile`)
  through its own output descriptor (one call site per replica: its own scratch slot), which it rebuilds at a
  new group once its earlier stores have completed. A group with nothing to sum (``dw`` of an expert with no
  tokens) issues no copies and stores zeros. With ``SKIP_EMPTY_HALF`` a consumer whose half of the tile lies past
  the group's last row (an expert of at most 64 tokens, or the last row tile of one) issues no wgmma and stores
  nothing: it only releases each slot once it is loaded (the producer's copies stay as they are; TMA zero-fills
  that box). Not in ``CONFIGS`` until it has run on a GPU (``TRIALS``; ``bench/moe.py --sweep`` times it).

uTLX 3.8.0.post16 cannot place a descriptor in a slot of the kernel's choosing (``tlx.allocate_tensor_descriptor``
+ ``tlx.make_tensor_descriptor(desc_ptr)``, which Meta's Blackwell grouped GEMM uses to rotate descriptors
without the pause: its builder call does not exist on stock Triton 3.8, and the IR it would build aborts the
process), hence Triton's own ``tl.make_tensor_descriptor`` and the pause.

TMA zero-fills the rows past a group's end (A, and the ragged reduction of ``dw``) and clips the store there,
so any token count, 0 included, needs no mask and no host synchronisation.

``WAIT_FLAGS`` (off by default: the same kernel without it) is the expert-parallel layer's arrival wait
(``bench/notes/moe-communication.md``, step 2): before a group's descriptors the producer spins on
``flags[g] >= flag_target`` (an acquire at system scope: the rows of expert ``g`` come from other GPUs, whose
senders raise the flag after writing them) and fences the async proxy, so its TMA copies read the arrived rows. The
consumers never wait on remote data: they wait on the ring as always.
"""

from __future__ import annotations

from typing import Any

import triton
import triton.language as tl
import triton.language.extra.tlx as tlx

from tlx_kernels.gemm import common as C
from tlx_kernels.gemm import device as dev
from tlx_kernels.moe import schedule as S


@triton.jit
def _ab_descriptors(a_base, b_base, gm, gk, N, HALF: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                    B_T: tl.constexpr, RAGGED_K: tl.constexpr):
    """A group's A descriptor (half-tile boxes: one copy per consumer) and B descriptor."""
    if RAGGED_K:
        a_desc = tl.make_tensor_descriptor(a_base, [gk, gm], [gm, 1], [BK, HALF])
    else:
        a_desc = tl.make_tensor_descriptor(a_base, [gm, gk], [gk, 1], [HALF, BK])
    if B_T:
        b_desc = tl.make_tensor_descriptor(b_base, [N, gk], [gk, 1], [BN, BK])
    else:
        b_desc = tl.make_tensor_descriptor(b_base, [gk, N], [N, 1], [BK, BN])
    return a_desc, b_desc


@triton.jit
def _drain(full, it, NUM_STAGES: tl.constexpr):
    """Wait until the copies of the last (up to) NUM_STAGES ring steps have landed: none still reads a descriptor.
    (A step's ``full`` phase cannot move on before the producer refills its slot, so these waits cannot miss.)"""
    for s in range(tl.maximum(it - NUM_STAGES, 0), it):
        tlx.barrier_wait(full[s % NUM_STAGES], (s // NUM_STAGES) & 1)


@triton.jit
def wait_arrival(flag, target):
    """Spin until ``*flag >= target`` with acquire semantics at system scope (the flag is written by another GPU,
    or the host, after the rows it guards), then fence the async proxy so the TMA copies that follow read those rows
    (a TMA load does not see generic-proxy writes ordered only by the acquire)."""
    while tl.atomic_add(flag, 0, sem="acquire", scope="sys") < target:
        pass
    tl.inline_asm_elementwise("fence.proxy.async.global;", "=r", [], dtype=tl.int32, is_pure=False, pack=1)


@triton.jit
def _produce(a, b, c, offsets, a_bufs, b_bufs, full, empty, E, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
             BK: tl.constexpr, NUM_STAGES: tl.constexpr, GROUP_M: tl.constexpr, B_T: tl.constexpr,
             RAGGED_K: tl.constexpr, flags, flag_target, WAIT_FLAGS: tl.constexpr):
    HALF: tl.constexpr = BM // 2
    STEP_BYTES: tl.constexpr = (BM * BK + BK * BN) * tlx.size_of(a.dtype.element_ty)
    it = 0
    tile = tl.program_id(0)
    g, g_first, start, gm, gk, pid_m, pid_n = S.next_tile(tile, 0, 0, offsets, E, M, N, K, BM, BN, GROUP_M,
                                                          RAGGED_K)
    while g < E:  # one group per iteration: its descriptors, then its tiles of this program
        if WAIT_FLAGS:  # expert-parallel: the group's rows arrive from other GPUs; its flag says when
            wait_arrival(flags + g, flag_target)
        _drain(full, it, NUM_STAGES)
        a_base, b_base, _c = S.group_bases(a, b, c, g, start, M, N, K, RAGGED_K)
        a_desc, b_desc = _ab_descriptors(a_base, b_base, gm, gk, N, HALF, BN, BK, B_T, RAGGED_K)
        group = g
        while g == group:
            off_m = pid_m * BM
            off_n = pid_n * BN
            for k in range(tl.cdiv(gk, BK)):
                slot = it % NUM_STAGES
                tlx.barrier_wait(empty[slot], ((it // NUM_STAGES) & 1) ^ 1)
                bar = full[slot]
                tlx.barrier_expect_bytes(bar, STEP_BYTES)
                dev.load_box(a_desc, a_bufs[slot], bar, off_m, k * BK, RAGGED_K)  # top half, consumer 0
                dev.load_box(a_desc, a_bufs[NUM_STAGES + slot], bar, off_m + HALF, k * BK, RAGGED_K)  # bottom
                dev.load_box(b_desc, b_bufs[slot], bar, k * BK, off_n, B_T)
                it += 1
            tile += tl.num_programs(0)
            g, g_first, start, gm, gk, pid_m, pid_n = S.next_tile(tile, g, g_first, offsets, E, M, N, K, BM, BN,
                                                                  GROUP_M, RAGGED_K)


@triton.jit
def _release_steps(full, empty, it, num_k, NUM_STAGES: tl.constexpr):
    """A consumer whose half of the tile holds no row of the group: per K step it waits for the slot to be loaded
    (so that it arrives once per phase, never ahead of the other consumer) and releases it at once, no wgmma."""
    for _k in tl.range(0, num_k, num_stages=0):
        slot = it % NUM_STAGES
        tlx.barrier_wait(full[slot], (it // NUM_STAGES) & 1)
        tlx.barrier_arrive(empty[slot])
        it += 1
    return it


@triton.jit
def _consume(a, b, c, offsets, a_bufs, b_bufs, c_bufs, full, empty, E, M, N, K, cid: tl.constexpr,
             BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, NUM_STAGES: tl.constexpr, GROUP_M: tl.constexpr,
             B_T: tl.constexpr, RAGGED_K: tl.constexpr, EPI_SPLIT: tl.constexpr, EPI_BUFS: tl.constexpr,
             SKIP_EMPTY_HALF: tl.constexpr):
    HALF: tl.constexpr = BM // 2
    it = 0
    tile = tl.program_id(0)
    g, g_first, start, gm, gk, pid_m, pid_n = S.next_tile(tile, 0, 0, offsets, E, M, N, K, BM, BN, GROUP_M,
                                                          RAGGED_K)
    while g < E:
        # every store of this consumer has completed (not only read its buffer): none reads the old descriptor
        tlx.async_descriptor_store_wait(0, read_only=False)
        _a, _b, c_base = S.group_bases(a, b, c, g, start, M, N, K, RAGGED_K)
        c_desc = tl.make_tensor_descriptor(c_base, [gm, N], [N, 1], [HALF, BN // EPI_SPLIT])
        group = g
        while g == group:
            num_k = tl.cdiv(gk, BK)
            if SKIP_EMPTY_HALF and pid_m * BM + cid * HALF >= gm:  # the group's rows end above this half
                it = _release_steps(full, empty, it, num_k, NUM_STAGES)
            else:
                acc = tl.zeros((HALF, BN), dtype=tl.float32)
                acc, prev, it = dev.mma_steps(a_bufs, b_bufs, full, empty, acc, it, num_k, cid * NUM_STAGES,
                                              NUM_STAGES, RAGGED_K, B_T, 1)
                acc = tlx.async_dot_wait(0, acc)
                if num_k > 0:  # a group with nothing to sum (dw, no tokens) took no slot
                    tlx.barrier_arrive(empty[prev])
                C.store_tile(c_desc, c_bufs, cid * EPI_BUFS, acc, pid_m * BM + cid * HALF, pid_n * BN, EPI_SPLIT,
                             EPI_BUFS)
            tile += tl.num_programs(0)
            g, g_first, start, gm, gk, pid_m, pid_n = S.next_tile(tile, g, g_first, offsets, E, M, N, K, BM, BN,
                                                                  GROUP_M, RAGGED_K)
    tlx.async_descriptor_store_wait(0, read_only=False)


@triton.jit
def ws_grouped_kernel(a, b, c, offsets, E, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
                      NUM_STAGES: tl.constexpr, GROUP_M: tl.constexpr, B_T: tl.constexpr, RAGGED_K: tl.constexpr,
                      CONSUMER_REGS: tl.constexpr = 232, EPI_SPLIT: tl.constexpr = 1, EPI_BUFS: tl.constexpr = 1,
                      SKIP_EMPTY_HALF: tl.constexpr = False, flags=None, flag_target=0,
                      WAIT_FLAGS: tl.constexpr = False):
    dtype: tl.constexpr = a.dtype.element_ty
    HALF: tl.constexpr = BM // 2
    if RAGGED_K:
        a_bufs = tlx.local_alloc((BK, HALF), dtype, 2 * NUM_STAGES)  # [slot] top halves, [S + slot] bottom
    else:
        a_bufs = tlx.local_alloc((HALF, BK), dtype, 2 * NUM_STAGES)
    if B_T:
        b_bufs = tlx.local_alloc((BN, BK), dtype, NUM_STAGES)
    else:
        b_bufs = tlx.local_alloc((BK, BN), dtype, NUM_STAGES)
    c_bufs = tlx.local_alloc((HALF, BN // EPI_SPLIT), dtype, 2 * EPI_BUFS)
    full = tlx.alloc_barriers(NUM_STAGES, arrive_count=1)
    empty = tlx.alloc_barriers(NUM_STAGES, arrive_count=2)

    with tlx.async_tasks():
        with tlx.async_task("default"):
            _produce(a, b, c, offsets, a_bufs, b_bufs, full, empty, E, M, N, K, BM, BN, BK, NUM_STAGES,
                     GROUP_M, B_T, RAGGED_K, flags, flag_target, WAIT_FLAGS)
        with tlx.async_task(num_warps=4, registers=CONSUMER_REGS, replicate=2):
            cid: tl.constexpr = tlx.async_task_replica_id()
            _consume(a, b, c, offsets, a_bufs, b_bufs, c_bufs, full, empty, E, M, N, K, cid, BM, BN, BK,
                     NUM_STAGES, GROUP_M, B_T, RAGGED_K, EPI_SPLIT, EPI_BUFS, SKIP_EMPTY_HALF)


KIND = "cooperative"
kernel = ws_grouped_kernel
# smem as the dense cooperative GEMM's (tlx_kernels.gemm.tuning.smem_bytes, kind "cooperative")
CONFIGS: list[dict[str, Any]] = [
    dict(BM=128, BN=256, BK=64, NUM_STAGES=3, GROUP_M=8, EPI_SPLIT=1, num_warps=4),
    dict(BM=128, BN=256, BK=64, NUM_STAGES=4, GROUP_M=8, EPI_SPLIT=2, num_warps=4),
    dict(BM=128, BN=128, BK=64, NUM_STAGES=6, GROUP_M=8, EPI_SPLIT=1, num_warps=4),
]
DEFAULT: dict[str, Any] = CONFIGS[0]
# compile clean (tests/kernels/test_moe_compile.py) but not yet run on a GPU: what bench/moe.py --sweep and
# tests/kernels/test_moe_gpu.py try next, and CONFIGS takes once they pass and win there
TRIALS: list[dict[str, Any]] = [dict(cfg, SKIP_EMPTY_HALF=True) for cfg in CONFIGS]
