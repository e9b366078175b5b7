"""(a) Baseline: FlashAttention forward in plain Triton (``tl.dot``, Triton's software pipeliner).

One program per ``BLOCK_M`` query rows of one head (``grid = (cdiv(S_q, BLOCK_M), B*H)``; causal tiles are
launched longest first). Q, K, V and O go through rank-3 TMA descriptors ``(B*H, S, D)``, so a head's tail
rows are zero-filled on load and clipped on store. The KV loop is split in two: blocks no row masks (no
``where``), then the few blocks that cross the diagonal or the end of the keys. The loop ``num_stages`` lets
Triton pipeline the K/V loads; the online softmax and both products are in one warpgroup-wide program.
"""

from __future__ import annotations

from typing import Any

import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

from tlx_kernels.attention import common as C
from tlx_kernels.attention import device as dev
from tlx_kernels.attention.calls import module_calls


@triton.jit
def _block(acc, m_i, l_i, q, desc_k, desc_v, bh, kv_start, q_start, qk_scale, S_kv,
           MASK: tl.constexpr, CAUSAL: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
           HEAD_DIM: tl.constexpr):
    k = desc_k.load([bh, kv_start, 0]).reshape(BLOCK_N, HEAD_DIM)
    qk = tl.dot(q, k.T)
    if MASK:
        qk = dev.mask_scores(qk, q_start, kv_start, S_kv, CAUSAL, BLOCK_M, BLOCK_N)
    m_new, l_i, p, alpha = dev.softmax_next(qk, m_i, l_i, qk_scale)
    acc = acc * alpha[:, None]
    v = desc_v.load([bh, kv_start, 0]).reshape(BLOCK_N, HEAD_DIM)
    acc = tl.dot(p.to(v.dtype), v, acc)
    return acc, m_new, l_i


@triton.jit
def triton_attention_kernel(desc_q, desc_k, desc_v, desc_o, lse_ptr, qk_scale, S_q, S_kv,
                            HEAD_DIM: tl.constexpr, CAUSAL: tl.constexpr, STORE_LSE: tl.constexpr,
                            BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, NUM_STAGES: tl.constexpr):
    bh, q_start = dev.q_tile(BLOCK_M, CAUSAL)
    q = desc_q.load([bh, q_start, 0]).reshape(BLOCK_M, HEAD_DIM)
    n_blocks = dev.kv_blocks(q_start, BLOCK_M, S_q, S_kv, CAUSAL, BLOCK_N)
    if CAUSAL:
        n_free = tl.minimum(tl.minimum(S_kv, q_start + 1) // BLOCK_N, n_blocks)
    else:
        n_free = S_kv // BLOCK_N
    m_i = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], tl.float32)
    for j in tl.range(0, n_free, num_stages=NUM_STAGES):
        acc, m_i, l_i = _block(acc, m_i, l_i, q, desc_k, desc_v, bh, j * BLOCK_N, q_start, qk_scale, S_kv,
                               False, CAUSAL, BLOCK_M, BLOCK_N, HEAD_DIM)
    for j in tl.range(n_free, n_blocks, num_stages=NUM_STAGES):
        acc, m_i, l_i = _block(acc, m_i, l_i, q, desc_k, desc_v, bh, j * BLOCK_N, q_start, qk_scale, S_kv,
                               True, CAUSAL, BLOCK_M, BLOCK_N, HEAD_DIM)
    out = acc * (1.0 / l_i)[:, None]
    desc_o.store([bh, q_start, 0], out.to(desc_o.dtype).reshape(1, BLOCK_M, HEAD_DIM))
    dev.store_lse(l_i, m_i, lse_ptr, bh, q_start, S_q, BLOCK_M, STORE_LSE)


# The default compiles for sm_90 without spills (tests/kernels/test_attention_compile.py); the sweep's fastest at
# D128 (third) spills a few registers there (tutorial 02, step 1). Second: the fastest at D64, so that the first two
# that fit a head dim (what attention() tries) hold it.
# H200 sweep 2026-12-03: first (= default) fastest spill-free at B4 H32 S4096 D128; TFLOP/s D128/causal/D64/causal.
CONFIGS: list[dict[str, Any]] = [
    dict(BLOCK_M=128, BLOCK_N=128, NUM_STAGES=3, num_warps=8),  # 513 / 462 / 345 / 319
    dict(BLOCK_M=64, BLOCK_N=128, NUM_STAGES=3, num_warps=4),  # 458 / 406 / 456 / 402
    dict(BLOCK_M=128, BLOCK_N=64, NUM_STAGES=2, num_warps=4),  # 544 / 486 / 373 / 331
]
DEFAULT = CONFIGS[0]
_tuner = C.Tuner()


def _desc3(t, rows: int, D: int) -> TensorDescriptor:
    B, H, S, _ = t.shape
    return TensorDescriptor(t, [B * H, S, D], [S * D, D, 1], [1, rows, D])


def prepare(q, k, v, causal: bool = False, config: dict[str, Any] | None = None, sm_scale: float | None = None,
            out=None, lse=None, want_lse: bool = False) -> C.Launch:
    """The launch of one config (CPU tensors work: compile-only inspection)."""
    p = C.problem(q, k, v, causal, sm_scale)
    cfg = dict(config or C.configs_for(CONFIGS, p.D)[0])
    out, lse, store_lse = C.outputs(q, out, lse, want_lse)
    BM, BN = cfg.pop("BLOCK_M"), cfg.pop("BLOCK_N")
    args = (_desc3(q, BM, p.D), _desc3(k, BN, p.D), _desc3(v, BN, p.D), _desc3(out, BM, p.D), lse,
            p.sm_scale * C.LOG2E, p.S_q, p.S_kv)
    kwargs = dict(cfg, HEAD_DIM=p.D, CAUSAL=p.causal, STORE_LSE=store_lse, BLOCK_M=BM,
                  BLOCK_N=BN, num_stages=1)
    grid = (triton.cdiv(p.S_q, BM), p.BH)
    return C.Launch(triton_attention_kernel, args, kwargs, grid, out, lse, p)


launch, attention = module_calls(prepare, CONFIGS, _tuner)
