"""Device helpers every attention kernel shares: the KV range of a Q tile, score masks, the online softmax
step and the epilogue.

Scores are kept in log2 units: ``qk_scale = sm_scale * log2(e)`` is folded into one FMA per score
(``s * qk_scale - m``) ahead of ``exp2``, and the running row max ``m`` is stored already scaled.
"""

from __future__ import annotations

import triton
import triton.language as tl
import triton.language.extra.tlx as tlx


@triton.jit
def kv_blocks(q_start, q_rows, S_q, S_kv, CAUSAL: tl.constexpr, BLOCK_N: tl.constexpr):
    """Number of BLOCK_N-wide KV blocks the Q rows ``[q_start, q_start + q_rows)`` need (at least 1)."""
    if CAUSAL:
        last_row = tl.minimum(q_start + q_rows, S_q) - 1
        kv_end = tl.minimum(S_kv, last_row + 1)
        kv_end = tl.maximum(kv_end, 1)
    else:
        kv_end = S_kv
    return tl.cdiv(kv_end, BLOCK_N)


@triton.jit
def needs_mask(q_start, kv_start, S_kv, CAUSAL: tl.constexpr, BLOCK_N: tl.constexpr):
    """Whether KV block ``[kv_start, kv_start + BLOCK_N)`` has a masked score for rows from ``q_start`` on."""
    tail = kv_start + BLOCK_N > S_kv
    if CAUSAL:
        return tail | (kv_start + BLOCK_N - 1 > q_start)
    return tail


@triton.jit
def mask_scores(qk, q_start, kv_start, S_kv, CAUSAL: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """``qk`` with ``-inf`` where key ``j`` is past ``S_kv`` or (causal) after query ``i``."""
    cols = kv_start + tl.arange(0, BLOCK_N)
    keep = cols[None, :] < S_kv
    if CAUSAL:
        rows = q_start + tl.arange(0, BLOCK_M)
        keep = keep & (cols[None, :] <= rows[:, None])
    return tl.where(keep, qk, float("-inf"))


@triton.jit
def softmax_first(qk, qk_scale):
    """(m, l, p) of the first KV block: ``m`` the scaled row max, ``p = exp2(qk * scale - m)``, ``l`` its row sum."""
    m = tl.max(qk, 1) * qk_scale
    p = tl.math.exp2(qk * qk_scale - m[:, None])
    return m, tl.sum(p, 1), p


@triton.jit
def softmax_next(qk, m_i, l_i, qk_scale):
    """Online softmax step: (m, l, p, alpha) with ``alpha = exp2(m_old - m_new)`` the factor that rescales the
    running sum ``l`` (done here) and the output accumulator (the caller's job, once its PV product is done)."""
    m = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
    p = tl.math.exp2(qk * qk_scale - m[:, None])
    alpha = tl.math.exp2(m_i - m)
    l_new = l_i * alpha + tl.sum(p, 1)
    return m, l_new, p, alpha


@triton.jit
def p_operand(p_f32, dtype: tl.constexpr, LATE_P: tl.constexpr):
    """P as the loop carries it to the next PV product: converted to ``dtype`` now (after the PV wait: these
    registers were the in-flight product's operand), or with ``LATE_P`` kept in fp32 and converted right before
    the PV issue, under the next ``S = Q K^T`` wgmma (the loop of :mod:`.ws_pipelined` says why)."""
    if LATE_P:
        p = p_f32
    else:
        p = p_f32.to(dtype)
    return p


@triton.jit
def store_tile(acc, l_i, m_i, o_buf, desc_o, lse_ptr, bh, q_start, S_q, S_o, BLOCK_M: tl.constexpr,
               STORE_LSE: tl.constexpr):
    """Normalise ``acc`` by ``l`` and TMA-store it as rows ``[q_start, q_start + BLOCK_M)`` of head ``bh`` of the
    output (``S_o`` rows per head: padded to whole tiles), staged through the shared buffer ``o_buf``, whose
    previous store must have read it first. The logsumexp goes out in natural-log units (rows < ``S_q``)."""
    out = (acc * (1.0 / l_i)[:, None]).to(tlx.dtype_of(desc_o))
    tlx.async_descriptor_store_wait(0)
    tlx.local_store(o_buf, out)
    tlx.fence_async_shared()
    tlx.async_descriptor_store(desc_o, o_buf, [bh * S_o + q_start, 0])
    if STORE_LSE:
        rows = q_start + tl.arange(0, BLOCK_M)
        lse = (m_i + tl.math.log2(l_i)) * 0.6931471805599453
        tl.store(lse_ptr + bh.to(tl.int64) * S_q + rows, lse, mask=rows < S_q)
