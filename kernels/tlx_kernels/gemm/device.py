"""Device helpers of the GEMM kernels (``@triton.jit``): tile order, the TMA loads of a K-step, the warp-specialized
producer, the consumers' K loop, operand views, the subtiled TMA-store epilogue."""

from __future__ import annotations

import triton
import triton.language as tl
import triton.language.extra.tlx as tlx


@triton.jit
def tile_coords(tile_id, num_pid_m, num_pid_n, GROUP_M: tl.constexpr):
    """(pid_m, pid_n) of a linear tile id, grouped GROUP_M tiles down M so neighbours share L2 lines."""
    in_group = GROUP_M * num_pid_n
    group = tile_id // in_group
    first_m = group * GROUP_M
    size_m = min(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (tile_id % in_group) % size_m
    pid_n = (tile_id % in_group) // size_m
    return pid_m, pid_n


@triton.jit
def tile_counts(M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    """(tiles down M, tiles across N, K-steps) of an ``M x N x K`` product in ``BM x BN x BK`` steps."""
    num_pid_m = tl.cdiv(M, BM)
    num_pid_n = tl.cdiv(N, BN)
    num_k = tl.cdiv(K, BK)
    return num_pid_m, num_pid_n, num_k


@triton.jit
def load_box(desc, buf, bar, row, col, TRANSPOSED: tl.constexpr):
    """TMA copy of the box at (row, col) of a matrix into ``buf``, completing on ``bar``; with ``TRANSPOSED`` the
    storage is the matrix's transpose (a column-major operand), read at (col, row)."""
    if TRANSPOSED:
        tlx.async_descriptor_load(desc, buf, [col, row], bar)
    else:
        tlx.async_descriptor_load(desc, buf, [row, col], bar)


@triton.jit
def load_step(a_desc, b_desc, a_buf, b_buf, bar, off_m, off_n, off_k, A_T: tl.constexpr, B_T: tl.constexpr):
    """TMA copies of one K-step's A and B tiles into one ring slot, completing on ``bar``."""
    load_box(a_desc, a_buf, bar, off_m, off_k, A_T)
    load_box(b_desc, b_buf, bar, off_k, off_n, B_T)


@triton.jit
def produce(a_desc, b_desc, a_bufs, b_bufs, full, empty, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
            BK: tl.constexpr, NUM_STAGES: tl.constexpr, GROUP_M: tl.constexpr, A_T: tl.constexpr, B_T: tl.constexpr,
            A_HALVES: tl.constexpr):
    """The producer of a persistent warp-specialized GEMM: for every K-step of this CTA's tiles (``pid, pid + grid,
    ...``, GROUP_M-swizzled), wait for a free slot of the ``NUM_STAGES``-deep ring (``empty``), arm ``full`` with
    the step's bytes and issue its TMA copies. With ``A_HALVES`` the A tile goes in two halves, the top one into
    ``a_bufs[slot]`` and the bottom one into ``a_bufs[NUM_STAGES + slot]`` (one per cooperative consumer)."""
    STEP_BYTES: tl.constexpr = (BM * BK + BK * BN) * tlx.size_of(tlx.dtype_of(a_desc))
    num_pid_m, num_pid_n, num_k = tile_counts(M, N, K, BM, BN, BK)
    it = 0
    for tile in range(tl.program_id(0), num_pid_m * num_pid_n, tl.num_programs(0)):
        pid_m, pid_n = tile_coords(tile, num_pid_m, num_pid_n, GROUP_M)
        off_m = pid_m * BM
        off_n = pid_n * BN
        for k in range(num_k):
            slot = it % NUM_STAGES
            tlx.barrier_wait(empty[slot], ((it // NUM_STAGES) & 1) ^ 1)
            bar = full[slot]
            tlx.barrier_expect_bytes(bar, STEP_BYTES)
            load_box(a_desc, a_bufs[slot], bar, off_m, k * BK, A_T)
            if A_HALVES:
                load_box(a_desc, a_bufs[NUM_STAGES + slot], bar, off_m + BM // 2, k * BK, A_T)
            load_box(b_desc, b_bufs[slot], bar, k * BK, off_n, B_T)
            it += 1


@triton.jit
def mma_steps(a_bufs, b_bufs, full, empty, acc, it, num_k, a_first, NUM_STAGES: tl.constexpr, A_T: tl.constexpr,
              B_T: tl.constexpr, MMA_WAIT: tl.constexpr):
    """A consumer's K loop over ring positions ``it, it + 1, ...``: wait for the step's slot (``full``), issue an
    asynchronous wgmma of ``a_bufs[a_first + slot]`` and ``b_bufs[slot]`` into ``acc``. One wgmma group stays in
    flight: once the previous step's is done its slot is released (``empty``); with ``MMA_WAIT=0`` each step's
    wgmma is waited for and its slot released at once. Returns (acc, the last step's slot, the next position); the
    caller waits for the last wgmma and, unless ``MMA_WAIT=0``, releases that slot."""
    prev = 0
    # num_stages=0: Triton's software pipeliner must leave this loop alone (it would add a wait(0)
    # after every async_dot); TLX pipelines it by hand
    for k in tl.range(0, num_k, num_stages=0):
        slot = it % NUM_STAGES
        tlx.barrier_wait(full[slot], (it // NUM_STAGES) & 1)
        acc = tlx.async_dot(operand(a_bufs[a_first + slot], A_T), operand(b_bufs[slot], B_T), acc)
        if MMA_WAIT == 0:  # this step's wgmma is done: free its slot now (another consumer's keeps the
            acc = tlx.async_dot_wait(0, acc)  # tensor cores busy meanwhile; the producer gets a slot sooner)
            tlx.barrier_arrive(empty[slot])
        else:  # one wgmma group stays in flight: the previous step's is done, so its slot is free
            acc = tlx.async_dot_wait(1, acc)
            if k > 0:
                tlx.barrier_arrive(empty[prev])
        prev = slot
        it += 1
    return acc, prev, it


@triton.jit
def operand(buf, TRANSPOSED: tl.constexpr):
    """A shared-memory tile as a wgmma operand: transposed in place (a view) if its storage is."""
    if TRANSPOSED:
        view = tlx.local_trans(buf)
    else:
        view = buf
    return view


@triton.jit
def _halves(x):
    """Left and right column halves of a 2-D register tile (a register renaming: no data moves)."""
    R: tl.constexpr = x.shape[0]
    W: tl.constexpr = x.shape[1] // 2
    return tl.split(tl.permute(tl.reshape(x, [R, 2, W]), [0, 2, 1]))


@triton.jit
def _store_subtile(c_desc, buf, x, row, col, EPI_BUFS: tl.constexpr):
    # the TMA store that last read `buf` was EPI_BUFS stores ago: wait until at most EPI_BUFS - 1 are pending
    tlx.async_descriptor_store_wait(EPI_BUFS - 1)
    tlx.local_store(buf, x.to(tlx.dtype_of(c_desc)))
    tlx.fence_async_shared()
    tlx.async_descriptor_store(c_desc, buf, [row, col])


@triton.jit
def store_tile(c_desc, c_bufs, first, acc, row, col, EPI_SPLIT: tl.constexpr, EPI_BUFS: tl.constexpr):
    """TMA-store the fp32 tile ``acc`` at (row, col) as EPI_SPLIT column subtiles, converted to the output
    dtype one subtile at a time, through the EPI_BUFS shared buffers ``c_bufs[first + i]`` in turn: each
    subtile waits only for the store that last read its buffer, so stores overlap the next conversion.
    EPI_SPLIT must be a multiple of EPI_BUFS (the turn order then repeats from tile to tile)."""
    W: tl.constexpr = acc.shape[1] // EPI_SPLIT
    if EPI_SPLIT == 1:
        _store_subtile(c_desc, c_bufs[first], acc, row, col, EPI_BUFS)
    elif EPI_SPLIT == 2:
        x0, x1 = _halves(acc)
        _store_subtile(c_desc, c_bufs[first], x0, row, col, EPI_BUFS)
        _store_subtile(c_desc, c_bufs[first + (1 % EPI_BUFS)], x1, row, col + W, EPI_BUFS)
    else:
        tl.static_assert(EPI_SPLIT == 4, "EPI_SPLIT must be 1, 2 or 4")
        lo, hi = _halves(acc)
        x0, x1 = _halves(lo)
        x2, x3 = _halves(hi)
        _store_subtile(c_desc, c_bufs[first], x0, row, col, EPI_BUFS)
        _store_subtile(c_desc, c_bufs[first + (1 % EPI_BUFS)], x1, row, col + W, EPI_BUFS)
        _store_subtile(c_desc, c_bufs[first + (2 % EPI_BUFS)], x2, row, col + 2 * W, EPI_BUFS)
        _store_subtile(c_desc, c_bufs[first + (3 % EPI_BUFS)], x3, row, col + 3 * W, EPI_BUFS)


__all__ = ["load_box", "load_step", "mma_steps", "operand", "produce", "store_tile", "tile_coords",
           "tile_counts"]
