"""Proton instrumentation sessions: on a GPU (``session``) and for compile-only timeline builds (``instrumentation``,
``compile_instrumented``).

Facts of Triton 3.8's Proton this relies on (read from ``triton/profiler`` and libproton):

- scopes (``pl.scope`` / ``proton.record``) are emitted only while ``flags.instrumentation_on`` is set, and
  ``triton.knobs.compilation.instrumentation_mode`` goes into the compile options, so an instrumented
  build never shares a cache entry with the plain one;
- the trace parser accepts only ``granularity="warp"`` (anything else raises "Only warp granularity is
  supported for now" when the kernel exits); fewer events are recorded by warp *sampling*
  (``sampling_strategy="selective"``, ``sampling_options="0,4,8"``: one warp per warpgroup);
- each CTA's buffer is circular: when it overflows, the *first* events of a warp are overwritten and
  libproton prints ``Warning (ctaN, warpW): first K events are dropped due to insufficient buffer
  size (max/count)`` to stderr; every record takes 8 bytes (a scope instance: 16);
- the mode's default buffer is *shared* memory; TLX kernels use nearly all of it (the library's
  cooperative GEMM: 229,560 of 232,448 bytes), so the timeline uses a *global* buffer.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.compile.triton_reach import proton_instrumentation
from workbench.measure.timeline.drops import is_overflow_warning

#: what Proton 3.8 gives each recorded warp of a global buffer by default (seen: scratch 16 KiB x warps + 128)
DEFAULT_SEGMENT_BYTES = 16384
#: Hopper's shared memory per CTA (what Proton's shared-buffer sizing is given on a CPU compile).
SM90_MAX_SHARED = 232448


@dataclass(frozen=True)
class ModeSpec:
    """What to give ``proton.mode.Default``: global buffer, all warps or a sample of them."""

    buffer_type: str = "global"
    buffer_size: int = 0  # bytes per CTA; 0 = Proton's default (16 KiB per recorded warp); each warp's share
    # must be a power of two (rounded up here when the sampled warps are given)
    sampled_warps: tuple[int, ...] | None = None  # None = every warp
    optimizations: str = ""  # e.g. "clock32" (32-bit clock reads, less overhead) or "time_shift"

    def segment_bytes(self) -> int | None:
        """Bytes per recorded warp when ``buffer_size`` is set and the sampled warps are known."""
        if not self.buffer_size or not self.sampled_warps:
            return None
        return self.buffer_size // len(self.sampled_warps)

    def capacity_events_per_warp(self) -> int:
        """Events one recorded warp can hold (16 bytes each: a start and an end record)."""
        seg = self.segment_bytes()
        if seg is None:
            seg = DEFAULT_SEGMENT_BYTES
        elif seg & (seg - 1):
            seg = 1 << seg.bit_length()
        return seg // 16

    def mode(self) -> Any:
        from triton.profiler import mode as pm

        size = int(self.buffer_size)
        seg = self.segment_bytes()
        if seg is not None and seg & (seg - 1):
            # Proton: "buffer-size per segment must be power of 2"; round each warp's share up
            size = (1 << seg.bit_length()) * len(self.sampled_warps or ())
        kw: dict[str, Any] = dict(buffer_type=self.buffer_type, buffer_size=size)
        if self.sampled_warps:
            kw["sampling_strategy"] = "selective"
            kw["sampling_options"] = ",".join(str(w) for w in self.sampled_warps)
        if self.optimizations:
            kw["optimizations"] = self.optimizations
        return pm.Default(**kw)

    def to_dict(self) -> dict[str, Any]:
        return {
            "backend": "instrumentation",
            "granularity": "warp",
            "buffer_type": self.buffer_type,
            "buffer_size": self.buffer_size or None,
            "sampled_warps": list(self.sampled_warps) if self.sampled_warps else None,
            "optimizations": self.optimizations or None,
        }


@contextlib.contextmanager
def instrumentation(spec: ModeSpec | None = None,
                    max_shared_mem: int | None = SM90_MAX_SHARED) -> Iterator[str]:
    """Turn Proton's instrumentation passes on for compiles inside (CUDA backend).

    Yields the ``instrumentation_mode`` string; pass it to ``triton.compile`` options (or the
    kernel's ``compile_for`` keyword ``instrumentation_mode=``) so the cache key differs.
    Proton's own ``InstrumentationHook``, activated without a session; ``max_shared_mem``: what Proton plans a
    shared buffer against (a number: no GPU needed; None: the current GPU's).
    """
    with proton_instrumentation((spec or ModeSpec()).mode(), max_shared_mem) as mode:
        yield mode


def compile_instrumented(kernel: Any, *args: Any, target: str = "sm_90", level: str = "fine",
                         spec: ModeSpec | None = None, task_names: list[str | None] | None = None,
                         **options: Any) -> tuple[Any, Any]:
    """Compile the timeline build of ``kernel`` for ``target`` with no GPU: ``(CompiledKernel, Plan)``.

    Arguments as for ``workbench.compile`` (CPU tensors, TensorDescriptors, constexprs and options;
    an autotuned kernel uses its first config). Goes straight to ``triton.compile`` (Triton's cache,
    keyed apart from the plain build), never into the workbench's Artifact cache.
    """
    import triton
    from triton.compiler import ASTSource, make_backend

    from workbench.compile.binding import bind
    from workbench.compile.targets import parse_target
    from workbench.compile.tuners import unwrap
    from workbench.measure.timeline.hook import scoped

    gpu_target = parse_target(target)
    fn, options, _ = unwrap(kernel, args, options)
    with instrumentation(spec or ModeSpec()) as mode, scoped(level, task_names) as rec:
        bound = bind(fn, make_backend(gpu_target), args, {**options, "instrumentation_mode": mode})
        src = ASTSource(fn, bound.signature, bound.constexprs, bound.attrs)
        compiled = triton.compile(src, target=gpu_target, options=bound.options.__dict__)
    plan = rec.plans.get(compiled.metadata.name)
    if plan is None:  # a hit in Triton's cache: the stages did not run, the cached TTGIR says what is in
        from workbench.measure.timeline.scopes import plan_of

        plan = plan_of(compiled.asm["ttgir"])
    return compiled, plan


@contextlib.contextmanager
def capture_stderr_fd() -> Iterator[list[str]]:
    """Capture what C++ code writes to file descriptor 2 (libproton's warnings), and echo it back, less the
    per-warp overflow warnings: the timeline reports those itself (``drops``: how many, and what to do; or it
    records again with a larger buffer), where a notebook would show hundreds of lines."""
    lines: list[str] = []
    try:
        sys.stderr.flush()
        fd = sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):  # pragma: no cover - no real stderr (some notebooks)
        yield lines
        return
    saved = os.dup(fd)
    with tempfile.TemporaryFile(mode="w+b") as tmp:
        os.dup2(tmp.fileno(), fd)
        try:
            yield lines
        finally:
            try:
                sys.stderr.flush()
            except Exception:  # pragma: no cover
                pass
            os.dup2(saved, fd)
            os.close(saved)
            tmp.seek(0)
            text = tmp.read().decode("utf-8", "replace")
            lines.extend(text.splitlines())
            echo = "".join(ln + "\n" for ln in text.splitlines() if not is_overflow_warning(ln))
            if echo:
                sys.stderr.write(echo[-4000:])


@dataclass
class SessionResult:
    trace_path: Path | None
    stderr: list[str] = field(default_factory=list)
    mode: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


def session(
    fn: Any, spec: ModeSpec | None = None, workdir: str | Path | None = None, name: str = "tlx_timeline"
) -> SessionResult:
    """Run ``fn()`` once (on a GPU) under Proton's instrumentation backend; return the chrome trace path.

    ``fn`` should launch the kernel once: every launch inside the session lands in the same trace.
    """
    import torch
    import triton.profiler as proton

    spec = spec or ModeSpec()
    workdir = Path(workdir or tempfile.mkdtemp(prefix="tlx-timeline-"))
    workdir.mkdir(parents=True, exist_ok=True)
    base = workdir / name
    for stale in workdir.glob(f"{name}*chrome_trace*"):  # never read an earlier run's trace by mistake
        stale.unlink()
    res = SessionResult(trace_path=None, mode=spec.to_dict())
    with capture_stderr_fd() as err:
        proton.start(str(base), data="trace", backend="instrumentation", mode=spec.mode())
        try:
            fn()
            torch.cuda.synchronize()
        finally:
            proton.finalize()
    res.stderr = list(err)
    for cand in (Path(str(base) + ".chrome_trace"), base.with_suffix(".chrome_trace")):
        if cand.exists():
            res.trace_path = cand
            break
    if res.trace_path is None:
        found = sorted(workdir.glob(f"{name}*chrome_trace*"))
        res.trace_path = found[0] if found else None
    if res.trace_path is None:
        res.error = f"Proton wrote no chrome trace under {workdir}"
    return res
