"""An op (y = 2x + b, float32) with its reference, input maker, correct candidates, buggy ones and adversarial ones:
the test data of ``workbench.evaluate`` (plain Triton kernels: they run in Triton's interpreter on a CPU)."""

from __future__ import annotations

import time

import torch
import triton
import triton.language as tl

BLOCK = 128


def make_inputs(shape, seed, device):
    g = torch.Generator(device="cpu").manual_seed(seed)
    (n,) = shape
    x = torch.randn(n, generator=g).to(device)
    b = torch.randn(n, generator=g).to(device)
    return x, b


def reference(x, b):
    return 2 * x + b


@triton.jit
def axpb_kernel(x_ptr, b_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, 2 * tl.load(x_ptr + offs, mask=m) + tl.load(b_ptr + offs, mask=m), mask=m)


@triton.jit
def axpb_off_by_one_kernel(x_ptr, b_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n - 1  # the last element is never written
    tl.store(y_ptr + offs, 2 * tl.load(x_ptr + offs, mask=m) + tl.load(b_ptr + offs, mask=m), mask=m)


@triton.jit
def axpb_in_place_kernel(x_ptr, b_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(b_ptr + offs, 2 * tl.load(x_ptr + offs, mask=m) + tl.load(b_ptr + offs, mask=m), mask=m)


@triton.jit
def axpb_overrun_kernel(x_ptr, b_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, 2 * tl.load(x_ptr + offs, mask=m) + tl.load(b_ptr + offs, mask=m), mask=m)
    tl.store(x_ptr + n + tl.arange(0, 4), tl.zeros([4], tl.float32))  # past the end of x


@triton.jit
def axpb_block_ptr_kernel(x_ptr, b_ptr, y_ptr, n, BLOCK: tl.constexpr):  # as FlagGems 5.0.2's pointwise code writes
    xb = tl.make_block_ptr(x_ptr, shape=(n,), strides=(1,), offsets=(tl.program_id(0) * BLOCK,),
                           block_shape=(BLOCK,), order=(0,))
    bb = tl.make_block_ptr(b_ptr, shape=(n,), strides=(1,), offsets=(tl.program_id(0) * BLOCK,),
                           block_shape=(BLOCK,), order=(0,))
    yb = tl.make_block_ptr(y_ptr, shape=(n,), strides=(1,), offsets=(tl.program_id(0) * BLOCK,),
                           block_shape=(BLOCK,), order=(0,))
    v = 2 * tl.load(xb, boundary_check=(0,)) + tl.load(bb, boundary_check=(0,))
    tl.store(yb, v.to(yb.type.element_ty), boundary_check=(0,))  # no .type.element_ty on Triton 3.8's block pointers


def _launch(kernel, x, b, y):
    n = x.numel()
    kernel[(triton.cdiv(n, BLOCK),)](x, b, y, n, BLOCK=BLOCK)
    return y


# ---------------------------------------------------------------------------------------------------- correct
def correct(x, b):
    return _launch(axpb_kernel, x, b, torch.empty_like(x))


# ---------------------------------------------------------------------------------------------------- wrong
def off_by_one(x, b):
    return _launch(axpb_off_by_one_kernel, x, b, torch.zeros_like(x))


def writes_nothing(x, b):
    return torch.zeros_like(x)


# ---------------------------------------------------------------------------------------------------- adversarial
def uses_torch(x, b):
    """The reference's own op in torch: no kernel of its own."""
    return torch.add(2 * x, b)


def calls_reference(x, b):
    """Finds the harness's reference among the loaded modules, as an agent's code could."""
    import sys

    _launch(axpb_kernel, x, b, torch.empty_like(x))
    ref = next(m.reference for m in list(sys.modules.values()) if m is not sys.modules[__name__]
               and getattr(getattr(m, "reference", None), "__name__", "") == "reference")
    return ref(x, b)


_CACHE: dict = {}


def caches_by_address(x, b):
    key = (x.data_ptr(), b.data_ptr(), x.shape)
    if key not in _CACHE:
        _CACHE[key] = _launch(axpb_kernel, x, b, torch.empty_like(x))
    else:
        _launch(axpb_kernel, x[:0], b[:0], torch.empty(0))  # a launch, to look busy
    return _CACHE[key]


_LAST: list = []


def caches_by_shape(x, b):
    if _LAST and _LAST[0].shape == x.shape:
        return _LAST[0]
    _LAST[:] = [_launch(axpb_kernel, x, b, torch.empty_like(x))]
    return _LAST[0]


def modifies_input(x, b):
    n = x.numel()
    axpb_in_place_kernel[(triton.cdiv(n, BLOCK),)](x, b, n, BLOCK=BLOCK)
    return b


def writes_past_input(x, b):
    return _launch(axpb_overrun_kernel, x, b, torch.empty_like(x))


def returns_input(x, b):
    _launch(axpb_kernel, x, b, torch.empty_like(x))
    return b


_real_perf = time.perf_counter


def patches_time(x, b):
    time.perf_counter = lambda: _real_perf() * 0.5
    return _launch(axpb_kernel, x, b, torch.empty_like(x))


def patches_torch(x, b):
    torch.add = lambda *a, **k: (time.sleep(0.01), a[0].__add__(a[1]))[1]  # a slow reference would lose
    return _launch(axpb_kernel, x, b, torch.empty_like(x))


# ---------------------------------------------------------------------------------------------------- GPU only
def side_stream(x, b):
    """Launches on a stream of its own and returns at once: the timed stream sees nothing."""
    s = _STREAMS.setdefault(x.device, torch.cuda.Stream(x.device))
    y = torch.empty_like(x)
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(20):
            _launch(axpb_kernel, x, b, y)
    return y


_STREAMS: dict = {}


def returns_freed_memory(x, b):
    """Computes nothing: an uninitialised output that may hold a freed buffer's values (the reference's)."""
    return torch.empty_like(x)


def block_ptr_element_type(x, b):
    """Right on Triton 3.x before 3.8, which gave a block pointer a ``.type.element_ty``: it does not compile here,
    and the row says what to write instead (the workbench's hint)."""
    return _launch(axpb_block_ptr_kernel, x, b, torch.empty_like(x))


_KEPT: dict = {}


def kept_compiled_kernel(x, b):
    """Correct, launched as FlagGems' ``LibEntry`` does after a first call: the ``CompiledKernel`` the JIT returned,
    kept and launched directly (past ``JITFunction.run``); a judge must still count its launches."""
    y = torch.empty_like(x)
    n = x.numel()
    grid = (triton.cdiv(n, BLOCK), 1, 1)
    if x.device not in _KEPT:
        _KEPT[x.device] = axpb_kernel[grid[:1]](x, b, y, n, BLOCK=BLOCK)
    else:
        _KEPT[x.device][grid](x, b, y, n, BLOCK)  # every parameter, as the JIT passes them (constexprs skipped)
    return y
