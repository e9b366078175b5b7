"""TLX kernels with ``async_task(name=...)`` roles (compile-only tests of timeline builds)."""

from __future__ import annotations

import triton.language as tl

from workbench import tlx


@tlx.jit
def named_pipeline(x_ptr, y_ptr, n_elements, TILES: tl.constexpr, BLOCK: tl.constexpr, NUM_BUF: tl.constexpr):
    pid = tl.program_id(0)
    bufs = tlx.local_alloc((BLOCK,), tl.float32, NUM_BUF)
    full = tlx.alloc_barriers(NUM_BUF, arrive_count=1)
    empty = tlx.alloc_barriers(NUM_BUF, arrive_count=2)
    with tlx.async_tasks():
        with tlx.async_task("default", name="producer"):
            for t in range(TILES):
                slot, phase = tlx.get_bufidx_phase(t, NUM_BUF)
                tlx.barrier_wait(empty[slot], phase ^ 1)
                offs = (pid * TILES + t) * BLOCK + tl.arange(0, BLOCK)
                x = tl.load(x_ptr + offs, mask=offs < n_elements, other=0.0)
                tlx.local_store(bufs[slot], x.to(tl.float32))
                tlx.barrier_arrive(full[slot])
        with tlx.async_task(num_warps=4, replicate=2, name="consumer"):
            for t in range(TILES):
                slot, phase = tlx.get_bufidx_phase(t, NUM_BUF)
                tlx.barrier_wait(full[slot], phase)
                x = tlx.local_load(bufs[slot])
                offs = (pid * TILES + t) * BLOCK + tl.arange(0, BLOCK)
                tl.store(y_ptr + offs, x.to(y_ptr.dtype.element_ty), mask=offs < n_elements)
                tlx.barrier_arrive(empty[slot])


@tlx.jit
def bad_name(x_ptr, y_ptr, n_elements, TILES: tl.constexpr, BLOCK: tl.constexpr, NUM_BUF: tl.constexpr):
    with tlx.async_tasks():
        with tlx.async_task("default", name="my role"):
            pass
        with tlx.async_task(num_warps=4):
            pass


def example_args(n: int = 4096):
    import torch

    x = torch.empty(n, dtype=torch.float32)
    y = torch.empty(n, dtype=torch.float32)
    return (x, y, n), dict(TILES=2, BLOCK=512, NUM_BUF=2, num_warps=4)
