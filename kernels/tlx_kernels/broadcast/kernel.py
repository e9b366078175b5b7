"""The fused broadcast-linear kernel (TLX, Hopper): one TMA producer, two wgmma consumer warpgroups.

Persistent over work units ``(user b, chunk s of b's candidate tiles, column tile j)``; ``j`` varies
fastest, so the CTAs that work on the same candidate rows run side by side and share them in L2.
Per unit the producer streams through one ``NUM_STAGES``-deep ring (``full``/``empty`` mbarriers):

1. the user phase: ``cdiv(D_u, BK)`` steps, each a ``BMU x BK`` box of ``U`` whose first row is user
   ``b`` (``BMU`` = 64, the smallest wgmma M; the other rows are neighbours, computed and dropped)
   and the ``BK x BN`` tile of ``W_u`` as two column halves;
2. the candidate phase: for each ``BM``-row tile ``i`` of user ``b``'s candidates, ``cdiv(D_x, BK)``
   steps of a ``BM x BK`` tile of ``X`` and the ``BK x BN`` tile of ``W_x`` (two halves).

Consumer ``cid`` owns the column half ``cid`` of the ``BN`` tile. It multiplies user ``b``'s row by
``W_u`` once per unit (``uw``: row 0 of the ``BMU x BN/2`` accumulator, plus the bias), then starts
every candidate tile's accumulator at ``uw`` broadcast to all ``BM`` rows, adds ``X_tile @ W_x`` with
async wgmma (one in flight; a slot is released as soon as the wgmma reading it is done), applies the
activation and TMA-stores the tile from its own shared buffer into ``Y`` viewed as ``(B, C, N)``,
which clips rows past ``C`` (the last tile of a user may read the next user's rows: computed, never
stored). The store runs while the next tile's wgmmas do; it is waited for only before the buffer is
written again. Launch with ``num_stages=0``: the ring is explicit, and Triton's software pipeliner
would otherwise wait for every wgmma right after issuing it.
"""

from __future__ import annotations

import triton
import triton.language as tl
import triton.language.extra.tlx as tlx

ACT_CODES = {"none": 0, "relu": 1, "silu": 2}


@triton.jit
def _activate(x, ACT: tl.constexpr):
    if ACT == 1:
        x = tl.maximum(x, 0.0)
    elif ACT == 2:
        x = x * tl.sigmoid(x)
    return x


@triton.jit
def _store_tile(y_desc, buf, y, b, row, col):
    """TMA-store ``y`` (1 x rows x cols) at ``(b, row, col)`` through ``buf``, once the last store has read it."""
    tlx.async_descriptor_store_wait(0)
    tlx.local_store(buf, y)
    tlx.fence_async_shared()
    tlx.async_descriptor_store(y_desc, buf, [b, row, col])


@triton.jit
def _unit_coords(unit, num_n, num_chunks, m_chunk, num_m, BN: tl.constexpr):
    """(user, first m-tile, end m-tile, first column) of a work unit; the column tile varies fastest."""
    j = unit % num_n
    rest = unit // num_n
    s = rest % num_chunks
    b = rest // num_chunks
    m_lo = s * m_chunk
    m_hi = tl.minimum(m_lo + m_chunk, num_m)
    return b, m_lo, m_hi, j * BN


# Sizes are not specialized (no recompile per shape: only the config, activation, bias and dtype count).
@triton.jit(do_not_specialize=["C", "N", "DU", "DX", "num_units", "num_chunks", "m_chunk"])
def broadcast_linear_kernel(
    u_desc,
    x_desc,
    wu_desc,
    wx_desc,
    y_desc,
    bias_ptr,
    C,
    N,
    DU,
    DX,
    num_units,
    num_chunks,
    m_chunk,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
    BMU: tl.constexpr,
    NUM_STAGES: tl.constexpr,
    CONSUMER_REGS: tl.constexpr,
    EPI_SPLIT: tl.constexpr,
    ACT: tl.constexpr,
    HAS_BIAS: tl.constexpr,
):
    dtype = tlx.dtype_of(x_desc)
    out_dtype = tlx.dtype_of(y_desc)
    BNH: tl.constexpr = BN // 2
    ES: tl.constexpr = tlx.size_of(dtype)
    a_bufs = tlx.local_alloc((BM, BK), dtype, NUM_STAGES)
    w_bufs = tlx.local_alloc((BK, BNH), dtype, 2 * NUM_STAGES)
    EPN: tl.constexpr = BNH // EPI_SPLIT
    y_bufs = tlx.local_alloc((1, BM, EPN), out_dtype, 2)  # one epilogue buffer per consumer
    full = tlx.alloc_barriers(NUM_STAGES, arrive_count=1)
    empty = tlx.alloc_barriers(NUM_STAGES, arrive_count=2)

    num_m = tl.cdiv(C, BM)
    num_n = tl.cdiv(N, BN)
    ku = tl.cdiv(DU, BK)
    kx = tl.cdiv(DX, BK)
    pid = tl.program_id(0)
    nprog = tl.num_programs(0)
    with tlx.async_tasks():
        with tlx.async_task("default"):  # producer: TMA into the ring
            it = 0
            for unit in range(pid, num_units, nprog):
                b, m_lo, m_hi, off_n = _unit_coords(unit, num_n, num_chunks, m_chunk, num_m, BN)
                for k in range(ku):  # user phase: U[b] (as the first row of a BMU-row box) and W_u
                    slot = it % NUM_STAGES
                    tlx.barrier_wait(empty[slot], ((it // NUM_STAGES) & 1) ^ 1)
                    tlx.barrier_expect_bytes(full[slot], (BMU * BK + BK * BN) * ES)
                    a_u = tlx.local_slice(a_bufs[slot], [0, 0], [BMU, BK])
                    tlx.async_descriptor_load(u_desc, a_u, [b, k * BK], full[slot])
                    tlx.async_descriptor_load(wu_desc, w_bufs[slot], [k * BK, off_n], full[slot])
                    tlx.async_descriptor_load(wu_desc, w_bufs[NUM_STAGES + slot], [k * BK, off_n + BNH], full[slot])
                    it += 1
                for i in range(m_lo, m_hi):  # candidate phase: X tiles of user b and W_x
                    row = b * C + i * BM
                    for k in range(kx):
                        slot = it % NUM_STAGES
                        tlx.barrier_wait(empty[slot], ((it // NUM_STAGES) & 1) ^ 1)
                        tlx.barrier_expect_bytes(full[slot], (BM * BK + BK * BN) * ES)
                        tlx.async_descriptor_load(x_desc, a_bufs[slot], [row, k * BK], full[slot])
                        tlx.async_descriptor_load(wx_desc, w_bufs[slot], [k * BK, off_n], full[slot])
                        tlx.async_descriptor_load(wx_desc, w_bufs[NUM_STAGES + slot], [k * BK, off_n + BNH], full[slot])
                        it += 1
        with tlx.async_task(num_warps=4, registers=CONSUMER_REGS, replicate=2):  # consumers: a column half each
            cid: tl.constexpr = tlx.async_task_replica_id()
            it = 0
            for unit in range(pid, num_units, nprog):
                b, m_lo, m_hi, off_n = _unit_coords(unit, num_n, num_chunks, m_chunk, num_m, BN)
                col = off_n + cid * BNH
                if HAS_BIAS:  # issued before the user phase, so the load's latency hides behind its wgmmas
                    cols = col + tl.arange(0, BNH)
                    bias = tl.load(bias_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)
                acc_u = tl.zeros((BMU, BNH), dtype=tl.float32)
                for k in range(ku):
                    slot = it % NUM_STAGES
                    tlx.barrier_wait(full[slot], (it // NUM_STAGES) & 1)
                    a_u = tlx.local_slice(a_bufs[slot], [0, 0], [BMU, BK])
                    acc_u = tlx.async_dot(a_u, w_bufs[cid * NUM_STAGES + slot], acc_u)
                    acc_u = tlx.async_dot_wait(1, acc_u)  # the previous step's wgmma is done: free its slot
                    if k > 0:
                        tlx.barrier_arrive(empty[(it + NUM_STAGES - 1) % NUM_STAGES])
                    it += 1
                acc_u = tlx.async_dot_wait(0, acc_u)
                tlx.barrier_arrive(empty[(it + NUM_STAGES - 1) % NUM_STAGES])
                # user b's projection: row 0 of the box (the other rows are other users), plus the bias
                first = tl.arange(0, BMU)[:, None] == 0
                uw = tl.sum(tl.where(first, acc_u, 0.0), axis=0)
                if HAS_BIAS:
                    uw += bias
                for i in range(m_lo, m_hi):
                    acc = tl.zeros((BM, BNH), dtype=tl.float32) + uw[None, :]  # the in-kernel broadcast
                    for k in range(kx):
                        slot = it % NUM_STAGES
                        tlx.barrier_wait(full[slot], (it // NUM_STAGES) & 1)
                        acc = tlx.async_dot(a_bufs[slot], w_bufs[cid * NUM_STAGES + slot], acc)
                        acc = tlx.async_dot_wait(1, acc)
                        if k > 0:
                            tlx.barrier_arrive(empty[(it + NUM_STAGES - 1) % NUM_STAGES])
                        it += 1
                    acc = tlx.async_dot_wait(0, acc)
                    tlx.barrier_arrive(empty[(it + NUM_STAGES - 1) % NUM_STAGES])
                    if col < N:  # a column half wholly past N has nothing to store
                        y = _activate(acc, ACT).to(out_dtype)
                        if EPI_SPLIT == 1:
                            _store_tile(y_desc, y_bufs[cid], tl.reshape(y, (1, BM, BNH)), b, i * BM, col)
                        else:  # two column halves in turn through one buffer half the size
                            y0, y1 = tl.split(tl.permute(tl.reshape(y, (BM, 2, EPN)), (0, 2, 1)))
                            _store_tile(y_desc, y_bufs[cid], tl.reshape(y0, (1, BM, EPN)), b, i * BM, col)
                            _store_tile(y_desc, y_bufs[cid], tl.reshape(y1, (1, BM, EPN)), b, i * BM, col + EPN)
            tlx.async_descriptor_store_wait(0, read_only=False)  # all stores done before the CTA exits
