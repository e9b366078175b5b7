"""The tile schedule of every grouped GEMM here (``@triton.jit``): which tile of which group a program handles.

A grouped GEMM over ``E`` groups (experts) computes, for each group ``g``, a ``gm x N`` output from a reduction of
length ``gk``. ``offsets`` (int32, ``E`` entries) holds the cumulative token counts: group ``g`` owns tokens
``[offsets[g - 1], offsets[g])`` (``offsets[-1]`` read as 0). Two kinds of problem:

- ragged M (``RAGGED_K=False``: the forward ``X_g @ W_g`` and the backward ``dY_g @ W_g^T``): the tokens are the
  output rows, ``gm = tokens of g``, ``gk = K``;
- ragged K (``RAGGED_K=True``: the weight gradient ``X_g^T @ dY_g``): the tokens are the reduction, ``gm = M``
  (fixed), ``gk = tokens of g`` (an empty group still has its tiles: they store zeros).

The output tiles of all groups form one sequence, group after group, each group's ``cdiv(gm, BM) x cdiv(N, BN)``
tiles in the GROUP_M-swizzled order of the dense GEMMs (:func:`tlx_kernels.gemm.device.tile_coords`). A
persistent program takes the tiles ``pid, pid + P, pid + 2P, ...`` of that sequence; :func:`next_tile` walks the
groups forward from the program's previous tile, so a program reads each entry of ``offsets`` about once, on the
device, with no host synchronisation; empty groups have no tiles (ragged M) and are stepped over.
"""

from __future__ import annotations

import triton
import triton.language as tl

from tlx_kernels.gemm.device import tile_coords


@triton.jit
def group_problem(offsets, g, E, M, K, RAGGED_K: tl.constexpr):
    """(first token, output rows ``gm``, reduction length ``gk``) of group ``g`` (clamped to ``E - 1``)."""
    gg = tl.minimum(g, E - 1)
    end = tl.load(offsets + gg)
    start = tl.load(offsets + tl.maximum(gg - 1, 0))
    start = tl.where(gg > 0, start, 0)
    if RAGGED_K:
        gm = M + 0 * start
        gk = end - start
    else:
        gm = end - start
        gk = K + 0 * start
    return start, gm, gk


@triton.jit
def next_tile(tile, g, g_first, offsets, E, M, N, K, BM: tl.constexpr, BN: tl.constexpr, GROUP_M: tl.constexpr,
              RAGGED_K: tl.constexpr):
    """The group of the global tile ``tile``, walking forward from group ``g`` whose first tile is ``g_first``.

    Returns ``(g, g_first, start, gm, gk, pid_m, pid_n)``: the group (``E`` when ``tile`` is past the last tile:
    the program is done), its first tile in the sequence, its first token, its output rows and reduction length,
    and the tile's row and column within the group's output."""
    g = g + 0 * tile  # a tensor even when the caller starts from the literal 0 (it is loop-carried)
    g_first = g_first + 0 * tile
    tiles_n = tl.cdiv(N, BN)
    start, gm, gk = group_problem(offsets, g, E, M, K, RAGGED_K)
    n = tl.cdiv(gm, BM) * tiles_n
    while (g < E) & (tile >= g_first + n):
        g_first += n
        g += 1
        start, gm, gk = group_problem(offsets, g, E, M, K, RAGGED_K)
        n = tl.cdiv(gm, BM) * tiles_n
    pid_m, pid_n = tile_coords(tile - g_first, tl.maximum(tl.cdiv(gm, BM), 1), tiles_n, GROUP_M)
    return g, g_first, start, gm, gk, pid_m, pid_n


@triton.jit
def group_bases(a, b, c, g, start, M, N, K, RAGGED_K: tl.constexpr):
    """Where group ``g``'s operands and output begin (64-bit offsets: ``E x K x N`` passes 2^31 elements).

    Ragged M: A = rows ``start...`` of ``a`` (``[T, K]``), B = ``b[g]`` (``K x N`` or its transpose), C = rows
    ``start...`` of ``c`` (``[T, N]``). Ragged K: A = rows ``start...`` of ``a`` (``[T, M]``, read transposed),
    B = rows ``start...`` of ``b`` (``[T, N]``), C = ``c[g]`` (``M x N``)."""
    s = start.to(tl.int64)
    if RAGGED_K:
        a_base = a + s * M
        b_base = b + s * N
        c_base = c + g.to(tl.int64) * M * N
    else:
        a_base = a + s * K
        b_base = b + g.to(tl.int64) * K * N
        c_base = c + s * N
    return a_base, b_base, c_base


@triton.jit
def schedule_table(offsets, seen, E, M, N, K, BM: tl.constexpr, BN: tl.constexpr, GROUP_M: tl.constexpr,
                   RAGGED_K: tl.constexpr):
    """The schedule itself, written down: ``seen[tile] = (program, group, pid_m, pid_n, first token, gm, gk,
    order)`` for every tile a program takes (``order``: how many it took before), walking the tiles as the
    kernels do. For tests and for looking at a schedule (Triton's CPU interpreter runs it)."""
    tile = tl.program_id(0)
    done = 0
    g, g_first, start, gm, gk, pid_m, pid_n = next_tile(tile, 0, 0, offsets, E, M, N, K, BM, BN, GROUP_M, RAGGED_K)
    while g < E:
        row = seen + tile * 8
        tl.store(row, tl.program_id(0))
        tl.store(row + 1, g)
        tl.store(row + 2, pid_m)
        tl.store(row + 3, pid_n)
        tl.store(row + 4, start)
        tl.store(row + 5, gm)
        tl.store(row + 6, gk)
        tl.store(row + 7, done)
        done += 1
        tile += tl.num_programs(0)
        g, g_first, start, gm, gk, pid_m, pid_n = next_tile(tile, g, g_first, offsets, E, M, N, K, BM, BN, GROUP_M,
                                                            RAGGED_K)


def host_schedule(counts: list[int], M: int, N: int, K: int, BM: int, BN: int, ragged_k: bool) -> list[tuple]:
    """``(group, gm, gk)`` of every tile of the sequence :func:`next_tile` walks, in order (tile ``t`` goes to
    program ``t % P``), computed on the host from the counts: for looking at a schedule without running it
    (``tests/kernels/test_moe_interpreter.py`` holds it to :func:`schedule_table`'s)."""
    out = []
    for g, rows in enumerate(counts):
        gm, gk = (M, rows) if ragged_k else (rows, K)
        out += [(g, gm, gk)] * (-(-gm // BM) * -(-N // BN))
    return out


__all__ = ["group_bases", "group_problem", "host_schedule", "next_tile", "schedule_table"]
