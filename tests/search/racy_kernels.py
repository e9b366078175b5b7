"""The racy set of issue 35: six kernels whose synchronisation is wrong in a way plain runs may not show, each with
the correct kernel beside it, as ``Case`` rows that say how to launch and judge them. ``--stress``
(``workbench.stress``) is measured on them on a GPU (tests/search/test_races_gpu.py); their delayed builds compile
on a CPU (tests/search/test_racy_kernels.py).

1. ``ring_sum`` BUG 3: the consumer releases its slot before it reads it (write after read);
2. ``ring_sum`` BUG 4: the consumer never waits for the data (read before the copy lands);
3. ``ring_sum`` BUG 5: the producer expects half the bytes its copy brings (the wait passes half-way);
4. ``mma_pipe`` BUG 1: the consumer (two warpgroups, a 128x256x64 dot: ~1000 tensor-core cycles against a 48 KiB
   copy) releases the slot of the dot it just issued before waiting for the one before it, so the producer's next
   copy may land while that dot still reads. (tests/check/ring_kernels.py's ``mma_ring`` has the bug with a 64x64x64
   dot that ends before any copy lands: 0 of 50 runs differed on an H100, nor did a 64x256x128 dot released after
   ``async_dot_wait(1)``: a copy per dot that takes as long as the dot);
5. ``handoff`` BUG 1: a named-barrier hand-off counted for one warpgroup, not both (the reader never waits);
6. ``store_reuse`` BUG 1: the staging buffer of a TMA store rewritten before the store has read it (no
   ``async_descriptor_store_wait`` before the next tile's ``local_store``).
uTLX builds no cross-CTA kernel (``remote_view`` is not implemented), so the issue's cross-CTA case is not here.
``staged_store`` BUG 1 (no proxy fence between the threads' shared-memory stores and the TMA store that reads them)
is a real bug that did not show on an H100 in 150 delayed runs (2026-12-06): it stays in ``unshown()``, compiled on a
CPU, not in the set a GPU run stresses."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import triton
import triton.language as tl
import triton.language.extra.tlx as tlx
from search_kernels import ring_sum


@triton.jit
def handoff(x_ptr, out_ptr, ITERS: tl.constexpr, BLOCK: tl.constexpr, BUG: tl.constexpr = 0):
    """The default task writes a shared buffer and hands it to the other task through named barrier 9; the other
    reads it and hands it back through barrier 10. Each barrier counts both warpgroups (256 threads)."""
    buf = tlx.local_alloc((BLOCK,), tl.float32, 1)
    with tlx.async_tasks():
        with tlx.async_task("default"):
            for i in range(ITERS):
                if i > 0:
                    tlx.named_barrier_wait(10, 256)  # the reader is done with the previous block
                tlx.local_store(buf[0], tl.load(x_ptr + i * BLOCK + tl.arange(0, BLOCK)))
                if BUG:
                    tlx.named_barrier_arrive(9, 128)  # BUG 1: counts this warpgroup only
                else:
                    tlx.named_barrier_arrive(9, 256)
        with tlx.async_task(num_warps=4):
            for i in range(ITERS):
                if BUG:
                    tlx.named_barrier_wait(9, 128)  # BUG 1: passes without the writer
                else:
                    tlx.named_barrier_wait(9, 256)
                v = tlx.local_load(buf[0])
                tl.store(out_ptr + i * BLOCK + tl.arange(0, BLOCK), v)
                if i + 1 < ITERS:
                    tlx.named_barrier_arrive(10, 256)


@triton.jit
def staged_store(x_ptr, out_desc, ITERS: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BUG: tl.constexpr = 0):
    """Each tile is stored by the threads into shared memory, then written out by a TMA store, which reads shared
    memory through the async proxy: the threads' stores must be fenced for it."""
    buf = tlx.local_alloc((BM, BN), tl.float16, 1)
    offs = tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]
    for i in range(ITERS):
        tlx.local_store(buf[0], tl.load(x_ptr + i * BM * BN + offs))
        if not BUG:  # BUG 1: no fence between the generic-proxy stores and the async-proxy read
            tlx.fence_async_shared()
        tlx.async_descriptor_store(out_desc, buf[0], [i * BM, 0])
        tlx.async_descriptor_store_wait(0)


@triton.jit
def store_reuse(x_ptr, out_desc, ITERS: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BUG: tl.constexpr = 0):
    """Output tile i is x * (i + 1), staged in one shared buffer and written out by a TMA store: the buffer may be
    rewritten only once the store has read it. The next tile comes from registers at once (no load between), so a
    rewrite that does not wait lands while the store still reads."""
    buf = tlx.local_alloc((BM, BN), tl.float16, 1)
    offs = tl.arange(0, BM)[:, None] * BN + tl.arange(0, BN)[None, :]
    x = tl.load(x_ptr + offs).to(tl.float32)
    for i in range(ITERS):
        tlx.local_store(buf[0], (x * (i + 1)).to(tl.float16))
        tlx.fence_async_shared()
        tlx.async_descriptor_store(out_desc, buf[0], [i * BM, 0])
        if not BUG:  # BUG 1: the next tile's local_store does not wait for this store's read
            tlx.async_descriptor_store_wait(0)
    tlx.async_descriptor_store_wait(0)


@triton.jit
def mma_pipe(a_desc, b_desc, c_desc, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr,
             STAGES: tl.constexpr, BUG: tl.constexpr = 0):
    """A GEMM ring whose two consumer warpgroups (each half of the BM rows, as ws_cooperative's) keep one wgmma in
    flight: after ``async_dot_wait(1)`` the previous dot is done and its slot may be released (each consumer
    arrives once); the dot just issued still reads its own (and may not have started)."""
    HALF: tl.constexpr = BM // 2
    a = tlx.local_alloc((HALF, BK), tl.float16, 2 * STAGES)  # [s] top half, [STAGES + s] bottom half
    b = tlx.local_alloc((BK, BN), tl.float16, STAGES)
    full = tlx.alloc_barriers(STAGES, arrive_count=1)
    empty = tlx.alloc_barriers(STAGES, arrive_count=2)
    with tlx.async_tasks():
        with tlx.async_task("default"):
            for k in range(0, K // BK):
                s = k % STAGES
                tlx.barrier_wait(empty[s], ((k // STAGES) & 1) ^ 1)
                tlx.barrier_expect_bytes(full[s], (BM * BK + BK * BN) * 2)
                tlx.async_descriptor_load(a_desc, a[s], [0, k * BK], full[s])
                tlx.async_descriptor_load(a_desc, a[STAGES + s], [HALF, k * BK], full[s])
                tlx.async_descriptor_load(b_desc, b[s], [k * BK, 0], full[s])
        with tlx.async_task(num_warps=4, replicate=2):
            cid = tlx.async_task_replica_id()
            acc = tl.zeros([HALF, BN], tl.float32)
            for k in tl.range(0, K // BK, num_stages=0):  # no compiler pipelining: the waits are ours
                s = k % STAGES
                tlx.barrier_wait(full[s], (k // STAGES) & 1)
                acc = tlx.async_dot(a[cid * STAGES + s], b[s], acc)
                if BUG:
                    tlx.barrier_arrive(empty[s])  # BUG 1: the slot of the dot just issued, maybe not yet started
                acc = tlx.async_dot_wait(1, acc)  # the previous dot is done; this one may still read slot s
                if not BUG and k > 0:
                    tlx.barrier_arrive(empty[(k - 1) % STAGES])
            acc = tlx.async_dot_wait(0, acc)
            c_desc.store([cid * HALF, 0], acc.to(tlx.dtype_of(c_desc)))


@dataclass
class Case:
    """One kernel of the set: ``make(device)`` gives the launch's positional arguments, ``reference(*args)`` the
    expected output, ``grid`` the launch grid, ``constexprs`` the kernel's; ``bug`` the value that makes it racy
    (``None``: the kernel is correct as given)."""

    name: str
    what: str
    kernel: Any
    make: Callable[[str], tuple]
    reference: Callable[..., Any]
    constexprs: dict[str, Any]
    grid: tuple[int, ...] = (1,)


K_RING, BM, BK = 4096, 64, 64


def _ring_args(device: str) -> tuple:
    import torch
    from triton.tools.tensor_descriptor import TensorDescriptor

    x = torch.randn(BM, K_RING, dtype=torch.float16, device=device)
    out = torch.empty(BM, BK, dtype=torch.float16, device=device)
    return TensorDescriptor(x, [BM, K_RING], [K_RING, 1], [BM, BK]), out, K_RING


def _ring_expected(d, o, k):
    return d.base.float().reshape(BM, K_RING // BK, BK).sum(1).half()


K_MMA, BM_MMA, BN_MMA, BK_MMA = 4096, 128, 256, 64
BN = 64  # the staged store's tile width


def _mma_args(device: str) -> tuple:
    import torch
    from triton.tools.tensor_descriptor import TensorDescriptor

    a = torch.randn(BM_MMA, K_MMA, dtype=torch.float16, device=device) / 8
    b = torch.randn(K_MMA, BN_MMA, dtype=torch.float16, device=device) / 8
    c = torch.empty(BM_MMA, BN_MMA, dtype=torch.float16, device=device)
    return (TensorDescriptor(a, [BM_MMA, K_MMA], [K_MMA, 1], [BM_MMA // 2, BK_MMA]),
            TensorDescriptor(b, [K_MMA, BN_MMA], [BN_MMA, 1], [BK_MMA, BN_MMA]),
            TensorDescriptor(c, [BM_MMA, BN_MMA], [BN_MMA, 1], [BM_MMA // 2, BN_MMA]), K_MMA)


def _mma_expected(a, b, c, k):
    return (a.base.float() @ b.base.float()).half()


ITERS, BLOCK = 64, 1024
BN_REUSE = 128  # a 64x128 fp16 tile (16 KiB) per TMA store


def _handoff_args(device: str) -> tuple:
    import torch

    return torch.randn(ITERS * BLOCK, device=device), torch.empty(ITERS * BLOCK, device=device)


def _reuse_args(device: str) -> tuple:
    import torch
    from triton.tools.tensor_descriptor import TensorDescriptor

    x = torch.randn(BM * BN_REUSE, dtype=torch.float16, device=device)
    out = torch.empty(ITERS * BM, BN_REUSE, dtype=torch.float16, device=device)
    return x, TensorDescriptor(out, [ITERS * BM, BN_REUSE], [BN_REUSE, 1], [BM, BN_REUSE])


def _reuse_expected(x, d):
    import torch

    steps = torch.arange(1, ITERS + 1, dtype=torch.float32, device=x.device)[:, None, None]
    return (x.float().reshape(1, BM, BN_REUSE) * steps).half().reshape(ITERS * BM, BN_REUSE)  # exact in fp32


def _staged_args(device: str) -> tuple:
    import torch
    from triton.tools.tensor_descriptor import TensorDescriptor

    x = torch.randn(ITERS * BM * BN, dtype=torch.float16, device=device)
    out = torch.empty(ITERS * BM, BN, dtype=torch.float16, device=device)
    return x, TensorDescriptor(out, [ITERS * BM, BN], [BN, 1], [BM, BN])


RING = {"BM": BM, "BK": BK, "STAGES": 3}
MMA = {"BM": BM_MMA, "BN": BN_MMA, "BK": BK_MMA, "STAGES": 3}  # 3 x 48 KiB of slots: the copies keep ahead of the dots


def cases(racy: bool) -> list[Case]:
    """The six racy kernels (``racy=True``), else their correct counterparts (one per kernel)."""
    ring = [("ring-release-before-read", "the slot released before it is read", 3),
            ("ring-no-full-wait", "no wait for the data", 4),
            ("ring-expect-half", "an expect-bytes of half the copy", 5)]
    out = [Case(name, what, ring_sum, _ring_args, _ring_expected, {**RING, "BUG": bug}) for name, what, bug in ring]
    out += [Case("mma-release-before-wait", "the wgmma's slot released before its wait", mma_pipe, _mma_args,
                 _mma_expected, {**MMA, "BUG": 1}),
            Case("named-barrier-miscount", "a hand-off counted for one warpgroup", handoff, _handoff_args,
                 lambda x, o: x, {"ITERS": ITERS, "BLOCK": BLOCK, "BUG": 1}),
            Case("store-buffer-reused-before-its-wait", "a TMA store's buffer rewritten before the store read it",
                 store_reuse, _reuse_args, _reuse_expected, {"ITERS": ITERS, "BM": BM, "BN": BN_REUSE, "BUG": 1})]
    return out if racy else _correct(out)


def unshown(racy: bool) -> list[Case]:
    """Real bugs that no delayed run has shown on Hopper (kept compiled on a CPU, not stressed on a GPU): the TMA
    store without a proxy fence before it (0 of 150 runs on an H100)."""
    out = [Case("store-without-proxy-fence", "no proxy fence before the TMA store", staged_store, _staged_args,
                lambda x, d: x.reshape(ITERS * BM, BN), {"ITERS": ITERS, "BM": BM, "BN": BN, "BUG": 1})]
    return out if racy else _correct(out)


def _correct(out: list[Case]) -> list[Case]:
    """The correct counterpart of each kernel of ``out`` (one ring for the three ring bugs)."""
    correct = []
    for c in out:
        if c.kernel is ring_sum and correct and correct[0].kernel is ring_sum:
            continue  # one correct ring
        fixed = {k: (0 if k == "BUG" else v) for k, v in c.constexprs.items()}
        correct.append(Case(f"{c.kernel.__name__}-correct", "correct", c.kernel, c.make, c.reference, fixed, c.grid))
    return correct
