"""Small kernels for isolated runs and sanitizers: a shared-memory ring (correct, hanging, racing)
and an out-of-bounds store.

The ring: a producer task loads tiles of ``x`` into a ``NUM_BUF``-slot ring in shared memory
(``full[s]``: the slot holds data; ``empty[s]``: the slot may be written again), a consumer task reads
each slot, doubles it into ``y`` and releases the slot. Lines marked ``# HANG`` / ``# RACE`` are where
the bug is (tests find them with ``marked_line``).
"""

from __future__ import annotations

import inspect

import triton
import triton.language as tl
import triton.language.extra.tlx as tlx


@triton.jit
def ring_ok(x_ptr, y_ptr, n, TILES: tl.constexpr, BLOCK: tl.constexpr, NUM_BUF: tl.constexpr):
    pid = tl.program_id(0)
    bufs = tlx.local_alloc((BLOCK,), tl.float32, NUM_BUF)
    full = tlx.alloc_barriers(num_barriers=NUM_BUF, arrive_count=1)
    empty = tlx.alloc_barriers(num_barriers=NUM_BUF, arrive_count=1)  # one arrive per task
    with tlx.async_tasks():
        with tlx.async_task("default"):
            for t in range(TILES):
                s = t % NUM_BUF
                tlx.barrier_wait(tlx.local_view(empty, s), ((t // NUM_BUF) & 1) ^ 1)
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
def ring_hang(x_ptr, y_ptr, n, TILES: tl.constexpr, BLOCK: tl.constexpr, NUM_BUF: tl.constexpr):
    """The consumer never releases a slot: the producer's wait for a free slot never completes."""
    pid = tl.program_id(0)
    bufs = tlx.local_alloc((BLOCK,), tl.float32, NUM_BUF)
    full = tlx.alloc_barriers(num_barriers=NUM_BUF, arrive_count=1)
    empty = tlx.alloc_barriers(num_barriers=NUM_BUF, arrive_count=1)  # one arrive per task
    with tlx.async_tasks():
        with tlx.async_task("default"):
            for t in range(TILES):
                s = t % NUM_BUF
                tlx.barrier_wait(tlx.local_view(empty, s), ((t // NUM_BUF) & 1) ^ 1)  # HANG
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


@triton.jit
def ring_race(x_ptr, y_ptr, n, TILES: tl.constexpr, BLOCK: tl.constexpr, NUM_BUF: tl.constexpr):
    """The consumer releases a slot before it reads it: the producer may overwrite the slot being read."""
    pid = tl.program_id(0)
    bufs = tlx.local_alloc((BLOCK,), tl.float32, NUM_BUF)
    full = tlx.alloc_barriers(num_barriers=NUM_BUF, arrive_count=1)
    empty = tlx.alloc_barriers(num_barriers=NUM_BUF, arrive_count=1)  # one arrive per task
    with tlx.async_tasks():
        with tlx.async_task("default"):
            for t in range(TILES):
                s = t % NUM_BUF
                tlx.barrier_wait(tlx.local_view(empty, s), ((t // NUM_BUF) & 1) ^ 1)
                offs = (pid * TILES + t) * BLOCK + tl.arange(0, BLOCK)
                tlx.local_store(tlx.local_view(bufs, s), tl.load(x_ptr + offs, mask=offs < n, other=0.0))  # RACE
                tlx.barrier_arrive(tlx.local_view(full, s))
        with tlx.async_task(num_warps=4):
            for t in range(TILES):
                s = t % NUM_BUF
                tlx.barrier_wait(tlx.local_view(full, s), (t // NUM_BUF) & 1)
                tlx.barrier_arrive(tlx.local_view(empty, s))
                v = tlx.local_load(tlx.local_view(bufs, s)) * 2.0  # RACE
                offs = (pid * TILES + t) * BLOCK + tl.arange(0, BLOCK)
                tl.store(y_ptr + offs, v, mask=offs < n)


@triton.jit
def oob_store(y_ptr, n, shift, BLOCK: tl.constexpr):
    """Stores far past the end of ``y`` (``shift`` elements on): an illegal address on the GPU."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs + shift, offs.to(tl.float32), mask=offs < n)  # OOB


@triton.jit
def add_one(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1.0, mask=mask)


def marked_line(kernel, marker: str) -> list[int]:
    """File lines of ``kernel`` carrying ``# MARKER``."""
    fn = getattr(kernel, "fn", kernel)
    lines, first = inspect.getsourcelines(fn)
    return [first + i for i, text in enumerate(lines) if text.rstrip().endswith(f"# {marker}")]


RING_ARGS = {"TILES": 8, "BLOCK": 1024, "NUM_BUF": 2}
