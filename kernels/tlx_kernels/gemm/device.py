"""Device helpers of the GEMM kernels (``@triton.jit``): tile order, operand views, the subtiled TMA-store epilogue."""

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


__all__ = ["operand", "store_tile", "tile_coords"]
