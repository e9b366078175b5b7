"""(c) Warp-specialized and pipelined: each consumer overlaps the softmax of block j with its own wgmmas.

Same roles, buffers and barriers as :mod:`.ws` (step b). What changes is the consumer's loop, software-
pipelined by one block. Before the loop it computes ``S_0 = Q K_0^T`` and its softmax (``P_0``). Iteration j:

1. rescale ``O`` by ``alpha_{j-1}`` (``O`` is complete: the last iteration waited for it);
2. issue ``S_j = Q K_j^T`` and then ``O += P_{j-1} V_{j-1}`` (two asynchronous wgmma groups in flight);
3. ``async_dot_wait(1)``: wait for the older group only (``S_j``), release ``K_j``;
4. softmax of ``S_j`` -> ``P_j`` (fp32) **while the tensor cores still run** ``P_{j-1} V_{j-1}``;
5. ``async_dot_wait(0)``: ``O`` is complete, release ``V_{j-1}``; only now convert ``P_j`` to 16 bits, into the
   registers the finished product read.

After the loop, the last ``O += P V``. Three details make ptxas keep the overlap (check the SASS: the
``MUFU.EX2`` of the softmax must sit between the PV ``HGMMA`` and its ``WARPGROUP.DEPBAR.LE gsb0, 0x0``):

- the loop is a ``while``, not a ``for``: Triton's software pipeliner rewrites the waits of asynchronous
  wgmmas in ``scf.for`` loops to ``pendings=0`` right after each wgmma, which would serialise everything;
- the softmax sits inside both arms of the mask branch (:func:`.device.softmax_block`; the two calls are the
  same on purpose): ptxas schedules within basic blocks, and the branch merge keeps it from hoisting the wait above
  the softmax;
- ``P`` is converted after the wait: writing the registers an in-flight wgmma reads forces ptxas to wait
  first.

Two options move work out of the exposed tail (the instructions a warpgroup runs with none of its own wgmmas in
flight; ``bench/sass_loop_mix.py`` counts them):

- ``LATE_P`` carries ``P`` in fp32 across the loop edge and converts it right before the PV issue, as Meta's
  Hopper tutorials do: the 32 ``F2FP`` run under the ``S_j`` wgmma, and the 32 ``PRMT`` that moved the packed
  halves into the HGMMA's A registers are gone (steady iteration 454 instead of 487 instructions per warp, 26
  instead of 56 exposed; sm_90 compile, D128). It costs 32 more live registers per thread: no spills here; the
  persistent kernel keeps a few per-tile values in local memory with it, outside its KV loop.
- ``LATE_RESCALE`` rescales ``O`` right after the PV wait (Meta's place) instead of at the top of the next
  iteration, where ptxas schedules the 64 ``FMUL`` under the ``S_j`` wgmma; it exposes them, and is there to be
  measured against.
- ``S_ALONE`` waits for ``S_j`` before issuing ``O += P_{j-1} V_{j-1}``, so a warpgroup never has both groups
  queued on the tensor cores; the rescale and (with ``LATE_P``) the conversion still run under ``S_j``. Meta's
  Hopper tutorials compile to this order (ptxas puts their ``S`` wait before the PV issue).
"""

from __future__ import annotations

from typing import Any

import triton
import triton.language as tl
import triton.language.extra.tlx as tlx

from tlx_kernels.attention import common as C
from tlx_kernels.attention import device as dev
from tlx_kernels.attention.calls import module_calls


@triton.jit
def ws_pipelined_attention_kernel(desc_q, desc_k, desc_v, desc_o, lse_ptr, qk_scale, S_q, S_kv, S_o, BH,
                                  HEAD_DIM: tl.constexpr, CAUSAL: tl.constexpr, STORE_LSE: tl.constexpr,
                                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, NUM_GROUPS: tl.constexpr,
                                  NUM_BUFFERS: tl.constexpr, CONSUMER_REGS: tl.constexpr,
                                  LATE_P: tl.constexpr = False, LATE_RESCALE: tl.constexpr = False,
                                  S_ALONE: tl.constexpr = False):
    dtype: tl.constexpr = tlx.dtype_of(desc_q)
    # step (b)'s buffers, barriers, tile and producer, declared again on purpose (see ws.py)
    q_smem = tlx.local_alloc((BLOCK_M, HEAD_DIM), dtype, NUM_GROUPS)
    k_smem = tlx.local_alloc((BLOCK_N, HEAD_DIM), dtype, NUM_BUFFERS)
    v_smem = tlx.local_alloc((BLOCK_N, HEAD_DIM), dtype, NUM_BUFFERS)
    q_full = tlx.alloc_barriers(NUM_GROUPS, arrive_count=1)
    k_full = tlx.alloc_barriers(NUM_BUFFERS, arrive_count=1)
    k_empty = tlx.alloc_barriers(NUM_BUFFERS, arrive_count=NUM_GROUPS)
    v_full = tlx.alloc_barriers(NUM_BUFFERS, arrive_count=1)
    v_empty = tlx.alloc_barriers(NUM_BUFFERS, arrive_count=NUM_GROUPS)

    bh, tile_start = dev.q_tile(NUM_GROUPS * BLOCK_M, CAUSAL)
    n_blocks = dev.kv_blocks(tile_start, NUM_GROUPS * BLOCK_M, S_q, S_kv, CAUSAL, BLOCK_N)

    with tlx.async_tasks():
        with tlx.async_task("default"):  # producer: unchanged from step (b)
            dev.load_q(desc_q, q_smem, q_full, bh * S_q + tile_start, BLOCK_M, HEAD_DIM, NUM_GROUPS)
            dev.produce_kv(desc_k, desc_v, k_smem, v_smem, k_full, k_empty, v_full, v_empty, 0, bh * S_kv, 0,
                           n_blocks, BLOCK_N, HEAD_DIM, NUM_BUFFERS)
        with tlx.async_task(num_warps=4, registers=CONSUMER_REGS, replicate=NUM_GROUPS):  # consumers
            g: tl.constexpr = tlx.async_task_replica_id()
            q_start = tile_start + g * BLOCK_M
            acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
            tlx.barrier_wait(q_full[g], 0)
            # prologue: S_0 and P_0
            qk = dev.scores(q_smem[g], k_smem, k_full, k_empty, 0, 0, q_start, 0, S_kv, g, CAUSAL, BLOCK_M, BLOCK_N,
                            NUM_GROUPS, False)
            m_i, l_i, p_f32 = dev.softmax_first(qk, qk_scale)
            p = dev.p_operand(p_f32, dtype, LATE_P)
            alpha = tl.full([BLOCK_M], 1.0, tl.float32)
            j = 1
            while j < n_blocks:
                slot = j % NUM_BUFFERS
                phase = (j // NUM_BUFFERS) & 1
                prev = (j - 1) % NUM_BUFFERS
                prev_phase = ((j - 1) // NUM_BUFFERS) & 1
                if not LATE_RESCALE:
                    acc = acc * alpha[:, None]
                tlx.barrier_wait(k_full[slot], phase)
                qk = tlx.async_dot(q_smem[g], tlx.local_trans(k_smem[slot]))  # S_j
                if S_ALONE:
                    qk = tlx.async_dot_wait(0, qk)
                tlx.barrier_wait(v_full[prev], prev_phase)
                acc = tlx.async_dot(p.to(dtype), v_smem[prev], acc)  # O += P_{j-1} V_{j-1}
                qk = tlx.async_dot_wait(1, qk)  # S_j done, PV still running
                tlx.barrier_arrive(k_empty[slot])
                m_i, l_i, p_f32, alpha = dev.softmax_block(qk, m_i, l_i, q_start, j * BLOCK_N, S_kv, qk_scale, CAUSAL,
                                                           BLOCK_M, BLOCK_N)
                acc = tlx.async_dot_wait(0, acc)
                tlx.barrier_arrive(v_empty[prev])
                if LATE_RESCALE:
                    acc = acc * alpha[:, None]
                p = dev.p_operand(p_f32, dtype, LATE_P)
                j += 1
            # epilogue: the last P V
            acc = dev.last_pv(acc, alpha, p, v_smem, v_full, v_empty, n_blocks - 1, g, NUM_BUFFERS, NUM_GROUPS,
                              LATE_RESCALE, False)
            # O is staged in this consumer's Q buffer: its last reader, the last Q K^T, has completed
            dev.store_tile(acc, l_i, m_i, q_smem[g], desc_o, lse_ptr, bh, q_start, S_q, S_o, BLOCK_M, STORE_LSE)
            tlx.async_descriptor_store_wait(0)


# BLOCK_M is the rows of one consumer warpgroup; a CTA holds NUM_GROUPS * BLOCK_M rows.
# H200 sweep 2026-12-03: first (= default) fastest at B4 H32 S4096 D128; TFLOP/s D128 / causal / D64 / causal.
CONFIGS: list[dict[str, Any]] = [
    dict(BLOCK_M=64, BLOCK_N=128, NUM_GROUPS=2, NUM_BUFFERS=2, CONSUMER_REGS=240),  # 669 / 599 / 431 / 375
    dict(BLOCK_M=64, BLOCK_N=128, NUM_GROUPS=2, NUM_BUFFERS=2, CONSUMER_REGS=232),  # 647 / 595 / 414 / 374
    dict(BLOCK_M=64, BLOCK_N=128, NUM_GROUPS=2, NUM_BUFFERS=3, CONSUMER_REGS=240),  # 644 / 577 / 433 / 387
]
DEFAULT = CONFIGS[0]
# Compiled clean for sm_90 (no spills, D64 and D128, causal or not) but not yet checked and timed on a GPU, so not
# in CONFIGS (what launch() and attention() use); `bench/attention.py --sweep --space trials` checks and times them.
TRIALS: list[dict[str, Any]] = [
    dict(DEFAULT, LATE_P=True),
    dict(DEFAULT, LATE_P=True, LATE_RESCALE=True),
    dict(DEFAULT, LATE_P=True, NUM_BUFFERS=3),
    dict(DEFAULT, LATE_P=True, S_ALONE=True),
]
_tuner = C.Tuner()


def prepare(q, k, v, causal: bool = False, config: dict[str, Any] | None = None, sm_scale: float | None = None,
            out=None, lse=None, want_lse: bool = False) -> C.Launch:
    """The launch of one config (CPU tensors work: compile-only inspection)."""
    return C.tlx_launch(ws_pipelined_attention_kernel, CONFIGS, q, k, v, causal, config, sm_scale, out, lse, want_lse)


launch, attention = module_calls(prepare, CONFIGS, _tuner)
