"""Every place the workbench reaches inside Triton (and torch) rather than through a public hook, in one module.

Triton 3.8 gives no public API for these; each is pinned by ``tests/compile/test_triton_reach.py``
against the installed (exactly pinned) Triton, so an upgrade fails one test here instead of
misbehaving elsewhere.

- ``jit_file_line``: where a ``JITFunction`` was defined (``file_name``/``def_file_line_number``).
- ``specialize``: the JIT's own argument binder and packer (``create_function_from_signature`` and
  ``JITFunction._pack_args``), so a compile sees exactly the specialization a launch would.
- ``warp_groups``: the register budgets Triton gives each ``ttg.warp_specialize`` partition, by
  running its ``allocate-warp-groups`` pass on a copy of the final TTGIR (the attribute it writes,
  ``actualRegisters``, exists only inside the LLIR lowering otherwise).
- ``active_driver``: a stand-in for ``triton.runtime.driver.active`` for the length of a block, then
  exactly what was there before (``DriverConfig._active``: ``reset_active()`` raises with no GPU).
- ``jit_options``: what ``triton.jit`` was given for a ``JITFunction`` (``_repr`` among them), so that
  another process can build the same kernel again (``workbench.compile.portable``).
- ``autotuner_key``: the key under which ``Autotuner.run`` caches its choice for a launch's arguments, so a
  winner found elsewhere can be fixed on the autotuner (``workbench.search.autotune``).
- ``linear_layouts``: Triton's own linear layout of a TTGIR type's layout (``toLinearLayout`` in C++, bound
  for Gluon as ``GluonOpBuilder.to_linear_layout``), read through a module parsed from the TTGIR's
  attribute declarations.
- ``proton_instrumentation``: Proton's ``InstrumentationHook`` activated without a session (the timeline's
  compile-only and timed instrumented builds), with a stand-in driver for its device questions when no GPU
  answers them, and ``profile_allocator`` (``triton.runtime._allocation``) for the buffer such a build writes.
- ``parse_in_context``: TTGIR text parsed into a stage's own MLIR context (the timeline's scope insertion).
- ``gluon_source_class``: Gluon's ``GluonASTSource`` (``triton.experimental.gluon._runtime``).
- torch: ``storage_id`` (a storage's ``_cdata``, for the isolated worker's protocol), ``scaled_mm``
  (``torch._scaled_mm``, the fp8 GEMM of the measured ceilings), ``dispatch_mode`` (``TorchDispatchMode``: the
  aten ops a candidate runs, for the evaluation's guards) and ``load_dynamo`` (``torch._dynamo`` rebinds
  ``torch.manual_seed`` when it loads: the evaluation's watch of torch starts after that).
"""

from __future__ import annotations

import contextlib
import math
import re
from collections.abc import Iterator
from typing import Any

from workbench.ir.mlir import read_type


def module_handle(kernel: Any) -> int:
    """The CUmodule of a loaded ``CompiledKernel`` (Triton loads it on first use: ``_init_handles``)."""
    kernel._init_handles()
    return int(kernel.module)


def jit_file_line(fn: Any) -> tuple[str, int]:
    """(file, first line of the decorated function) of a ``JITFunction``."""
    return fn.file_name, fn.def_file_line_number


def specialize(fn: Any, backend: Any, args: tuple, kwargs: dict[str, Any]) -> tuple[Any, dict, dict, dict]:
    """(options, signature, constexprs, attrs) exactly as ``JITFunction.run`` computes them."""
    from triton import knobs
    from triton.runtime.jit import create_function_from_signature

    binder = create_function_from_signature(fn.signature, fn.params, backend)
    bound_args, specialization, options = binder(*args, **kwargs)
    hook = knobs.runtime.add_stages_inspection_hook
    if hook is not None:
        # JITFunction.run appends this entry (a string, as Triton 3.8 writes it) when a stages hook is installed
        # (uTLX always installs one); _pack_args turns it into an extra attrs path, which is part of the cache
        # key: without it the JIT's compile after ours misses the cache and compiles the kernel again.
        specialization.append(f'("custom_pipeline", {hook()[1]})')
    return fn._pack_args(backend, kwargs, bound_args, specialization, options)


_WS_ATTRS = re.compile(r"ttg\.warp_specialize\(.*?\)\s+attributes\s*\{([^}]*)\}")
_ARRAY = re.compile(r"(\w+) = array<i32(?::\s*([-\d,\s]*))?>")


def warm_cache_key() -> None:
    """Compute once, in this process, the hash of Triton's own installation that every compile's cache key starts
    with (``triton.runtime.cache.triton_key``, memoised; 0.3 s over libtriton's 190 MB): a forked compile child
    (``workbench.compile.child``) then inherits it instead of hashing again, and so does the compile that follows."""
    from triton.runtime.cache import triton_key

    triton_key()


def warp_groups(ttgir: str, gpu_target: Any) -> list[dict[str, list[int]]]:
    """Per ``ttg.warp_specialize`` op: ``actualRegisters`` (default task first), ``requestedRegisters``
    and ``warpGroupStartIds``, as Triton's allocate-warp-groups pass computes them. Empty when the
    module has no warp specialization or cannot be re-parsed."""
    if "ttg.warp_specialize" not in ttgir:
        return []
    from triton._C.libtriton import ir, passes

    try:
        ctx, mod = _parse_module(ttgir, gpu_target)
        pm = ir.pass_manager(ctx)
        passes.ttgpuir.add_allocate_warp_groups(pm, False)
        pm.run(mod, "allocate_warp_groups")
        text = str(mod)
    except Exception:
        return []
    out = []
    for m in _WS_ATTRS.finditer(text):
        arrays = {name: [int(x) for x in (vals or "").replace(" ", "").split(",") if x]
                  for name, vals in _ARRAY.findall(m.group(1))}
        out.append(arrays)
    return out


def _parse_module(text: str, gpu_target: Any) -> tuple[Any, Any]:
    """(context, module) of TTGIR ``text`` parsed with Triton's and the target's dialects; RuntimeError when
    MLIR rejects it."""
    from triton._C.libtriton import ir
    from triton.compiler import make_backend

    ctx = ir.context()
    ir.load_dialects(ctx)
    make_backend(gpu_target).load_dialects(ctx)
    return ctx, parse_in_context(text, ctx)


def linear_layouts(declarations: str, types: list[tuple[str, list[int]]], gpu_target: Any) -> list[dict[str, Any]]:
    """Triton's linear layout of each TTGIR type in ``types`` (its text, ``tensor<64x128xf32, #mma>`` or
    ``!ttg.memdesc<8x64x64xbf16, #shared, #smem, mutable>``, and its shape), its aliases defined by
    ``declarations`` (the TTGIR's ``#alias = #ttg....`` lines). Per type: ``{"register", "lane", "warp",
    "block"}`` (one basis per input bit) for a distributed layout, ``{"offset", "block"}`` for a shared one,
    both with the ``shape`` they cover (a memdesc's last dims: one buffer of its ring), or ``{"reason"}``
    where there is none."""
    from triton._C.libtriton import gluon_ir

    args = ", ".join(f"%a{i}: {t}" for i, (t, _) in enumerate(types))
    text = f"{declarations}\nmodule {{\n  tt.func @layouts({args}) {{\n    tt.return\n  }}\n}}\n"
    try:
        ctx, mod = _parse_module(text, gpu_target)
    except RuntimeError as e:
        return [{"reason": f"Triton could not read the layout: {str(e).splitlines()[0]}"}] * len(types)
    builder = gluon_ir.GluonOpBuilder(ctx)
    fn = mod.get_function("layouts")
    # a memdesc's shared layout covers the allocation it views, not the view: a transposed 64-byte-swizzled
    # 16x64 view of a 32x64 buffer, drawn at 16x64, aborted the process in Triton's getTMABlockShape (fla-core)
    return [_linear_of(builder, fn.args(i), t.startswith("!ttg.memdesc"),
                       read_type(t).alloc_shape if t.startswith("!ttg.memdesc") else list(shape))
            for i, (t, shape) in enumerate(types)]


def _linear_of(builder: Any, value: Any, memdesc: bool, shape: list[int]) -> dict[str, Any]:
    from triton.experimental.gluon.language._layouts import DistributedLayout, SharedLayout

    # the getter must match the type: the other one casts blindly and crashes the process
    layout = builder.get_gluon_layout_from_memdesc(value) if memdesc else builder.get_gluon_layout_from_tensor(value)
    if not isinstance(layout, (DistributedLayout, SharedLayout)):
        return {"reason": f"no drawing for {type(layout).__name__} (tensor memory) yet"}
    rank = _layout_rank(layout)
    # a rank that disagrees with the shape fails an assertion in C++ (an abort, not an exception)
    if rank is None or rank > len(shape) or (rank != len(shape) and not memdesc):
        return {"reason": f"{type(layout).__name__} of rank {rank} does not fit shape {shape}"}
    shape = shape[len(shape) - rank:]
    if isinstance(layout, SharedLayout) and math.prod(shape) == 1:
        return {"shape": shape, "offset": [], "block": []}  # Gluon's SharedLinearLayout refuses no bases
    try:
        ll = builder.to_linear_layout(layout._to_ir(builder), shape)
    except Exception as e:  # what Triton's binding raises is not documented
        return {"reason": f"Triton has no linear layout for it: {e}"}
    if isinstance(layout, SharedLayout):
        return {"shape": shape, "offset": ll.offset_bases, "block": ll.block_bases}
    return {"shape": shape, "register": ll.reg_bases, "lane": ll.lane_bases, "warp": ll.warp_bases,
            "block": ll.block_bases}


def _layout_rank(layout: Any) -> int | None:
    """Rank of a Gluon layout object: distributed ones say it; shared ones hold it in a field, an order or
    their bases."""
    for get in (lambda: layout.rank, lambda: len(layout.order), lambda: len(layout.offset_bases[0])):
        try:
            rank = get()
        except (AttributeError, IndexError, ValueError, TypeError):
            continue
        if isinstance(rank, int):
            return rank
    return None


@contextlib.contextmanager
def active_driver(stand_in: Any) -> Iterator[Any]:
    """Make ``stand_in`` Triton's active driver inside the block (code that asks
    ``triton.runtime.driver.active`` for its target or torch device gets it), then restore the previous
    one as it was: ``None`` stays ``None`` (resolved lazily later), since ``reset_active()`` would build
    the default driver, which raises on a machine with no GPU."""
    from triton.runtime import driver

    previous = driver._active
    driver.set_active(stand_in)
    try:
        yield stand_in
    finally:
        driver._active = previous


_JIT_OPTIONS = ("version", "do_not_specialize", "do_not_specialize_on_alignment", "debug", "noinline",
                "launch_metadata")


def jit_options(fn: Any) -> dict[str, Any]:
    """The keyword arguments ``JITFunction(fn.fn, **options)`` needs to build ``fn`` again."""
    out = {k: getattr(fn, k) for k in _JIT_OPTIONS}
    out["repr"] = fn._repr
    return out


def autotuner_key(tuner: Any, args: tuple, kwargs: dict[str, Any]) -> tuple:
    """``Autotuner.run``'s cache key: the values of its ``key`` arguments, then the dtype of every argument
    that has one, in argument order."""
    all_args = {**dict(zip(tuner.arg_names, args)), **kwargs}
    named = {k: v for k, v in all_args.items() if k in tuner.arg_names}
    key = [named[k] for k in tuner.keys if k in named]
    key += [str(v.dtype) for v in named.values() if hasattr(v, "dtype")]
    return tuple(key)


# ---------------------------------------------------------------------- the timeline's reaches (Proton, MLIR)
def parse_in_context(text: str, context: Any) -> Any:
    """TTGIR ``text`` parsed as a module of an MLIR ``context`` that exists (a stage's own, inside Triton's stages
    hook, where the module goes on to the next stage; or a new one, ``_parse_module``); RuntimeError when MLIR
    rejects it."""
    import os
    import tempfile

    from triton._C.libtriton import ir

    fd, path = tempfile.mkstemp(suffix=".ttgir", prefix="tlx-workbench-")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        module = ir.parse_mlir_module(path, context)
    finally:
        os.unlink(path)
    module.context = context
    return module


class _ProtonDevice:
    """What Proton's ``InstrumentationHook.activate``/``deactivate`` ask the active driver: the backend, the
    current device and its shared memory (the size Proton's shared buffer is planned against)."""

    def __init__(self, max_shared_mem: int, arch: int = 90) -> None:
        self.arch, self.max_shared_mem = arch, max_shared_mem
        self.utils = self

    def get_current_target(self) -> Any:
        from triton.backends.compiler import GPUTarget

        return GPUTarget("cuda", self.arch, 32)

    def get_current_device(self) -> int:
        return 0

    def get_device_properties(self, device: int) -> dict[str, Any]:
        return {"max_shared_mem": self.max_shared_mem}


@contextlib.contextmanager
def proton_instrumentation(mode: Any, max_shared_mem: int | None = None) -> Iterator[str]:
    """Proton's instrumentation passes on for the compiles inside (``mode``: a ``triton.profiler.mode`` object),
    by Proton's own ``InstrumentationHook`` activated without a session: nothing is recorded, the kernels built
    are those a Proton session builds. Yields the ``instrumentation_mode`` string (in the compile options, so an
    instrumented build has its own cache key). ``max_shared_mem``: a number compiles with no GPU (a stand-in
    driver answers the hook's device questions); None asks the GPU. Afterwards everything the hook set is as
    before."""
    import triton
    from triton.backends import backends
    from triton.profiler.flags import flags
    from triton.profiler.hooks import InstrumentationHook

    hook = InstrumentationHook(mode)
    compiler = backends["nvidia"].compiler
    saved = (compiler.instrumentation, flags.instrumentation_on, triton.knobs.compilation.instrumentation_mode)

    def device() -> contextlib.AbstractContextManager:
        return contextlib.nullcontext() if max_shared_mem is None else active_driver(_ProtonDevice(max_shared_mem))

    active = InstrumentationHook.active_count  # 1 while a Proton session instruments: activate() refuses then
    try:
        with device():
            hook.activate()
        yield str(hook.mode)
    finally:
        if InstrumentationHook.active_count > active:
            with device():
                hook.deactivate()
        compiler.instrumentation, flags.instrumentation_on, triton.knobs.compilation.instrumentation_mode = saved


@contextlib.contextmanager
def profile_allocator(allocator: Any) -> Iterator[None]:
    """``allocator(size, alignment, stream)`` gives instrumented kernels their profile buffer inside the block
    (Proton's session sets its own), none after it."""
    from triton.runtime._allocation import set_profile_allocator

    set_profile_allocator(allocator)
    try:
        yield
    finally:
        set_profile_allocator(None)


# ---------------------------------------------------------------------- Gluon's source, torch's internals
def gluon_source_class() -> type:
    """The ``ASTSource`` that ``triton.compile`` takes for a ``@gluon.jit`` kernel (Gluon's JIT builds it)."""
    from triton.experimental.gluon._runtime import GluonASTSource

    return GluonASTSource


def storage_id(storage: Any) -> int:
    """Identity of a torch storage's C++ object: the same for every tensor viewing it, while it lives."""
    return storage._cdata


def scaled_mm(a: Any, b: Any, scale_a: Any, scale_b: Any, out_dtype: Any, use_fast_accum: bool = False) -> Any:
    """torch's fp8 GEMM with per-tensor scales (cuBLASLt on a GPU): ``torch._scaled_mm``."""
    import torch

    return torch._scaled_mm(a, b, scale_a=scale_a, scale_b=scale_b, out_dtype=out_dtype,
                            use_fast_accum=use_fast_accum)


def dispatch_mode() -> type:
    """torch's ``TorchDispatchMode`` (``torch.utils._python_dispatch``): a mode that sees every aten op a block runs."""
    from torch.utils._python_dispatch import TorchDispatchMode

    return TorchDispatchMode


def load_dynamo() -> None:
    """Import ``torch._dynamo``, which rebinds some of torch's functions (``torch.manual_seed``) when it loads."""
    import torch._dynamo  # noqa: F401
