"""Device helpers every attention kernel shares: the Q tile of a program, the KV range of a Q tile, the
producer's TMA loads, the consumers' turns, score masks, the online softmax step and the epilogue.

Scores are kept in log2 units: ``qk_scale = sm_scale * log2(e)`` is folded into one FMA per score
(``s * qk_scale - m``) ahead of ``exp2``, and the running row max ``m`` is stored already scaled.
"""

from __future__ import annotations

import triton
import triton.language as tl
import triton.language.extra.tlx as tlx


@triton.jit
def q_tile(TILE_M: tl.constexpr, CAUSAL: tl.constexpr):
    """(head ``bh``, first query row) of this program's tile: grid ``(cdiv(S_q, TILE_M), B*H)``, causal tiles
    (whose KV ranges grow with the row) launched longest first."""
    bh = tl.program_id(1)
    pid_m = tl.program_id(0)
    if CAUSAL:
        pid_m = tl.num_programs(0) - 1 - pid_m  # longest tiles first
    return bh, pid_m * TILE_M


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
def load_q(desc_q, q_smem, q_full, row, BLOCK_M: tl.constexpr, HEAD_DIM: tl.constexpr, NUM_GROUPS: tl.constexpr):
    """TMA-load each consumer group ``g``'s Q tile (rows ``row + g * BLOCK_M``) into ``q_smem[g]``, completing on
    ``q_full[g]``."""
    for g in tl.static_range(NUM_GROUPS):
        tlx.barrier_expect_bytes(q_full[g], BLOCK_M * HEAD_DIM * tlx.size_of(tlx.dtype_of(desc_q)))
        tlx.async_descriptor_load(desc_q, q_smem[g], [row + g * BLOCK_M, 0], q_full[g])


@triton.jit
def produce_kv(desc_k, desc_v, k_smem, v_smem, k_full, k_empty, v_full, v_empty, it0, kv_row, j0, j1,
               BLOCK_N: tl.constexpr, HEAD_DIM: tl.constexpr, NUM_BUFFERS: tl.constexpr):
    """TMA-load K and V blocks ``j0 .. j1-1`` of a tile (rows from ``kv_row``) into ring positions ``it0 + j``. K and V
    have their own barriers, so ``Q K^T`` can start before V has landed."""
    TILE_BYTES: tl.constexpr = BLOCK_N * HEAD_DIM * tlx.size_of(tlx.dtype_of(desc_k))
    for j in range(j0, j1):
        it = it0 + j
        slot = it % NUM_BUFFERS
        phase = (it // NUM_BUFFERS) & 1
        tlx.barrier_wait(k_empty[slot], phase ^ 1)
        tlx.barrier_expect_bytes(k_full[slot], TILE_BYTES)
        tlx.async_descriptor_load(desc_k, k_smem[slot], [kv_row + j * BLOCK_N, 0], k_full[slot])
        tlx.barrier_wait(v_empty[slot], phase ^ 1)
        tlx.barrier_expect_bytes(v_full[slot], TILE_BYTES)
        tlx.async_descriptor_load(desc_v, v_smem[slot], [kv_row + j * BLOCK_N, 0], v_full[slot])


@triton.jit
def turn_begin(g: tl.constexpr, TURNS: tl.constexpr):
    """With ``TURNS`` (ping-pong), wait for consumer ``g``'s turn on the tensor cores: named barrier ``9 + g`` (ids
    below 9 are Triton's), 256 threads = the waiting and the arriving warpgroup."""
    if TURNS:
        tlx.named_barrier_wait(9 + g, 256)


@triton.jit
def turn_end(g: tl.constexpr, NUM_GROUPS: tl.constexpr, TURNS: tl.constexpr):
    """With ``TURNS``, hand the tensor cores to consumer ``(g + 1) % NUM_GROUPS``."""
    if TURNS:
        tlx.named_barrier_arrive(9 + (g + 1) % NUM_GROUPS, 256)


@triton.jit
def scores(q_buf, k_smem, k_full, k_empty, slot, phase, q_start, kv_start, S_kv, g: tl.constexpr,
           CAUSAL: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, NUM_GROUPS: tl.constexpr,
           TURNS: tl.constexpr):
    """``S = Q K^T`` of the KV block in ring slot ``slot``: wait for K, issue the wgmma (in consumer ``g``'s turn
    with ``TURNS``), wait for it, release K's slot, mask the scores where the block needs it."""
    tlx.barrier_wait(k_full[slot], phase)
    turn_begin(g, TURNS)
    qk = tlx.async_dot(q_buf, tlx.local_trans(k_smem[slot]))
    turn_end(g, NUM_GROUPS, TURNS)
    qk = tlx.async_dot_wait(0, qk)
    tlx.barrier_arrive(k_empty[slot])
    if needs_mask(q_start, kv_start, S_kv, CAUSAL, BLOCK_N):
        qk = mask_scores(qk, q_start, kv_start, S_kv, CAUSAL, BLOCK_M, BLOCK_N)
    return qk


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
def softmax_block(qk, m_i, l_i, q_start, kv_start, S_kv, qk_scale, CAUSAL: tl.constexpr, BLOCK_M: tl.constexpr,
                  BLOCK_N: tl.constexpr):
    """:func:`softmax_next` of a block's scores, masked where the block needs it, for loops that overlap the softmax
    with a PV wgmma in flight."""
    # The softmax is in both arms on purpose: ptxas schedules within basic blocks, and the merge after this
    # branch keeps it from hoisting the caller's wait for the PV product above the softmax.
    if needs_mask(q_start, kv_start, S_kv, CAUSAL, BLOCK_N):
        qk = mask_scores(qk, q_start, kv_start, S_kv, CAUSAL, BLOCK_M, BLOCK_N)
        m_i, l_i, p, alpha = softmax_next(qk, m_i, l_i, qk_scale)
    else:
        m_i, l_i, p, alpha = softmax_next(qk, m_i, l_i, qk_scale)
    return m_i, l_i, p, alpha


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
def last_pv(acc, alpha, p, v_smem, v_full, v_empty, it, g: tl.constexpr, NUM_BUFFERS: tl.constexpr,
            NUM_GROUPS: tl.constexpr, RESCALED: tl.constexpr, TURNS: tl.constexpr):
    """The pipelined loops' epilogue: ``O += P V`` of the tile's last KV block (ring position ``it``), issued in
    consumer ``g``'s turn with ``TURNS``; V's slot released. ``O`` is rescaled by ``alpha`` first unless the loop
    did it already (``RESCALED``)."""
    last = it % NUM_BUFFERS
    if not RESCALED:
        acc = acc * alpha[:, None]
    tlx.barrier_wait(v_full[last], (it // NUM_BUFFERS) & 1)
    turn_begin(g, TURNS)
    acc = tlx.async_dot(p.to(v_smem.dtype), v_smem[last], acc)
    turn_end(g, NUM_GROUPS, TURNS)
    acc = tlx.async_dot_wait(0, acc)
    tlx.barrier_arrive(v_empty[last])
    return acc


@triton.jit
def store_lse(l_i, m_i, lse_ptr, bh, q_start, S_q, BLOCK_M: tl.constexpr, STORE_LSE: tl.constexpr):
    """With ``STORE_LSE``, the logsumexp of rows ``[q_start, q_start + BLOCK_M)`` of head ``bh`` (those < ``S_q``) in
    natural-log units (``m`` is in log2 units)."""
    if STORE_LSE:
        rows = q_start + tl.arange(0, BLOCK_M)
        lse = (m_i + tl.math.log2(l_i)) * 0.6931471805599453
        tl.store(lse_ptr + bh.to(tl.int64) * S_q + rows, lse, mask=rows < S_q)


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
    store_lse(l_i, m_i, lse_ptr, bh, q_start, S_q, BLOCK_M, STORE_LSE)
