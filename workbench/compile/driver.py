"""workbench.compile: compile any Triton, Gluon or TLX kernel for a target, with no GPU."""

from __future__ import annotations

import contextlib
import dataclasses
import io
import linecache
import os
import re
import tempfile
import time
from typing import Any

from workbench.compile import cache
from workbench.compile.artifact import Artifact, Layouts, Metadata, SourceInfo, ValueLayout
from workbench.compile.binding import Bound, bind, bind_signature
from workbench.compile.lowering import Lowering
from workbench.compile.targets import parse_target, target_name
from workbench.compile.tools import disassemble, parse_ptxas_log, ptxas_verbose, resource_usage
from workbench.errors import ArgumentError, CompileError, WorkbenchError
from workbench.ir.srcmap import _same_file, build_line_map, stage_locations
from workbench.layouts.gluon_form import gluon_form
from workbench.layouts.ttgir import parse_layouts

ARTIFACT_FORMAT = 1
_STAGE_ORDER = ("ttir", "ttgir", "llir", "ptx")


def compile_kernel(kernel, *args, target: str = "sm_90", signature: dict[str, str] | None = None,
                   config: Any = None, **options) -> Artifact:
    t0 = time.perf_counter()
    gpu_target = parse_target(target)
    kernel, args, options = _unwrap_tuners(kernel, args, options, config)
    lowering: Lowering | None = None
    if hasattr(kernel, "__workbench_lower__"):
        if signature is not None:
            raise ArgumentError("signature= is not supported for TLX kernels yet",
                                hint="pass example arguments (CPU tensors are fine)")
        lowering = kernel.__workbench_lower__(args, options, gpu_target)
        fn, args, options = lowering.fn, lowering.args, lowering.kwargs
    else:
        fn = kernel
    _check_jit(fn)

    from triton.compiler import make_backend

    backend = make_backend(gpu_target)
    if signature is not None:
        names = {p.name for p in fn.params}
        consts = {k: v for k, v in options.items() if k in names}
        bound = bind_signature(fn, backend, signature, consts, options)
    else:
        bound = bind(fn, backend, args, options)

    import triton

    from workbench import __version__

    key = cache.make_key([
        ARTIFACT_FORMAT, __version__, triton.__version__, fn.cache_key, fn.is_gluon(), bound.signature,
        sorted((repr(k), repr(v)) for k, v in bound.constexprs.items()),
        sorted((repr(k), repr(v)) for k, v in bound.attrs.items()),
        sorted((k, repr(v)) for k, v in bound.options.__dict__.items() if k != "extern_libs"),
        target_name(gpu_target), lowering.cache_salt if lowering else "",
        # where the kernel lives: locations (and so every line map) depend on file and first line
        _where_key(fn, lowering),
    ])
    hit = cache.get(key)
    if hit is not None:
        # a shallow copy: the cached object keeps cache_hit=False for whoever holds it
        hit = dataclasses.replace(hit, cache_hit=True, extra=dict(hit.extra))
        hit.extra["compile_seconds"] = time.perf_counter() - t0
        return hit

    compiled, ptxas_log = _triton_compile(fn, bound, gpu_target, lowering)
    t_compiled = time.perf_counter()
    art = _build_artifact(fn, compiled, ptxas_log, gpu_target, key, lowering)
    art.extra["timings"] = {"triton_compile": t_compiled - t0, "total": time.perf_counter() - t0}
    if lowering is not None and lowering.finish is not None:
        lowering.finish(art)
    cache.put(art)
    return art


def _where_key(fn, lowering: Lowering | None) -> list:
    from triton.runtime.jit import get_jit_fn_file_line

    filename, line = get_jit_fn_file_line(fn)
    return [filename, line, lowering.user_filename if lowering else None]


def _unwrap_tuners(kernel, args, options, config):
    """Autotuner/Heuristics wrappers: apply one config (``config=`` or the first) and its pre_hook."""
    from triton.runtime.autotuner import Autotuner, Heuristics

    options = dict(options)
    while isinstance(kernel, (Autotuner, Heuristics)):
        inner = kernel.fn
        names = list(getattr(inner, "arg_names", None) or [p.name for p in _base_jit(inner).params])
        if isinstance(kernel, Heuristics):
            nargs = dict(zip(names, args)) | options
            for name, rule in kernel.values.items():
                options.setdefault(name, rule(nargs))
        else:
            cfgs = kernel.configs
            cfg = config if config is not None and not isinstance(config, int) else cfgs[config or 0]
            for k, v in cfg.all_kwargs().items():
                options.setdefault(k, v)
            if cfg.pre_hook is not None:
                nargs = dict(zip(names, args)) | {k: v for k, v in options.items() if k in names}
                cfg.pre_hook(nargs)
        kernel = inner
    return kernel, args, options


def _base_jit(fn):
    while not hasattr(fn, "params") and hasattr(fn, "fn"):
        fn = fn.fn
    return fn


def _check_jit(fn) -> None:
    from triton.runtime.jit import JITFunction

    if not isinstance(fn, JITFunction):
        what = getattr(fn, "__name__", type(fn).__name__)
        raise ArgumentError(
            f"{what} is not a Triton kernel (got {type(fn).__name__})",
            hint="decorate it with @triton.jit, @gluon.jit or @tlx.jit",
        )


@contextlib.contextmanager
def _capture_fd2():
    """Capture what C++ writes to stderr (MLIR diagnostics) while compiling."""
    buf = tempfile.TemporaryFile(mode="w+b")
    try:
        saved = os.dup(2)
    except OSError:
        yield lambda: ""
        return
    try:
        os.dup2(buf.fileno(), 2)
        yield lambda: (buf.seek(0), buf.read().decode(errors="replace"))[1]
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _triton_compile(fn, bound: Bound, gpu_target, lowering: Lowering | None):
    import triton
    from triton import knobs
    from triton.compiler import ASTSource
    from triton.compiler.errors import CompilationError

    if lowering is not None and lowering.source is not None:
        Source = lowering.source
    elif fn.is_gluon():
        from triton.experimental.gluon._runtime import GluonASTSource as Source
    else:
        Source = ASTSource
    src = Source(fn, bound.signature, bound.constexprs, bound.attrs)
    out = io.StringIO()
    ctx = lowering.context() if lowering is not None else contextlib.nullcontext()
    stderr_text = ""
    try:
        with ctx, contextlib.redirect_stdout(out), _capture_fd2() as read_err, \
                knobs.nvidia.scope(), knobs.compilation.scope():
            knobs.nvidia.dump_ptxas_log = True
            # our own cache sits in front; Triton's would skip ptxas (and its register report)
            knobs.compilation.always_compile = True
            try:
                compiled = triton.compile(src, target=gpu_target, options=bound.options.__dict__)
            finally:
                stderr_text = read_err()
    except CompilationError as e:
        raise _from_compilation_error(e, fn, lowering) from None
    except WorkbenchError as e:
        # raised inside the front end (a TLX diagnostic): keep what MLIR printed to the captured stderr
        mlir = first_mlir_error(stderr_text)
        if mlir and mlir not in e.message:
            e.amend(f"\n  MLIR: {mlir}")
        raise
    except Exception as e:
        raise _from_backend_error(e, stderr_text + out.getvalue(), fn, lowering) from None
    return compiled, out.getvalue()


def _user_source(fn, lowering: Lowering | None) -> SourceInfo:
    from triton.runtime.jit import get_jit_fn_file_line

    filename, first = get_jit_fn_file_line(fn)
    if lowering is not None and lowering.user_filename:
        filename = lowering.user_filename
    text = "".join(linecache.getlines(filename)) or fn.src
    kernel_text = lowering.stages.get("tlx", fn.src) if lowering else fn.src
    return SourceInfo(filename=filename, first_line=first, text=text, kernel_text=kernel_text)


def _line_mapper(user_file: str, lowering: Lowering | None):
    if lowering is not None and lowering.to_user_line is not None:
        return lowering.to_user_line
    return lambda f, ln: ln if _same_file(f, user_file) else None


def _from_compilation_error(e, fn, lowering: Lowering | None) -> CompileError:
    from triton.compiler.errors import CompilationError

    # the innermost CompilationError names the callee where the error really is
    inner = e
    seen = set()
    cur: BaseException | None = e
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        if isinstance(cur, CompilationError):
            inner = cur
        cur = cur.__cause__ or cur.__context__
    src = _user_source(fn, lowering)
    node = inner.node
    rel = getattr(node, "lineno", None)
    col = getattr(node, "col_offset", None)
    lineno = None
    if rel is not None and inner.src:
        first_def = inner.src.splitlines()[0] if inner.src.strip() else ""
        begin = _find_def_line(src.text, first_def) or src.first_line
        lineno = begin + rel - 1
        if lowering is not None and lowering.to_user_line is not None:
            from triton.runtime.jit import get_jit_fn_file_line

            gen_file, _ = get_jit_fn_file_line(fn)
            lineno = lowering.to_user_line(gen_file, lineno) or lineno
    msg = (inner.error_message or "compilation failed").strip()
    msg = re.sub(r"^\w+Error\('(.*)'\)$", r"\1", msg, flags=re.S)
    lines = src.text.splitlines()
    source_line = lines[lineno - 1] if lineno and 0 < lineno <= len(lines) else None
    return CompileError(msg, filename=src.filename, lineno=lineno, col=col, source_line=source_line,
                        hint=_hint_for(msg))


def _find_def_line(text: str, def_line: str) -> int | None:
    want = def_line.strip()
    if not want:
        return None
    for i, line in enumerate(text.splitlines(), start=1):
        if line.strip() == want:
            return i
    return None


_DIAG = re.compile(r'loc\("([^"]+)":(\d+):(\d+)\):\s*error:\s*(.*)')
_DIAG2 = re.compile(r'^([^\s:]+):(\d+):(\d+):\s*error:\s*(.*)$', re.M)


def first_mlir_error(text: str) -> str | None:
    """The first MLIR ``error:`` diagnostic in captured stderr, as ``file:line:col: message``."""
    for pattern in (_DIAG, _DIAG2):
        m = pattern.search(text)
        if m:
            return f"{os.path.basename(m.group(1))}:{m.group(2)}:{m.group(3)}: {m.group(4).strip()}"
    return None


def _from_backend_error(e: Exception, captured: str, fn, lowering: Lowering | None) -> CompileError:
    src = _user_source(fn, lowering)
    mapper = _line_mapper(src.filename, lowering)
    text = captured + "\n" + str(e)
    lineno = None
    message = None
    for m in list(_DIAG.finditer(text)) + list(_DIAG2.finditer(text)):
        ln = mapper(m.group(1), int(m.group(2)))
        if ln:
            lineno, message = ln, m.group(4).strip()
            break
    if message is None:
        first = next((ln for ln in text.splitlines() if "error" in ln.lower()), str(e))
        message = first.strip() or type(e).__name__
    lines = src.text.splitlines()
    source_line = lines[lineno - 1] if lineno and 0 < lineno <= len(lines) else None
    return CompileError(f"{type(e).__name__} in Triton's backend: {message}", filename=src.filename,
                        lineno=lineno, source_line=source_line, hint=_hint_for(message))


def _hint_for(msg: str) -> str | None:
    low = msg.lower()
    if "is not defined" in low:
        return "inside a kernel only arguments, constexpr globals and jit functions are visible"
    if "shape" in low or "broadcast" in low:
        return "check the shapes of the operands on this line"
    if "out of resource" in low or "shared memory" in low:
        return "reduce block sizes or num_stages"
    if "power of 2" in low:
        return "block sizes passed to tl.arange must be powers of two"
    return None


def _build_artifact(fn, compiled, ptxas_log: str, gpu_target, key: str,
                    lowering: Lowering | None) -> Artifact:
    import triton

    src = _user_source(fn, lowering)
    mapper = _line_mapper(src.filename, lowering)
    stages: dict[str, str] = {}
    line_maps: dict[str, dict[int, list[int]]] = {}
    if lowering is not None:
        stages.update(lowering.stages)
        line_maps.update(lowering.line_maps)
    for name in _STAGE_ORDER:
        if name in compiled.asm:
            stages[name] = compiled.asm[name]
    cubin = compiled.asm.get("cubin")
    if cubin is not None:
        stages["sass"] = disassemble(cubin)
    for name, text in stages.items():
        if name in line_maps:
            continue
        locs = stage_locations(name, text)
        if locs:
            line_maps[name] = build_line_map(locs, src.filename, mapper)

    md = compiled.metadata
    res = resource_usage(cubin).get(md.name, {}) if cubin is not None else {}
    log = parse_ptxas_log(ptxas_log)
    if not log and "ptx" in stages:
        log = ptxas_verbose(stages["ptx"], f"sm_{gpu_target.arch}a" if gpu_target.arch == 90 else
                            f"sm_{gpu_target.arch}")
    metadata = Metadata(
        name=md.name,
        target=target_name(gpu_target),
        triton_version=triton.__version__,
        num_warps=md.num_warps,
        num_stages=md.num_stages,
        num_ctas=md.num_ctas,
        shared_bytes=md.shared,
        registers=res.get("REG", log.get("registers")),
        spill_stores=log.get("spill_stores"),
        spill_loads=log.get("spill_loads"),
        local_bytes=res.get("STACK", log.get("stack")),
        extra={"ptxas": ptxas_log.strip()[-2000:]} if ptxas_log.strip() else {},
    )
    layouts = Layouts()
    if "ttgir" in stages:
        layouts = parse_layouts(stages["ttgir"], mapper)
        layouts.values = _values_from_declared(layouts)
    return Artifact(name=md.name, target=target_name(gpu_target), key=key, stages=stages,
                    metadata=metadata, layouts=layouts, source=src, line_maps=line_maps,
                    compiled=compiled)


def _values_from_declared(layouts: Layouts) -> list[ValueLayout]:
    by_alias = {d.alias: d for d in layouts.declared}
    seen: set[tuple] = set()
    out: list[ValueLayout] = []
    for d in layouts.declared:
        if d.kind == "shared_memory":
            continue
        form = gluon_form(d, by_alias)
        for u in d.uses:
            k = (u.value, u.user_line, d.alias)
            if k in seen:
                continue
            seen.add(k)
            out.append(ValueLayout(name=u.value, line=u.user_line, shape=u.shape, dtype=u.dtype, layout=form,
                                   ttgir=d.attr, reason="chosen by Triton's layout passes",
                                   kind="buffer" if d.shared else "tensor"))
    return out
