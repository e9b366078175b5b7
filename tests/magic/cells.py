"""Cell bodies shared by the magic tests (the same text -> the same compile-cache entries); the vector add is
``sample_kernels.vector_add``'s text."""

from __future__ import annotations

from sample_kernels import kernel_text

ADD = kernel_text("vector_add") + """
n = 1000
x = torch.randn(n, device=DEVICE)
y = torch.randn(n, device=DEVICE)
out = torch.empty(n, device=DEVICE)
vector_add[(triton.cdiv(n, 256),)](x, y, out, n, BLOCK=256)
"""
ADD_LOAD_LINE = 7  # cell line of `x = tl.load(...)` when ADD follows the %%tlx line

# the same kernel, deliberately wrong (subtracts)
WRONG = ADD.replace("x + y, mask=mask", "x - y, mask=mask")

# a compile error on cell line 9: `zz` is not defined inside the kernel
COMPILE_ERROR = ADD.replace("x + y, mask=mask", "x + zz, mask=mask")
COMPILE_ERROR_LINE = 9

# a syntax error on cell line 6
SYNTAX_ERROR = ADD.replace("mask = offs < n", "mask = offs < n)")
SYNTAX_ERROR_LINE = 6

SCALE = """@triton.jit
def scale_kernel(x_ptr, out_ptr, n, s, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * s, mask=mask)

scaled = torch.empty(n, device=DEVICE)
scale_kernel[(triton.cdiv(n, 256),)](out, scaled, n, 2.0, BLOCK=256)
"""

GLUON = """@gluon.jit
def copy_kernel(src, dst, n, BLOCK: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [4], [0])
    offs = gl.arange(0, BLOCK, layout=layout) + gl.program_id(0) * BLOCK
    mask = offs < n
    gl.store(dst + offs, gl.load(src + offs, mask=mask), mask=mask)

src = torch.randn(1000, device=DEVICE)
dst = torch.zeros(1000, device=DEVICE)
copy_kernel[(8,)](src, dst, 1000, BLOCK=128)
"""

TUNED = """@triton.autotune(configs=[triton.Config({"BLOCK": 128}, num_warps=4),
                          triton.Config({"BLOCK": 512}, num_warps=8)], key=["n"])
@triton.jit
def tuned_add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)

n = 1000
x = torch.randn(n, device=DEVICE)
y = torch.randn(n, device=DEVICE)
out = torch.empty(n, device=DEVICE)
tuned_add[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, out, n)
"""

TLX = """@triton.jit
def ew_kernel(x_ptr, y_ptr, n_elements, TILES: tl.constexpr, BLOCK: tl.constexpr, NUM_BUF: tl.constexpr):
    pid = tl.program_id(0)
    bufs = tlx.local_alloc((BLOCK,), tl.float32, NUM_BUF)
    full = tlx.alloc_barriers(num_barriers=NUM_BUF, arrive_count=1)
    empty = tlx.alloc_barriers(num_barriers=NUM_BUF, arrive_count=1)
    with tlx.async_tasks():
        with tlx.async_task("default"):
            for t in range(TILES):
                slot = t % NUM_BUF
                tlx.barrier_wait(tlx.local_view(empty, slot), ((t // NUM_BUF) & 1) ^ 1)
                offs = (pid * TILES + t) * BLOCK + tl.arange(0, BLOCK)
                tlx.local_store(tlx.local_view(bufs, slot), tl.load(x_ptr + offs, mask=offs < n_elements, other=0.0))
                tlx.barrier_arrive(tlx.local_view(full, slot))
        with tlx.async_task(num_warps=4):
            for t in range(TILES):
                slot = t % NUM_BUF
                tlx.barrier_wait(tlx.local_view(full, slot), (t // NUM_BUF) & 1)
                y = tlx.local_load(tlx.local_view(bufs, slot)) * 2.0
                offs = (pid * TILES + t) * BLOCK + tl.arange(0, BLOCK)
                tl.store(y_ptr + offs, y, mask=offs < n_elements)
                tlx.barrier_arrive(tlx.local_view(empty, slot))

x = torch.randn(8192, device=DEVICE)
y = torch.empty_like(x)
ew_kernel[(2,)](x, y, 8192, TILES=4, BLOCK=1024, NUM_BUF=2)
"""
TLX_STORE_LINE = 22  # cell line of the tl.store in TLX (after the %%tlx line)
