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
- the softmax sits inside both arms of the mask branch (the two calls are the same on purpose): ptxas
  schedules within basic blocks, and the branch merge keeps it from hoisting the wait above the softmax;
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
from tlx_kernels.attention.calls import over_configs


@triton.jit
def ws_pipelined_attention_kernel(desc_q, desc_k, desc_v, desc_o, lse_ptr, qk_scale, S_q, S_kv, S_o, BH,
                                  HEAD_DIM: tl.constexpr, CAUSAL: tl.constexpr, STORE_LSE: tl.constexpr,
                                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, NUM_GROUPS: tl.constexpr,
                                  NUM_BUFFERS: tl.constexpr, CONSUMER_REGS: tl.constexpr,
                                  LATE_P: tl.constexpr = False, LATE_RESCALE: tl.constexpr = False,
                                  S_ALONE: tl.constexpr = False):
    dtype: tl.constexpr = tlx.dtype_of(desc_q)
    TILE_BYTES: tl.constexpr = BLOCK_N * HEAD_DIM * tlx.size_of(dtype)
    q_smem = tlx.local_alloc((BLOCK_M, HEAD_DIM), dtype, NUM_GROUPS)
    k_smem = tlx.local_alloc((BLOCK_N, HEAD_DIM), dtype, NUM_BUFFERS)
    v_smem = tlx.local_alloc((BLOCK_N, HEAD_DIM), dtype, NUM_BUFFERS)
    q_full = tlx.alloc_barriers(NUM_GROUPS, arrive_count=1)
    k_full = tlx.alloc_barriers(NUM_BUFFERS, arrive_count=1)
    k_empty = tlx.alloc_barriers(NUM_BUFFERS, arrive_count=NUM_GROUPS)
    v_full = tlx.alloc_barriers(NUM_BUFFERS, arrive_count=1)
    v_empty = tlx.alloc_barriers(NUM_BUFFERS, arrive_count=NUM_GROUPS)

    bh = tl.program_id(1)
    pid_m = tl.program_id(0)
    if CAUSAL:
        pid_m = tl.num_programs(0) - 1 - pid_m  # longest tiles first
    tile_start = pid_m * (NUM_GROUPS * BLOCK_M)
    n_blocks = dev.kv_blocks(tile_start, NUM_GROUPS * BLOCK_M, S_q, S_kv, CAUSAL, BLOCK_N)

    with tlx.async_tasks():
        with tlx.async_task("default"):  # producer: unchanged from step (b)
            for g in tl.static_range(NUM_GROUPS):
                tlx.barrier_expect_bytes(q_full[g], BLOCK_M * HEAD_DIM * tlx.size_of(dtype))
                tlx.async_descriptor_load(desc_q, q_smem[g], [bh * S_q + tile_start + g * BLOCK_M, 0], q_full[g])
            kv_row = bh * S_kv
            for j in range(n_blocks):
                slot = j % NUM_BUFFERS
                phase = (j // NUM_BUFFERS) & 1
                tlx.barrier_wait(k_empty[slot], phase ^ 1)
                tlx.barrier_expect_bytes(k_full[slot], TILE_BYTES)
                tlx.async_descriptor_load(desc_k, k_smem[slot], [kv_row + j * BLOCK_N, 0], k_full[slot])
                tlx.barrier_wait(v_empty[slot], phase ^ 1)
                tlx.barrier_expect_bytes(v_full[slot], TILE_BYTES)
                tlx.async_descriptor_load(desc_v, v_smem[slot], [kv_row + j * BLOCK_N, 0], v_full[slot])
        with tlx.async_task(num_warps=4, registers=CONSUMER_REGS, replicate=NUM_GROUPS):  # consumers
            g: tl.constexpr = tlx.async_task_replica_id()
            q_start = tile_start + g * BLOCK_M
            acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
            tlx.barrier_wait(q_full[g], 0)
            # prologue: S_0 and P_0
            tlx.barrier_wait(k_full[0], 0)
            qk = tlx.async_dot(q_smem[g], tlx.local_trans(k_smem[0]))
            qk = tlx.async_dot_wait(0, qk)
            tlx.barrier_arrive(k_empty[0])
            if dev.needs_mask(q_start, 0, S_kv, CAUSAL, BLOCK_N):
                qk = dev.mask_scores(qk, q_start, 0, S_kv, CAUSAL, BLOCK_M, BLOCK_N)
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
                if dev.needs_mask(q_start, j * BLOCK_N, S_kv, CAUSAL, BLOCK_N):
                    qk = dev.mask_scores(qk, q_start, j * BLOCK_N, S_kv, CAUSAL, BLOCK_M, BLOCK_N)
                    m_i, l_i, p_f32, alpha = dev.softmax_next(qk, m_i, l_i, qk_scale)
                else:
                    m_i, l_i, p_f32, alpha = dev.softmax_next(qk, m_i, l_i, qk_scale)
                acc = tlx.async_dot_wait(0, acc)
                tlx.barrier_arrive(v_empty[prev])
                if LATE_RESCALE:
                    acc = acc * alpha[:, None]
                p = dev.p_operand(p_f32, dtype, LATE_P)
                j += 1
            # epilogue: the last P V
            last = (n_blocks - 1) % NUM_BUFFERS
            if not LATE_RESCALE:
                acc = acc * alpha[:, None]
            tlx.barrier_wait(v_full[last], ((n_blocks - 1) // NUM_BUFFERS) & 1)
            acc = tlx.async_dot(p.to(dtype), v_smem[last], acc)
            acc = tlx.async_dot_wait(0, acc)
            tlx.barrier_arrive(v_empty[last])
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
    p = C.problem(q, k, v, causal, sm_scale)
    cfg = dict(config or C.configs_for(CONFIGS, p.D)[0])
    out, lse, store_lse = C.outputs(q, out, lse, want_lse)
    tile_m = cfg["NUM_GROUPS"] * cfg["BLOCK_M"]
    args, kw, staged = C.tlx_args(p, q, k, v, out, lse, cfg["BLOCK_M"], cfg["BLOCK_N"], tile_m, store_lse)
    grid = (triton.cdiv(p.S_q, cfg["NUM_GROUPS"] * cfg["BLOCK_M"]), p.BH)
    return C.Launch(ws_pipelined_attention_kernel, args, dict(cfg, **kw, num_warps=4, num_stages=1), grid, out,
                    lse, p, staged)


def launch(q, k, v, causal: bool = False, config: dict[str, Any] | None = None, sm_scale: float | None = None,
           out=None, lse=None):
    """One launch with ``config`` (default: the first of :data:`CONFIGS` that fits the head dim); returns ``out``."""
    return prepare(q, k, v, causal, config, sm_scale, out, lse).run()


def attention(q, k, v, causal: bool = False, sm_scale: float | None = None, *, out=None, graph: bool = False):
    """Tuned over the :data:`CONFIGS` that fit the head dim, on first use per problem size; repeated calls launch
    from a cache (:mod:`.calls`; ``graph=True`` with ``out``: a CUDA graph)."""
    return _attention(q, k, v, causal, sm_scale, out=out, graph=graph)


_attention = over_configs(prepare, CONFIGS, _tuner)
