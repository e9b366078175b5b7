"""workbench.compile: compile any Triton, Gluon or TLX kernel for a target, with no GPU.

TLX kernels are plain ``@triton.jit`` functions (uTLX registers itself with Triton), so one path
serves all three: bind the arguments exactly as a launch would, compile with ``triton.compile``
(through Triton's own cache, so that a later launch of the same specialization is a cache hit and
not a second compile), then read every stage, the cubin's resource usage, the per-task register
budgets and the layouts into an ``Artifact``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import io
import linecache
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from workbench.analyse.gluon_form import gluon_form
from workbench.analyse.layouts import linear_layouts, parse_layouts
from workbench.analyse.srcmap import build_line_map, same_file, served_as, stage_locations
from workbench.compile import cache, child, triton_reach
from workbench.compile.binding import Bound, bind, bind_signature
from workbench.compile.diagnostics import first_mlir_error, from_abort, from_backend_error, from_compilation_error
from workbench.compile.plugin_reach import guard_clc, guard_local_alloc, repair_gluon
from workbench.compile.resource_gate import gate
from workbench.compile.stages_hook import current_key
from workbench.compile.targets import parse_target, target_name
from workbench.compile.tasks import tasks_of
from workbench.compile.tools import disassemble, parse_ptxas_log, resource_usage
from workbench.compile.tools import ptxas_log as ptxas_log_of
from workbench.compile.triton_reach import gluon_source_class, jit_file_line
from workbench.compile.tuners import unwrap
from workbench.errors import ArgumentError, WorkbenchError
from workbench.ir.artifact import Artifact, Layouts, Metadata, SourceInfo, ValueLayout

ARTIFACT_FORMAT = 4
_CHECKS = "-checks"  # the cache key suffix of a detail="checks" Artifact (a full one serves that detail too)
_STAGE_ORDER = ("ttir", "ttgir", "llir", "ptx")


def compile_kernel(kernel, *args, target: str = "sm_90", signature: dict[str, str] | None = None,
                   config: Any = None, binary: bool = False, detail: str = "full", **options) -> Artifact:
    """``binary=True``: the Artifact holds the compiled kernel (``.compiled``) even when it comes from the disk
    cache (then Triton's own cache gives the binary back). ``detail="checks"``: only what the static checks and
    a table of resources need (TTGIR with its line map, metadata: no SASS, other line maps or layouts), cached
    under its own key; a full Artifact serves it too."""
    if detail not in ("full", "checks"):
        raise ArgumentError(f"detail={detail!r}: 'full' or 'checks'")
    t0 = time.perf_counter()
    gpu_target = parse_target(target)
    fn, options, _ = unwrap(kernel, args, options, config)
    _check_jit(fn)

    from triton.compiler import make_backend

    backend = make_backend(gpu_target)
    if signature is not None:
        names = {p.name for p in fn.params}
        consts = {k: v for k, v in options.items() if k in names}
        bound = bind_signature(fn, backend, signature, consts, options)
    else:
        bound = bind(fn, backend, args, options)

    key = _cache_key(fn, bound, gpu_target)
    hit = cache.get(key) or (cache.get(key + _CHECKS) if detail == "checks" else None)
    if hit is not None and (hit.compiled is not None or not binary):
        # a shallow copy: the cached object keeps cache_hit=False for whoever holds it
        hit = dataclasses.replace(hit, cache_hit=True, extra=dict(hit.extra))
        hit.extra["compile_seconds"] = time.perf_counter() - t0
        return hit

    source = user_source(fn)
    ckey = key if detail == "full" else key + _CHECKS
    fresh = False
    if hit is None:  # compiled and read first in a forked child, which fills the caches (compile.child)
        triton_reach.warm_cache_key()

        def in_child() -> str:
            _compile_new(fn, bound, gpu_target, source, ckey, detail == "full", t0)
            return ""

        got = child.run(in_child)
        if got.state == "died":
            raise from_abort(got.output, got.signal, fn.__name__, source)
        hit = cache.get(ckey) if got.state == "ok" else None
        fresh = hit is not None
    if hit is None:
        return _compile_new(fn, bound, gpu_target, source, ckey, detail == "full", t0)
    # from the disk cache (the child's, or an earlier one without its binary): Triton's cache has the binary
    compiled, _ = _triton_compile(fn, bound, gpu_target, source)
    hit = dataclasses.replace(hit, cache_hit=not fresh, extra=dict(hit.extra), compiled=compiled)
    if not fresh:
        hit.extra["compile_seconds"] = time.perf_counter() - t0
    return hit


def _compile_new(fn, bound: Bound, gpu_target, source: SourceInfo, key: str, full: bool, t0: float) -> Artifact:
    compiled, ptxas_log = _triton_compile(fn, bound, gpu_target, source)
    t_compiled = time.perf_counter()
    art = _build_artifact(compiled, ptxas_log, gpu_target, key, source, full=full)
    art.extra["timings"] = {"triton_compile": t_compiled - t0, "total": time.perf_counter() - t0}
    cache.put(art, key)
    return art


@functools.cache
def code_fingerprint(packages: tuple[str, ...] = ("compile", "analyse", "ir")) -> str:
    """A hash of the code that builds an artifact (workbench.compile, .analyse, .ir; a search's rows name more): a
    cached artifact from other code (an upgrade, a fix in the layout analysis) is not served as this code's."""
    import hashlib

    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256()
    for pkg in packages:
        for f in sorted((root / pkg).glob("*.py")):
            h.update(f.name.encode())
            h.update(f.read_bytes())
    return h.hexdigest()[:16]


def _cache_key(fn, bound: Bound, gpu_target) -> str:
    import triton

    from workbench._version import __version__

    return cache.make_key([
        ARTIFACT_FORMAT, __version__, code_fingerprint(), triton.__version__, fn.cache_key, fn.is_gluon(),
        bound.signature,
        sorted((repr(k), repr(v)) for k, v in bound.constexprs.items()),
        sorted((repr(k), repr(v)) for k, v in bound.attrs.items()),
        sorted((k, repr(v)) for k, v in bound.options.__dict__.items() if k != "extern_libs"),
        target_name(gpu_target),
        # where the kernel lives: locations (and so every line map) depend on file and first line
        list(jit_file_line(fn)),
        current_key(),  # a stages hook that rewrites stages (a timeline's scopes, delays) is a build of its own
    ])


def _check_jit(fn) -> None:
    from triton.runtime.jit import JITFunction

    if not isinstance(fn, JITFunction):
        what = getattr(fn, "__name__", type(fn).__name__)
        raise ArgumentError(
            f"{what} is not a Triton kernel (got {type(fn).__name__})",
            hint="decorate it with @triton.jit (TLX kernels too) or @gluon.jit",
        )


def user_source(fn) -> SourceInfo:
    """The file (or notebook cell) the kernel was defined in, and its first line there."""
    filename, first = jit_file_line(fn)
    text = "".join(linecache.getlines(filename)) or fn.src
    return SourceInfo(filename=filename, first_line=first, text=text, kernel_text=fn.src)


@contextlib.contextmanager
def _capture_fd2():
    """Capture what C++ writes to stderr (MLIR diagnostics) while compiling (in a compile child, stderr is already
    the parent's to read)."""
    if child.in_child():
        yield lambda: ""
        return
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


def _triton_compile(fn, bound: Bound, gpu_target, source: SourceInfo):
    import triton
    from triton import knobs
    from triton.compiler import ASTSource
    from triton.compiler.errors import CompilationError

    if fn.is_gluon():
        Source = gluon_source_class()
        repair_gluon()
    else:
        Source = ASTSource
    guard_local_alloc()  # a shape uTLX's C++ cannot lay out aborts the process otherwise, not just the compile
    guard_clc()  # likewise a CLC op this Triton build lacks (a null handle)
    src = Source(fn, bound.signature, bound.constexprs, bound.attrs)
    out = io.StringIO()
    stderr_text = ""
    try:
        with contextlib.redirect_stdout(out), _capture_fd2() as read_err, knobs.nvidia.scope(), \
                gate(target_name(gpu_target), source.filename):
            knobs.nvidia.dump_ptxas_log = True  # ptxas -v always runs; this prints its report
            try:
                compiled = triton.compile(src, target=gpu_target, options=bound.options.__dict__)
            finally:
                stderr_text = read_err()
    except CompilationError as e:
        raise from_compilation_error(e, source) from None
    except WorkbenchError as e:
        mlir = first_mlir_error(stderr_text)
        if mlir and mlir not in e.message:
            e.amend(f"\n  MLIR: {mlir}")
        raise
    except Exception as e:
        raise from_backend_error(e, stderr_text + out.getvalue(), source) from None
    return compiled, out.getvalue()


def _line_mapper(stages: dict[str, str], user_file: str):
    """(file, line) in a stage's locations -> the user's line, or None (``served_as``: the name a kernel served
    from Triton's cache may carry for the user's file)."""
    aliases = {user_file} | served_as(stages.get("ttir") or stages.get("ttgir") or "", user_file)
    return lambda f, ln: ln if any(same_file(f, a) for a in aliases) else None


def _build_artifact(compiled, ptxas_log: str, gpu_target, key: str, source: SourceInfo,
                    full: bool = True) -> Artifact:
    stages: dict[str, str] = {name: compiled.asm[name] for name in _STAGE_ORDER if name in compiled.asm}
    cubin = compiled.asm.get("cubin")
    if cubin is not None and full:
        stages["sass"] = disassemble(cubin)
    mapper = _line_mapper(stages, source.filename)
    line_maps = {}
    for name, text in stages.items():
        locs = stage_locations(name, text) if full or name == "ttgir" else None
        if locs:
            line_maps[name] = build_line_map(locs, source.filename, mapper)
    metadata = _metadata(compiled, cubin, ptxas_log, stages, gpu_target, mapper)
    layouts = Layouts()
    if "ttgir" in stages and full:
        layouts = parse_layouts(stages["ttgir"], mapper)
        layouts.values = _values_from_declared(layouts)
        layouts.linear = linear_layouts(stages["ttgir"], layouts, lambda decls, types: triton_reach.linear_layouts(
            decls, types, gpu_target))
    art = Artifact(name=compiled.metadata.name, target=target_name(gpu_target), key=key, stages=stages,
                   metadata=metadata, layouts=layouts, source=source, line_maps=line_maps, compiled=compiled)
    if not full:
        art.extra["detail"] = "checks"
    return art


def _metadata(compiled, cubin, ptxas_log: str, stages: dict[str, str], gpu_target, mapper) -> Metadata:
    import triton

    md = compiled.metadata
    res = resource_usage(cubin).get(md.name, {}) if cubin is not None else {}
    if not parse_ptxas_log(ptxas_log) and "ptx" in stages:  # Triton's cache answered: no ptxas report printed
        ptxas_log = ptxas_log_of(stages["ptx"], f"sm_{gpu_target.arch}a" if gpu_target.arch >= 90 else
                                 f"sm_{gpu_target.arch}")
    log = parse_ptxas_log(ptxas_log)
    return Metadata(
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
        tasks=tasks_of(stages.get("ttgir", ""), gpu_target, mapper),
        extra={"ptxas": ptxas_log.strip()[-2000:]} if ptxas_log.strip() else {},
    )


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
