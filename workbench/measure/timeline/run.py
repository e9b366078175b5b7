"""Recording a timeline on the GPU: time the plain kernel, record one instrumented launch, time that build.

- ``record(kernel, grid, *args, **kwargs)``: ``kernel[grid](*args, **kwargs)``'s timeline;
- ``timeline_of(fn)``: the timeline of whatever kernel ``fn()`` launches (once per call), e.g. a
  library's ``launch`` or a tutorial's ``attention(q, k, v, sm_scale)``: every kernel compiled while
  recording gets the role scopes (``hook.scoped``), nothing of the user's is edited;
- ``timeline_section(...)``: what ``%%tlx --timeline`` calls (the Report's payload).
"""

from __future__ import annotations

import contextlib
import dataclasses
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from workbench.compile.triton_reach import profile_allocator
from workbench.ir import schema_types as st
from workbench.measure.timeline.clock import ClockSampler
from workbench.measure.timeline.clock import measure as measure_clock
from workbench.measure.timeline.drops import events_per_warp_for_rerecord, is_overflow_warning
from workbench.measure.timeline.hook import ScopeRecorder, scoped
from workbench.measure.timeline.instrument import ModeSpec, instrumentation, session
from workbench.measure.timeline.result import Timeline, analyze
from workbench.measure.timeline.trace import read_trace

EVENTS_PER_WARP = 4096  #: default buffer: scope instances each recorded warp can hold (16 bytes each)


class _ProfileBuffers:
    """A profile-scratch allocator for timing the instrumented binary without Proton's host hooks."""

    def __init__(self) -> None:
        self.buf: Any = None

    def __call__(self, size: int, alignment: int, stream: int | None) -> Any:
        import torch

        size = (size + alignment - 1) // alignment * alignment
        if self.buf is None or self.buf.numel() < size:
            self.buf = torch.empty(size, dtype=torch.uint8, device="cuda")
        return self.buf


@contextlib.contextmanager
def instrumented_binary(spec: ModeSpec, level: str = "fine") -> Iterator[ScopeRecorder]:
    """Launches inside run the instrumented build (same cache key as in the Proton session), writing
    into a scratch buffer nobody parses."""
    with instrumentation(spec, max_shared_mem=None), scoped(level) as rec, profile_allocator(_ProfileBuffers()):
        yield rec


def role_warps(ttgir: str | None, num_warps: int | None = None) -> tuple[int, ...] | None:
    """The first warp of every role region (default task at 0, partitions after it), from plain TTGIR."""
    from triton.backends.compiler import GPUTarget

    from workbench.compile.tasks import tasks_of

    if not ttgir or "ttg.warp_specialize" not in ttgir:
        return (0,) if ttgir else (tuple(range(0, num_warps, 4)) if num_warps else None)
    tasks = tasks_of(ttgir, GPUTarget("cuda", 90, 32), lambda f, ln: None)
    starts = [t["start_warp"] for t in tasks]
    if None in starts or len(set(starts)) != len(starts):  # no allocate-warp-groups answer: consecutive
        starts, nxt = [], 0
        for t in tasks:
            starts.append(nxt)
            nxt += int(t["num_warps"] or 4)
    return tuple(sorted(starts))


def default_spec(ttgir: str | None = None, num_warps: int | None = None,
                 events_per_warp: int = EVENTS_PER_WARP) -> ModeSpec:
    """Global buffer, one recorded warp per role region, ``events_per_warp`` scope instances each."""
    warps = role_warps(ttgir, num_warps)
    if not warps:
        return ModeSpec(buffer_size=0)
    return ModeSpec(sampled_warps=warps, buffer_size=16 * events_per_warp * len(warps))


def _bench(fn: Callable[[], Any], opts: dict[str, Any], timing: dict[str, Any], key: str,
           errors: list[str]) -> list[float]:
    from workbench.measure import bench

    try:
        with ClockSampler() as s:
            res = bench(fn, **opts)
        timing[key] = res.to_dict()
        return s.samples
    except Exception as e:
        errors.append(f"{key} timing: {type(e).__name__}: {e}")
        return []


def time_instrumented(fn: Callable[[], Any], spec: ModeSpec, level: str = "fine",
                      bench_options: dict[str, Any] | None = None) -> dict[str, Any]:
    """The instrumented build of what ``fn()`` launches, timed like the plain one (no Proton session):
    ``workbench.measure.bench``'s result dict, or ``{"error": ...}`` (GPU)."""
    timing: dict[str, Any] = {}
    errors: list[str] = []
    with instrumented_binary(spec, level):
        _bench(fn, {"warmup_ms": 25.0, "rep_ms": 100.0, **(bench_options or {})}, timing, "instrumented", errors)
    return timing.get("instrumented") or {"error": "; ".join(errors)}


def timeline_of(fn: Callable[[], Any], *, spec: ModeSpec | None = None, level: str = "fine",
                time_it: bool = True, bench_options: dict[str, Any] | None = None,
                workdir: str | Path | None = None, log: Callable[[str], None] | None = None) -> Timeline:
    """Record and analyse the timeline of the kernel ``fn()`` launches once (GPU).

    1. the plain kernel timed with ``workbench.measure.bench`` (its real performance), SM clock sampled;
    2. one launch under a Proton instrumentation session with the role scopes on (the instrumented
       build compiles there, so Proton learns its scope names) -> chrome trace, libproton's warnings;
    3. the instrumented build timed the same way, without Proton's host hooks: the overhead;
    4. SM clock (samples under the instrumented build, a probe kernel, the trace's own estimate).
    """
    from workbench.measure._env import environment, require_gpu

    torch = require_gpu("A timeline")
    say = log or (lambda s: None)
    spec = spec or ModeSpec()
    bopts = {"warmup_ms": 25.0, "rep_ms": 100.0, **(bench_options or {})}
    errors: list[str] = []
    timing: dict[str, Any] = {}
    if time_it:
        _keep_busy(fn, torch, 1.0)  # an idle H200 sits at 345 MHz: the first timing would read the ramp
    samples = _bench(fn, bopts, timing, "plain", errors) if time_it else []
    end = time.perf_counter() + 0.05  # keep the clocks up right before the recorded launch
    while time.perf_counter() < end:
        fn()
    torch.cuda.synchronize()
    wd = Path(workdir or tempfile.mkdtemp(prefix="tlx-timeline-"))
    with scoped(level) as rec:
        res = session(fn, spec, wd)
    bigger, rerecorded = _after_overflow(spec, res.stderr), None
    if bigger is not None:  # the buffer overflowed: record once more, large enough (a new instrumented compile)
        say(f"the profile buffer overflowed ({spec.capacity_events_per_warp()} scope instances per warp): "
            f"recording again with {bigger.capacity_events_per_warp()}")
        first_stderr, spec = res.stderr, bigger
        with scoped(level) as rec:
            res = session(fn, spec, wd)
        overflowed = sum(map(is_overflow_warning, first_stderr))
        rerecorded = (f"the first recording overflowed its profile buffer in {overflowed} warps: this one was "
                      f"recorded again with {spec.capacity_events_per_warp()} scope instances per warp")
    if res.trace_path is None:
        raise RuntimeError(res.error or "Proton wrote no trace")
    say(f"trace: {res.trace_path} ({res.trace_path.stat().st_size / 1e6:.1f} MB)")
    samples_instr: list[float] = []
    if time_it:
        with instrumented_binary(spec, level):
            samples_instr = _bench(fn, bopts, timing, "instrumented", errors)
        _bench(fn, bopts, timing, "plain_after", errors)  # plain, instrumented, plain: clock drift shows
        plains = [timing[k]["median_ms"] for k in ("plain", "plain_after") if k in timing]
        if plains and "instrumented" in timing:
            timing["overhead"] = timing["instrumented"]["median_ms"] / min(plains) - 1
    clock = measure_clock(samples_instr or samples, "nvml")
    t0 = time.perf_counter()
    trace = read_trace(res.trace_path)
    if rerecorded:
        trace.warnings.append(rerecorded)
    say(f"parsed {len(trace.events)} events in {time.perf_counter() - t0:.1f} s")
    cap = spec.capacity_events_per_warp() if spec.buffer_type == "global" else None
    tl = analyze(trace, res.stderr, cap, clock)
    if samples:
        timing["plain_clock_mhz"] = statistics.median(samples)
    plan = rec.plans.get(trace.kernel) or next(iter(rec.plans.values()), None)
    tl.instrumentation = {"mechanism": "TTGIR scopes through the chained stages hook (workbench.measure.timeline.hook)",
                          **(plan.to_dict() if plan else {"level": level, "roles": []})}
    tl.timing, tl.mode, tl.trace_file, tl.errors = timing, res.mode, str(res.trace_path), errors + rec.errors
    tl.env = environment()
    trace.meta.update({"device": tl.env.get("device"), "when": tl.env.get("measured_at")})
    return tl


def _after_overflow(spec: ModeSpec, stderr: list[str]) -> ModeSpec | None:
    """The spec of a second recording when the first overflowed a global buffer of known warps, else None."""
    if spec.buffer_type != "global" or not spec.sampled_warps:
        return None
    had = spec.capacity_events_per_warp()
    more = events_per_warp_for_rerecord(stderr, had)
    if more is None:
        return None
    return dataclasses.replace(spec, buffer_size=16 * more * len(spec.sampled_warps))


def _keep_busy(fn: Callable[[], Any], torch: Any, seconds: float) -> None:
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        for _ in range(8):
            fn()
        torch.cuda.synchronize()


def _plain_ttgir(kernel: Any, grid: Any, args: tuple, kwargs: dict[str, Any]) -> str | None:
    """The plain build's TTGIR (compiles it if needed; None when that fails)."""
    try:
        ck = kernel.warmup(*args, grid=grid, **kwargs)
        return ck.asm.get("ttgir")
    except Exception:
        return None


_TIMELINE_KW = {"time_it", "bench_options", "workdir", "log", "level"}


def record(kernel: Any, grid: Any, *args: Any, spec: ModeSpec | None = None,
           events_per_warp: int = EVENTS_PER_WARP, **kwargs: Any) -> Timeline:
    """``kernel[grid](*args, **kwargs)``'s per-role timeline (GPU); keywords of :func:`timeline_of` pass through.

    One recorded warp per role region (the plain build's TTGIR says where each starts), a global
    buffer of ``events_per_warp`` scope instances per recorded warp (raise it when the timeline
    reports dropped events)."""
    opts = {k: kwargs.pop(k) for k in list(kwargs) if k in _TIMELINE_KW}
    if spec is None:
        spec = default_spec(_plain_ttgir(kernel, grid, args, kwargs), events_per_warp=events_per_warp)

    def fn() -> Any:
        return kernel[grid](*args, **kwargs)

    return timeline_of(fn, spec=spec, **opts)


def timeline_section(fn: Callable[[], Any], *, kernel: Any = None, grid: Any = None, args: Any = None,
                     artifact: Any = None, spec: ModeSpec | None = None, level: str = "fine",
                     events_per_warp: int = EVENTS_PER_WARP, **kw: Any) -> st.Timeline:
    """For ``%%tlx --timeline``: the Report's timeline payload (raises when no GPU; the magic wraps it).

    ``fn`` relaunches the cell's kernel; ``artifact`` (the plain compile) says where each role's warps
    start. ``kernel``/``grid``/``args`` are accepted for the caller's convenience and not needed."""
    ttgir = None
    try:
        ttgir = artifact.stages.get("ttgir") if artifact is not None else None
    except Exception:
        ttgir = None
    spec = spec or default_spec(ttgir, events_per_warp=events_per_warp)
    return timeline_of(fn, spec=spec, level=level, **kw).to_dict()
