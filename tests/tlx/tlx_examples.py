"""Four TLX-style kernels with host wrappers and torch references (compile-only tests and GPU checks).

1. ``ew_pipeline``: a two-role elementwise pipeline through a shared-memory ring guarded by mbarriers.
2. ``tma_gemm``: a single-role pipelined TMA GEMM (wgmma, masked pointer-store epilogue).
3. ``ws_gemm``: a warp-specialized GEMM, one TMA producer task and two replicated wgmma consumer
   warpgroups, TMA-store epilogue.
4. ``cpasync_gemm``: a GEMM whose tiles arrive by cp.async (``async_load`` + commit/wait groups).

TMA needs 16-byte aligned row strides: the wrappers copy operands into storage whose row stride is
padded to a multiple of 8 elements (the logical shape is unchanged, TMA zero-fills / clips the rest).
"""

from __future__ import annotations

from typing import Any

import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

from workbench import tlx

# ------------------------------------------------------------------------------------------------
# 1. elementwise pipeline: producer loads tiles into a ring, consumer computes and stores
# ------------------------------------------------------------------------------------------------


@tlx.jit
def ew_pipeline_kernel(
    x_ptr, y_ptr, n_elements, scale, TILES_PER_PROG: tl.constexpr, BLOCK: tl.constexpr, NUM_BUF: tl.constexpr
):
    pid = tl.program_id(0)
    first_tile = pid * TILES_PER_PROG
    bufs = tlx.local_alloc((BLOCK,), tl.float32, NUM_BUF)
    full = tlx.alloc_barriers(NUM_BUF, arrive_count=1)
    empty = tlx.alloc_barriers(NUM_BUF, arrive_count=1)
    with tlx.async_tasks():
        with tlx.async_task("default"):  # producer
            for t in range(TILES_PER_PROG):
                slot, phase = tlx.get_bufidx_phase(t, NUM_BUF)
                tlx.barrier_wait(empty[slot], phase ^ 1)
                offs = (first_tile + t) * BLOCK + tl.arange(0, BLOCK)
                x = tl.load(x_ptr + offs, mask=offs < n_elements, other=0.0)
                tlx.local_store(bufs[slot], x.to(tl.float32))
                tlx.barrier_arrive(full[slot])
        with tlx.async_task(num_warps=4):  # consumer
            for t in range(TILES_PER_PROG):
                slot, phase = tlx.get_bufidx_phase(t, NUM_BUF)
                tlx.barrier_wait(full[slot], phase)
                x = tlx.local_load(bufs[slot])
                y = x * scale + 1.0
                offs = (first_tile + t) * BLOCK + tl.arange(0, BLOCK)
                tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=offs < n_elements)
                tlx.barrier_arrive(empty[slot])


EW_META = dict(TILES_PER_PROG=4, BLOCK=1024, NUM_BUF=2)


def ew_pipeline(x, scale: float = 2.0, y=None, **meta):
    meta = {**EW_META, **meta}
    n = x.numel()
    y = y if y is not None else x.new_empty(x.shape)
    per_prog = meta["TILES_PER_PROG"] * meta["BLOCK"]
    grid = (triton.cdiv(n, per_prog),)
    ew_pipeline_kernel[grid](x, y, n, scale, num_warps=4, **meta)
    return y


def ew_reference(x, scale: float = 2.0):
    return (x.float() * scale + 1.0).to(x.dtype)


def ew_example_args(n: int = 4096, device: str = "cpu", dtype=None):
    import torch

    dtype = dtype or torch.bfloat16
    x = torch.empty(n, dtype=dtype, device=device)
    y = torch.empty(n, dtype=dtype, device=device)
    return (x, y, n, 2.0), dict(EW_META, num_warps=4)


# ------------------------------------------------------------------------------------------------
# helpers: TMA-ready storage
# ------------------------------------------------------------------------------------------------


def tma_ready(t, fill=None):
    """A view of ``t`` (2-D) whose row stride is padded to 16 bytes, as TMA requires."""
    import torch

    rows, cols = t.shape
    per16 = 16 // t.element_size()
    padded = -(-cols // per16) * per16
    if t.stride(1) == 1 and t.stride(0) % per16 == 0:
        return t
    store = torch.empty(rows, padded, dtype=t.dtype, device=t.device)
    if fill is not None:
        store.fill_(fill)
    view = store[:, :cols]
    view.copy_(t)
    return view


def padded_rows(t, multiple: int = 16):
    """A view of ``t`` (2-D) in zero-padded storage whose row length is a multiple of ``multiple`` elements."""
    import torch

    rows, cols = t.shape
    padded = -(-cols // multiple) * multiple
    store = torch.zeros(rows, padded, dtype=t.dtype, device=t.device)
    view = store[:, :cols]
    view.copy_(t)
    return view


def empty_tma(rows, cols, dtype, device, fill=float("nan")):
    import torch

    per16 = 16 // torch.empty((), dtype=dtype).element_size()
    padded = -(-cols // per16) * per16
    store = torch.full((rows, padded), fill, dtype=dtype, device=device)
    return store[:, :cols]


def gemm_reference(a, b):
    return (a.float() @ b.float()).to(a.dtype)


# ------------------------------------------------------------------------------------------------
# 2. single-role pipelined TMA GEMM
# ------------------------------------------------------------------------------------------------


@tlx.jit
def tma_gemm_kernel(
    a_desc,
    b_desc,
    c_ptr,
    M,
    N,
    K,
    stride_cm,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
    NUM_STAGES: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    off_m = pid_m * BM
    off_n = pid_n * BN
    a_bufs = tlx.local_alloc((BM, BK), tl.bfloat16, NUM_STAGES)
    b_bufs = tlx.local_alloc((BK, BN), tl.bfloat16, NUM_STAGES)
    ready = tlx.alloc_barriers(NUM_STAGES, arrive_count=1)
    num_k = tl.cdiv(K, BK)
    # prologue: fill NUM_STAGES - 1 slots
    for i in tl.static_range(NUM_STAGES - 1):
        if i < num_k:
            tlx.barrier_expect_bytes(ready[i], BM * BK * 2 + BK * BN * 2)
            tlx.async_descriptor_load(a_desc, a_bufs[i], [off_m, i * BK], ready[i])
            tlx.async_descriptor_load(b_desc, b_bufs[i], [i * BK, off_n], ready[i])
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(num_k):
        slot, phase = tlx.get_bufidx_phase(k, NUM_STAGES)
        tlx.barrier_wait(ready[slot], phase)
        acc = tlx.async_dot(a_bufs[slot], b_bufs[slot], acc)
        # at most one wgmma in flight: the one of iteration k-1 is done, its slot can be refilled
        acc = tlx.async_dot_wait(1, acc)
        nxt = k + NUM_STAGES - 1
        if nxt < num_k:
            ns = nxt % NUM_STAGES
            tlx.barrier_expect_bytes(ready[ns], BM * BK * 2 + BK * BN * 2)
            tlx.async_descriptor_load(a_desc, a_bufs[ns], [off_m, nxt * BK], ready[ns])
            tlx.async_descriptor_load(b_desc, b_bufs[ns], [nxt * BK, off_n], ready[ns])
    acc = tlx.async_dot_wait(0, acc)
    c = acc.to(tl.bfloat16)
    offs_m = off_m + tl.arange(0, BM)
    offs_n = off_n + tl.arange(0, BN)
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :]
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(c_ptrs, c, mask=mask)


TMA_META = dict(BM=128, BN=128, BK=64, NUM_STAGES=3)


def _gemm_descs(a, b, BM, BN, BK):
    a_t, b_t = tma_ready(a), tma_ready(b)
    a_desc = TensorDescriptor(a_t, list(a_t.shape), list(a_t.stride()), [BM, BK])
    b_desc = TensorDescriptor(b_t, list(b_t.shape), list(b_t.stride()), [BK, BN])
    return a_desc, b_desc


def tma_gemm(a, b, c=None, **meta):
    import torch

    meta = {**TMA_META, **meta}
    M, K = a.shape
    N = b.shape[1]
    c = c if c is not None else torch.full((M, N), float("nan"), dtype=a.dtype, device=a.device)
    a_desc, b_desc = _gemm_descs(a, b, meta["BM"], meta["BN"], meta["BK"])
    grid = (triton.cdiv(M, meta["BM"]), triton.cdiv(N, meta["BN"]))
    tma_gemm_kernel[grid](a_desc, b_desc, c, M, N, K, c.stride(0), num_warps=4, **meta)
    return c


def tma_example_args(M=256, N=256, K=192, device="cpu"):
    import torch

    meta = TMA_META
    a = torch.empty(M, K, dtype=torch.bfloat16, device=device)
    b = torch.empty(K, N, dtype=torch.bfloat16, device=device)
    c = torch.empty(M, N, dtype=torch.bfloat16, device=device)
    a_desc, b_desc = _gemm_descs(a, b, meta["BM"], meta["BN"], meta["BK"])
    return (a_desc, b_desc, c, M, N, K, c.stride(0)), dict(meta, num_warps=4)


# ------------------------------------------------------------------------------------------------
# 3. warp-specialized GEMM: TMA producer + 2 replicated wgmma consumer warpgroups
# ------------------------------------------------------------------------------------------------


@tlx.jit
def ws_gemm_kernel(
    a_desc,
    b_desc,
    c_desc,
    M,
    N,
    K,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
    NUM_STAGES: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    off_m = pid_m * BM
    off_n = pid_n * BN
    HALF: tl.constexpr = BM // 2
    a_bufs = tlx.local_alloc((HALF, BK), tl.bfloat16, 2 * NUM_STAGES)
    b_bufs = tlx.local_alloc((BK, BN), tl.bfloat16, NUM_STAGES)
    c_bufs = tlx.local_alloc((HALF, BN), tl.bfloat16, 2)
    full = tlx.alloc_barriers(NUM_STAGES, arrive_count=1)
    empty = tlx.alloc_barriers(NUM_STAGES, arrive_count=2)
    num_k = tl.cdiv(K, BK)
    with tlx.async_tasks():
        with tlx.async_task("default"):  # producer: TMA loads into the ring
            for k in range(num_k):
                slot, phase = tlx.get_bufidx_phase(k, NUM_STAGES)
                tlx.barrier_wait(empty[slot], phase ^ 1)
                tlx.barrier_expect_bytes(full[slot], 2 * HALF * BK * 2 + BK * BN * 2)
                tlx.async_descriptor_load(a_desc, a_bufs[slot], [off_m, k * BK], full[slot])
                tlx.async_descriptor_load(a_desc, a_bufs[NUM_STAGES + slot], [off_m + HALF, k * BK], full[slot])
                tlx.async_descriptor_load(b_desc, b_bufs[slot], [k * BK, off_n], full[slot])
        with tlx.async_task(num_warps=4, num_regs=232, replicate=2):  # consumers, one per half of the tile
            cid = tlx.async_task_replica_id()
            acc = tl.zeros((HALF, BN), dtype=tl.float32)
            for k in range(num_k):
                slot, phase = tlx.get_bufidx_phase(k, NUM_STAGES)
                tlx.barrier_wait(full[slot], phase)
                acc = tlx.async_dot(a_bufs[cid * NUM_STAGES + slot], b_bufs[slot], acc)
                acc = tlx.async_dot_wait(0, acc)
                tlx.barrier_arrive(empty[slot])
            tlx.local_store(c_bufs[cid], acc.to(tl.bfloat16))
            tlx.fence_async_shared()
            tlx.async_descriptor_store(c_desc, c_bufs[cid], [off_m + cid * HALF, off_n])
            tlx.async_descriptor_store_wait(0)


WS_META = dict(BM=128, BN=128, BK=64, NUM_STAGES=3)


def _ws_descs(a, b, c, BM, BN, BK):
    a_t, b_t = tma_ready(a), tma_ready(b)
    a_desc = TensorDescriptor(a_t, list(a_t.shape), list(a_t.stride()), [BM // 2, BK])
    b_desc = TensorDescriptor(b_t, list(b_t.shape), list(b_t.stride()), [BK, BN])
    c_desc = TensorDescriptor(c, list(c.shape), list(c.stride()), [BM // 2, BN])
    return a_desc, b_desc, c_desc


def ws_gemm(a, b, c=None, **meta):
    meta = {**WS_META, **meta}
    M, K = a.shape
    N = b.shape[1]
    c = c if c is not None else empty_tma(M, N, a.dtype, a.device)
    a_desc, b_desc, c_desc = _ws_descs(a, b, c, meta["BM"], meta["BN"], meta["BK"])
    grid = (triton.cdiv(M, meta["BM"]), triton.cdiv(N, meta["BN"]))
    ws_gemm_kernel[grid](a_desc, b_desc, c_desc, M, N, K, num_warps=4, **meta)
    return c


def ws_example_args(M=256, N=256, K=192, device="cpu"):
    import torch

    meta = WS_META
    a = torch.empty(M, K, dtype=torch.bfloat16, device=device)
    b = torch.empty(K, N, dtype=torch.bfloat16, device=device)
    c = empty_tma(M, N, torch.bfloat16, device, fill=0.0)
    a_desc, b_desc, c_desc = _ws_descs(a, b, c, meta["BM"], meta["BN"], meta["BK"])
    return (a_desc, b_desc, c_desc, M, N, K), dict(meta, num_warps=4)


# ------------------------------------------------------------------------------------------------
# 4. cp.async GEMM: masked pointer tiles by async_load, commit/wait groups, wgmma from shared memory
# ------------------------------------------------------------------------------------------------


@tlx.jit
def cpasync_gemm_kernel(
    a_ptr,
    b_ptr,
    c_ptr,
    M,
    N,
    K,
    stride_am,
    stride_bk,
    stride_cm,
    BM: tl.constexpr,
    BN: tl.constexpr,
    BK: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BM + tl.arange(0, BM)
    offs_n = pid_n * BN + tl.arange(0, BN)
    offs_k = tl.arange(0, BK)
    a_bufs = tlx.local_alloc((BM, BK), tl.bfloat16, 2)
    b_bufs = tlx.local_alloc((BK, BN), tl.bfloat16, 2)
    num_k = tl.cdiv(K, BK)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :]
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :]
    # Inner-dim masks use the padded row length (a multiple of 16 elements, zero-filled by the host) so
    # cp.async keeps 16-byte transfers; the K tail of A reads those zeros, rows beyond M / K are masked.
    a_mask = (offs_m[:, None] < M) & (offs_k[None, :] < stride_am)
    b_mask = (offs_k[:, None] < K) & (offs_n[None, :] < stride_bk)
    tok_a = tlx.async_load(a_ptrs, a_bufs[0], mask=a_mask)
    tok_b = tlx.async_load(b_ptrs, b_bufs[0], mask=b_mask)
    tlx.async_load_commit_group([tok_a, tok_b])
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(num_k):
        slot = k % 2
        nxt = k + 1
        if nxt < num_k:
            ns = nxt % 2
            k_off = nxt * BK
            a_mask_n = (offs_m[:, None] < M) & ((k_off + offs_k)[None, :] < stride_am)
            b_mask_n = ((k_off + offs_k)[:, None] < K) & (offs_n[None, :] < stride_bk)
            tlx.async_load(a_ptrs + k_off, a_bufs[ns], mask=a_mask_n)
            tlx.async_load(b_ptrs + k_off * stride_bk, b_bufs[ns], mask=b_mask_n)
        tlx.async_load_commit_group()
        tlx.async_load_wait_group(1)  # the group of tile k has landed
        tlx.fence_async_shared()
        acc = tlx.async_dot(a_bufs[slot], b_bufs[slot], acc)
        acc = tlx.async_dot_wait(0, acc)
    c = acc.to(tl.bfloat16)
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :]
    tl.store(c_ptrs, c, mask=(offs_m[:, None] < M) & (offs_n[None, :] < N))


CP_META = dict(BM=128, BN=128, BK=32)


def cpasync_gemm(a, b, c=None, **meta):
    import torch

    meta = {**CP_META, **meta}
    M, K = a.shape
    N = b.shape[1]
    # cp.async moves 16 bytes per thread: rows padded to 16 elements, padding zero-filled
    a = padded_rows(a, 16)
    b = padded_rows(b, 16)
    c = c if c is not None else torch.full((M, N), float("nan"), dtype=a.dtype, device=a.device)
    grid = (triton.cdiv(M, meta["BM"]), triton.cdiv(N, meta["BN"]))
    cpasync_gemm_kernel[grid](a, b, c, M, N, K, a.stride(0), b.stride(0), c.stride(0), num_warps=4, **meta)
    return c


def cpasync_example_args(M=256, N=256, K=192, device="cpu"):
    import torch

    a = padded_rows(torch.empty(M, K, dtype=torch.bfloat16, device=device))
    b = padded_rows(torch.empty(K, N, dtype=torch.bfloat16, device=device))
    c = torch.empty(M, N, dtype=torch.bfloat16, device=device)
    return (a, b, c, M, N, K, a.stride(0), b.stride(0), c.stride(0)), dict(CP_META, num_warps=4)


# name -> (kernel, example_args, host wrapper, reference, kind)
EXAMPLES: dict[str, dict[str, Any]] = {
    "ew_pipeline": dict(
        kernel=ew_pipeline_kernel,
        example_args=ew_example_args,
        run=ew_pipeline,
        reference=ew_reference,
        kind="elementwise",
    ),
    "tma_gemm": dict(
        kernel=tma_gemm_kernel,
        example_args=tma_example_args,
        run=tma_gemm,
        reference=gemm_reference,
        kind="gemm",
    ),
    "ws_gemm": dict(
        kernel=ws_gemm_kernel,
        example_args=ws_example_args,
        run=ws_gemm,
        reference=gemm_reference,
        kind="gemm",
    ),
    "cpasync_gemm": dict(
        kernel=cpasync_gemm_kernel,
        example_args=cpasync_example_args,
        run=cpasync_gemm,
        reference=gemm_reference,
        kind="gemm",
    ),
}
