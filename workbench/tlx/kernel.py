"""``@tlx.jit`` kernels: Gluon JIT functions traced with the TLX lowering active.

A :class:`TLXKernel` launches like any Triton kernel (``kernel[grid](...)``, under ``@triton.autotune``)
and plugs into ``workbench.compile`` through ``__workbench_lower__``. Host
``triton.tools.tensor_descriptor.TensorDescriptor`` arguments are converted, at launch (after any
autotune ``pre_hook`` has set their block shape), to Gluon descriptors whose NVMMA layout comes from
the same rule that picks the layout of the buffers they fill.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import hashlib
import inspect
import re
import time
from collections.abc import Callable
from typing import Any

from triton._utils import canonicalize_dtype, get_primitive_bitwidth, validate_block_shape
from triton.experimental.gluon import language as gl
from triton.experimental.gluon._runtime import GluonASTSource, GluonJITFunction
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor as GluonTensorDescriptor
from triton.tools.tensor_descriptor import TensorDescriptor as HostTensorDescriptor

from workbench.tlx import layouts as L
from workbench.tlx.diagnostics import TLXCompileError, TLXError, to_compile_error
from workbench.tlx.lower import codegen
from workbench.tlx.lower import state as S


def _lowering_version() -> str:
    """Version of the lowering, salted with a hash of its own source (so caches notice any change)."""
    import pathlib

    h = hashlib.sha256()
    root = pathlib.Path(__file__).parent
    for p in sorted(root.rglob("*.py")):
        h.update(p.read_bytes())
    return "tlx-lowering-1-" + h.hexdigest()[:16]


LOWERING_VERSION = _lowering_version()

_BITS_TO_DTYPE = {8: gl.int8, 16: gl.float16, 32: gl.float32, 64: gl.int64}


@functools.lru_cache(maxsize=64)
def _dtype_for(torch_dtype) -> Any:
    return _BITS_TO_DTYPE[get_primitive_bitwidth(canonicalize_dtype(torch_dtype))]


@functools.lru_cache(maxsize=1024)
def _checked_layout(block_shape: tuple[int, ...], torch_dtype) -> gl.NVMMASharedLayout:
    """The NVMMA layout for a descriptor block, after Gluon's checks of the block shape (memoised)."""
    validate_block_shape(list(block_shape))
    return L.nvmma_shared_for(list(block_shape), _dtype_for(torch_dtype))


def to_gluon_descriptor(desc: HostTensorDescriptor) -> GluonTensorDescriptor:
    """The Gluon descriptor of a host descriptor, with the NVMMA layout its kernel buffer gets.

    Every launch converts its descriptors, so this skips the Gluon constructor's checks that the host
    descriptor's own constructor already made (rank, alignment, strides, padding); the block shape,
    which an autotune ``pre_hook`` may have changed since, is checked (once per shape and dtype).
    """
    base, block = desc.base, desc.block_shape
    if len(block) != len(desc.shape):
        raise ValueError(f"descriptor block shape {list(block)} does not have the rank of its shape {list(desc.shape)}")
    layout = _checked_layout(tuple(block), base.dtype)
    return gluon_descriptor_prechecked(base, list(desc.shape), list(desc.strides), list(block), layout, desc.padding)


def gluon_descriptor_prechecked(
    base, shape: list[int], strides: list[int], block_shape: list[int], layout, padding: str = "zero"
) -> GluonTensorDescriptor:
    """A Gluon descriptor built without its constructor's checks (rank, 16-byte alignment of the base and
    the strides, positive shape, unit inner stride, block shape, padding), for callers that made them
    already: they cost a few microseconds per descriptor on every launch."""
    g = object.__new__(GluonTensorDescriptor)
    g.base, g.shape, g.strides, g.block_shape, g.layout, g.padding = base, shape, strides, block_shape, layout, padding
    return g


def convert_args(args, kwargs):
    """Launch arguments with every host ``TensorDescriptor`` replaced by its Gluon descriptor."""
    H = HostTensorDescriptor
    if any(isinstance(a, H) for a in args):
        args = tuple(to_gluon_descriptor(a) if isinstance(a, H) else a for a in args)
    if any(isinstance(v, H) for v in kwargs.values()):
        kwargs = {k: to_gluon_descriptor(v) if isinstance(v, H) else v for k, v in kwargs.items()}
    return args, kwargs


@contextlib.contextmanager
def lowering_context(kernel: TLXKernel | None = None, state: S.LoweringState | None = None):
    """Activate the TLX lowering for the Triton compilations inside; phrase errors for the user."""
    codegen.install()
    st = state or S.LoweringState(kernel.file_name if kernel is not None else None)
    token = S.activate(st)
    try:
        yield st
    except TLXCompileError:
        raise
    except TLXError as e:
        raise to_compile_error(e, st.filename) from None
    except Exception as e:
        from triton.compiler.errors import CompilationError

        chain, x = [], e
        while x is not None and x not in chain:
            chain.append(x)
            x = x.__cause__ or x.__context__
        if any(isinstance(c, (CompilationError, TLXError)) for c in chain):
            raise to_compile_error(e, st.filename, kernel.first_line if kernel else None) from None
        raise
    finally:
        S.deactivate(token)


class TLXKernel(GluonJITFunction):
    """A TLX-style kernel (``@tlx.jit``)."""

    def __init__(self, fn, **kwargs) -> None:
        super().__init__(fn, **kwargs)
        self.file_name = inspect.getsourcefile(fn) or "<unknown>"
        self.first_line = self.starting_line_number
        self.last_lowering_ms: float | None = None

    @property
    def cache_key(self) -> str:
        # The TLX lowering changes what Triton builds from this source: salt Triton's cache key with it.
        base = super().cache_key
        return hashlib.sha256(f"{base}:{LOWERING_VERSION}".encode()).hexdigest()

    # -- launch ------------------------------------------------------------------------------
    def create_binder(self):
        result = super().create_binder()
        self.ASTSource = TLXASTSource  # so that launches run the lowering's checks after the trace too
        return result

    def run(self, *args, grid, warmup, **kwargs):
        # No lowering context here: a launch that hits the cache traces nothing, and one that compiles
        # activates the lowering inside TLXASTSource.make_ir, where the trace happens.
        args, kwargs = convert_args(args, kwargs)
        return super().run(*args, grid=grid, warmup=warmup, **kwargs)

    # -- workbench.compile ----------------------------------------------------------------------
    def specialize(self, args: tuple, kwargs: dict[str, Any], target: Any = "sm_90"):
        """(TLXASTSource, GPUTarget, backend, options) for these example arguments, without a GPU."""
        from triton.compiler.compiler import make_backend
        from triton.runtime.jit import create_function_from_signature

        args, kwargs = convert_args(args, kwargs)
        gpu_target = _gpu_target(target)
        backend = make_backend(gpu_target)
        binder = create_function_from_signature(self.signature, self.params, backend)
        opts_in = {k: v for k, v in kwargs.items() if k not in self.arg_names}
        bound_args, specialization, _ = binder(*args, **kwargs)
        options, signature, constexprs, attrs = self._pack_args(backend, opts_in, bound_args, specialization, opts_in)
        return TLXASTSource(self, signature, constexprs, attrs), gpu_target, backend, options

    def trace(self, args: tuple, kwargs: dict[str, Any], target: Any = "sm_90") -> S.LoweringState:
        """Run the front end once (no Triton passes): the Gluon-level TTGIR and what the lowering chose."""
        from triton._C.libtriton import ir

        src, gpu_target, backend, options = self.specialize(args, kwargs, target)
        with lowering_context(self) as st:
            context = ir.context()
            ir.load_dialects(context)
            backend.load_dialects(context)
            codegen_fns = backend.get_codegen_implementation(options)
            module_map = backend.get_module_map()
            src.make_ir(gpu_target, options, codegen_fns, module_map, context)
        return st

    def compile_for(self, args: tuple, kwargs: dict[str, Any], target: Any = "sm_90"):
        """``triton.compile`` these example arguments for ``target`` (no GPU needed): a CompiledKernel."""
        import triton

        src, gpu_target, _backend, options = self.specialize(args, kwargs, target)
        with lowering_context(self):
            return triton.compile(src, target=gpu_target, options=options.__dict__)

    def __workbench_lower__(self, args, kwargs, target):
        """The Lowering for ``workbench.compile``: no trace here, so that a cache hit costs no front-end run;
        the one trace happens inside Triton's compile, and its Gluon TTGIR becomes the stage ``gluon``."""
        from workbench.compile.lowering import Lowering
        from workbench.tlx.lower.srcmap import mlir_line_map

        cargs, ckwargs = convert_args(tuple(args), dict(kwargs))
        fname, first = self.file_name, self.first_line
        traced: list[S.LoweringState] = []

        def to_user_line(filename: str, line: int) -> int | None:
            return line if filename == fname else None

        lowering = Lowering(
            fn=self,
            args=cargs,
            kwargs=ckwargs,
            stages={"tlx": "".join(self.raw_src)},
            line_maps={"tlx": {first + i: [i + 1] for i in range(len(self.raw_src))}},
            to_user_line=to_user_line,
            cache_salt=LOWERING_VERSION,
            user_filename=fname,
            source=TLXASTSource,
        )

        @contextlib.contextmanager
        def context():
            with lowering_context(self) as st:
                yield st
            gluon = st.frontend_ir or ""
            lowering.stages["gluon"] = gluon
            lowering.line_maps["gluon"] = mlir_line_map(gluon, fname)
            traced.append(st)

        def finish(artifact) -> None:
            fill_report(artifact, traced[-1])

        lowering.context = context
        lowering.finish = finish
        return lowering


@contextlib.contextmanager
def gc_paused():
    """Pause Python's cyclic garbage collector for one front-end trace (~100 ms).

    The trace allocates many short-lived objects; with the collector running, they are promoted while
    alive and trigger full collections of the whole heap (torch and Triton included: 100+ ms each, the
    lowering's worst-case spikes). Paused, most of them die by reference count before any collection
    sees them, so later collections have less to do as well; nothing is deferred unboundedly, since
    the collector resumes as soon as the trace ends.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class TLXASTSource(GluonASTSource):
    """Gluon's AST source whose trace ends with the TLX lowering's whole-kernel checks (pending
    ``barrier_expect_bytes``, shared-memory budget) and keeps the front end's TTGIR: the one source type
    behind ``trace``, ``workbench.compile`` and launches."""

    def make_ir(self, target, options, codegen_fns, module_map, context):
        with gc_paused():
            if S.current() is None:  # a launch compiling (kernel[grid]): the lowering is not active yet
                with lowering_context(self.fn):
                    return self._make_ir(target, options, codegen_fns, module_map, context)
            return self._make_ir(target, options, codegen_fns, module_map, context)

    def _make_ir(self, target, options, codegen_fns, module_map, context):
        from workbench.tlx.api import settle_all

        kernel, st = self.fn, S.current()
        t0 = time.perf_counter()
        try:
            module = super().make_ir(target, options, codegen_fns, module_map, context)
        except RuntimeError as e:
            if "error encountered during parsing" not in str(e):
                raise
            raise TLXError(
                "the Gluon IR the TLX lowering built for this kernel failed MLIR verification (a lowering "
                "bug or an unsupported combination of calls; MLIR's own message is on stderr, and "
                "workbench.compile appends it here)",
                "report the kernel; meanwhile simplify the call named in the MLIR message",
                filename=kernel.file_name,
                lineno=kernel.first_line,
            ) from None
        if st is not None:
            settle_all(st.root_generator)
            check_shared_memory(st, kernel)
            st.frontend_ir = module.str()
        kernel.last_lowering_ms = (time.perf_counter() - t0) * 1e3
        return module


def _gpu_target(target):
    from triton.backends.compiler import GPUTarget

    if isinstance(target, GPUTarget):
        return target
    if target is None:
        return GPUTarget("cuda", 90, 32)
    m = re.fullmatch(r"sm_?(\d+)a?", str(target))
    if not m:
        from workbench.errors import TargetError

        raise TargetError(f"target {target!r} is not a CUDA target the TLX lowering supports", hint="use 'sm_90'")
    return GPUTarget("cuda", int(m.group(1)), 32)


def check_shared_memory(st: S.LoweringState, kernel: TLXKernel, limit: int | None = None) -> None:
    from workbench.tlx.api import SMEM_LIMIT_SM90

    limit = limit or SMEM_LIMIT_SM90
    total = sum(r.nbytes for r in st.buffers)
    if total > limit:
        parts = ", ".join(
            f"{r.name or r.kind} {r.num}x{r.shape} {r.dtype} = {r.nbytes} B (line {r.line})"
            for r in sorted(st.buffers, key=lambda r: -r.nbytes)
        )
        big = max(st.buffers, key=lambda r: r.nbytes)
        raise TLXError(
            f"the kernel's shared buffers need {total} bytes, {total - limit} over the device limit "
            f"of {limit} bytes: {parts}",
            "use fewer pipeline stages or smaller tiles for the largest allocation",
            rule="smem",
            filename=kernel.file_name,
            lineno=big.line,
        )


def fill_report(artifact, st: S.LoweringState) -> None:
    """Fill ``artifact.layouts.values`` with every buffer and tensor value the lowering traced."""
    from workbench.compile.artifact import ValueLayout

    rows = []
    for r in st.buffers:
        if r.kind == "barrier":
            reason = "mbarriers live in shared memory with the trivial mbarrier layout"
        elif r.explicit:
            reason = "layout= given on local_alloc"
        else:
            head = (
                "NVMMA shared layout (swizzled for TMA and wgmma)"
                if isinstance(r.layout, gl.NVMMASharedLayout)
                else "unswizzled shared layout (rank-1 buffer)"
            )
            reason = head + ("; " + "; ".join(r.uses) if r.uses else "")
        rows.append(
            ValueLayout(
                name=r.name or f"<{r.kind}@{r.line}>",
                line=r.line,
                shape=[r.num] + list(r.shape),
                dtype=r.dtype,
                layout=L.describe(r.layout),
                ttgir=r.ttgir,
                reason=reason,
                kind=r.kind,
            )
        )
    for v in sorted(st.values.values(), key=lambda v: (v.line or 0, v.name)):
        rows.append(
            ValueLayout(
                name=v.name,
                line=v.line,
                shape=v.shape,
                dtype=v.dtype,
                layout=L.describe(v.layout),
                ttgir=v.ttgir,
                reason=v.reason,
                kind="tensor",
            )
        )
    artifact.layouts.values = rows
    artifact.extra.setdefault("tlx", {})["lowering_version"] = LOWERING_VERSION


def jit(fn: Callable | None = None, **kwargs) -> TLXKernel | Callable[[Callable], TLXKernel]:
    """Decorator: ``@tlx.jit`` (same keyword arguments as ``triton.jit``)."""

    def deco(f):
        return TLXKernel(f, **kwargs)

    return deco(fn) if fn is not None else deco
