"""Rings that hang, for the live hang snapshot (issue 35): beside ``isolation_kernels.ring_hang`` (a slot nobody
frees: tutorial 04's deadlock), a producer that waits for the wrong parity of its first free slot, and two rings
the static model cannot follow because the data decides: a consumer that runs one tile more than the producer
(the counts are read from memory) and a producer whose slots come from a table (one slot is never filled).
``# HANG`` marks the wait the snapshot must find warps in."""

from __future__ import annotations

import triton
import triton.language as tl
import triton.language.extra.tlx as tlx


@triton.jit
def ring_wrong_parity(x_ptr, y_ptr, n, TILES: tl.constexpr, BLOCK: tl.constexpr, NUM_BUF: tl.constexpr):
    """The producer waits for phase 0 of a fresh ``empty`` barrier: no one has released it yet."""
    pid = tl.program_id(0)
    bufs = tlx.local_alloc((BLOCK,), tl.float32, NUM_BUF)
    full = tlx.alloc_barriers(num_barriers=NUM_BUF, arrive_count=1)
    empty = tlx.alloc_barriers(num_barriers=NUM_BUF, arrive_count=1)
    with tlx.async_tasks():
        with tlx.async_task("default"):
            for t in range(TILES):
                s = t % NUM_BUF
                tlx.barrier_wait(tlx.local_view(empty, s), (t // NUM_BUF) & 1)  # HANG
                offs = (pid * TILES + t) * BLOCK + tl.arange(0, BLOCK)
                tlx.local_store(tlx.local_view(bufs, s), tl.load(x_ptr + offs, mask=offs < n, other=0.0))
                tlx.barrier_arrive(tlx.local_view(full, s))
        with tlx.async_task(num_warps=4):
            for t in range(TILES):
                s = t % NUM_BUF
                tlx.barrier_wait(tlx.local_view(full, s), (t // NUM_BUF) & 1)
                v = tlx.local_load(tlx.local_view(bufs, s)) * 2.0
                offs = (pid * TILES + t) * BLOCK + tl.arange(0, BLOCK)
                tl.store(y_ptr + offs, v, mask=offs < n)
                tlx.barrier_arrive(tlx.local_view(empty, s))


@triton.jit
def ring_counts_from_memory(x_ptr, y_ptr, n, counts_ptr, BLOCK: tl.constexpr, NUM_BUF: tl.constexpr):
    """The producer fills ``counts[0]`` tiles, the consumer takes ``counts[1]``: given one more, it waits for ever."""
    pid = tl.program_id(0)
    bufs = tlx.local_alloc((BLOCK,), tl.float32, NUM_BUF)
    full = tlx.alloc_barriers(num_barriers=NUM_BUF, arrive_count=1)
    empty = tlx.alloc_barriers(num_barriers=NUM_BUF, arrive_count=1)
    with tlx.async_tasks():
        with tlx.async_task("default"):
            made = tl.load(counts_ptr)
            for t in range(made):
                s = t % NUM_BUF
                tlx.barrier_wait(tlx.local_view(empty, s), ((t // NUM_BUF) & 1) ^ 1)
                offs = (pid * made + t) * BLOCK + tl.arange(0, BLOCK)
                tlx.local_store(tlx.local_view(bufs, s), tl.load(x_ptr + offs, mask=offs < n, other=0.0))
                tlx.barrier_arrive(tlx.local_view(full, s))
        with tlx.async_task(num_warps=4):
            taken = tl.load(counts_ptr + 1)
            for t in range(taken):
                s = t % NUM_BUF
                tlx.barrier_wait(tlx.local_view(full, s), (t // NUM_BUF) & 1)  # HANG
                v = tlx.local_load(tlx.local_view(bufs, s)) * 2.0
                offs = (pid * taken + t) * BLOCK + tl.arange(0, BLOCK)
                tl.store(y_ptr + offs, v, mask=offs < n)
                tlx.barrier_arrive(tlx.local_view(empty, s))


@triton.jit
def ring_slots_from_table(x_ptr, y_ptr, n, slots_ptr, TILES: tl.constexpr, BLOCK: tl.constexpr,
                          NUM_BUF: tl.constexpr):
    """The producer fills the slot ``slots[t]`` names; the consumer takes them in turn: a table that never names
    slot 1 leaves the consumer waiting for it."""
    pid = tl.program_id(0)
    bufs = tlx.local_alloc((BLOCK,), tl.float32, NUM_BUF)
    full = tlx.alloc_barriers(num_barriers=NUM_BUF, arrive_count=1)
    empty = tlx.alloc_barriers(num_barriers=NUM_BUF, arrive_count=1)
    with tlx.async_tasks():
        with tlx.async_task("default"):
            for t in range(TILES):
                s = tl.load(slots_ptr + t)
                tlx.barrier_wait(tlx.local_view(empty, s), ((t // NUM_BUF) & 1) ^ 1)
                offs = (pid * TILES + t) * BLOCK + tl.arange(0, BLOCK)
                tlx.local_store(tlx.local_view(bufs, s), tl.load(x_ptr + offs, mask=offs < n, other=0.0))
                tlx.barrier_arrive(tlx.local_view(full, s))
        with tlx.async_task(num_warps=4):
            for t in range(TILES):
                s = t % NUM_BUF
                tlx.barrier_wait(tlx.local_view(full, s), (t // NUM_BUF) & 1)  # HANG
                v = tlx.local_load(tlx.local_view(bufs, s)) * 2.0
                offs = (pid * TILES + t) * BLOCK + tl.arange(0, BLOCK)
                tl.store(y_ptr + offs, v, mask=offs < n)
                tlx.barrier_arrive(tlx.local_view(empty, s))
