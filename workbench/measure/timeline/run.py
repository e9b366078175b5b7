"""``run_timeline`` / ``timeline_of``: time the plain kernel, record an instrumented launch, analyse it."""

from __future__ import annotations

import contextlib
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.measure.timeline import chart
from workbench.measure.timeline.clock import ClockReading, ClockSampler
from workbench.measure.timeline.clock import measure as measure_clock
from workbench.measure.timeline.instrument import ModeSpec, instrumentation, session
from workbench.measure.timeline.stats import RoleStats, dropped_events, overlap, role_stats, start_skew
from workbench.measure.timeline.trace import Trace, pick_ctas, read_trace, write_proton_trace

SCHEMA = "tlx-workbench.measure.timeline/1"
MAX_LANE_EVENTS = 4000  # events of sampled lanes carried in the Report (for the extension's chart)


@dataclass
class Timeline:
    trace: Trace
    roles: list[RoleStats]
    overlap: dict[str, dict[str, float | None]]
    skew: dict[str, Any]
    dropped: dict[str, Any]
    clock: ClockReading | None = None
    timing: dict[str, Any] = field(default_factory=dict)  #: plain / instrumented BenchResult dicts, overhead
    mode: dict[str, Any] = field(default_factory=dict)
    trace_file: str | None = None
    errors: list[str] = field(default_factory=list)
    env: dict[str, Any] = field(default_factory=dict)

    def figure(self, ctas: list[int] | None = None, max_ctas: int = 8) -> Any:
        return chart.figure(self.trace, ctas, max_ctas)

    def to_perfetto(self, path: str | Path, ctas: list[int] | None = None) -> Path:
        return chart.to_perfetto(self.trace, path, ctas)

    def save_sample(self, path: str | Path, n_ctas: int = 8, other: dict[str, Any] | None = None) -> Path:
        """A small Proton-format trace of ``n_ctas`` CTAs (test data; ``read_trace`` reads it back)."""
        return write_proton_trace(self.trace, path, pick_ctas(self.trace, n_ctas), other)

    def role(self, name: str) -> RoleStats:
        return next(r for r in self.roles if r.role == name)

    def to_dict(self, lane_ctas: int = 4) -> dict[str, Any]:
        """The Report's ``timeline`` payload (its kind/status/measured_by/device/when come from the caller)."""
        t = self.trace
        lanes = chart.lane_rows(t, max_ctas=lane_ctas)[:MAX_LANE_EVENTS]
        return {
            "schema": SCHEMA,
            "kernel": t.kernel,
            "ctas_recorded": len(t.cta_start_ns),
            "ctas_total": t.total_ctas or len(t.cta_start_ns),
            "events": len(t.events),
            "clock": self.clock.to_dict()
            if self.clock
            else {"mhz": t.clock_mhz, "source": t.clock_source or "not measured"},
            "mode": self.mode,
            "roles": [r.to_dict() for r in self.roles],
            "overlap": self.overlap,
            "cta_start_skew": self.skew,
            "dropped": self.dropped,
            "timing": self.timing,
            "lanes": [
                {k: (round(v, 1) if isinstance(v, float) else v) for k, v in row.items() if k != "lane"}
                for row in lanes
            ],
            "trace_file": self.trace_file,
            "warnings": list(t.warnings) + ([self.dropped["advice"]] if self.dropped.get("advice") else []),
            "errors": self.errors,
            "env": self.env,
        }

    def summary(self) -> str:
        lines = [f"{self.trace.kernel}: {len(self.trace.cta_start_ns)} CTAs, clock {self.trace.mhz:.0f} MHz"]
        for r in self.roles:
            it = r.iterations
            lines.append(
                f"  {r.role:<12} {r.kind:<9} busy {100 * (r.busy_fraction or 0):5.1f}%  waiting "
                f"{100 * (r.waiting_fraction or 0):5.1f}%  iter p50 {it['p50_ns'] or 0:7.0f} ns p95 "
                f"{it['p95_ns'] or 0:7.0f} ns  span {r.span_ns or 0:8.0f} ns"
            )
        ov = self.timing.get("overhead")
        if ov:
            lines.append(f"  instrumentation overhead {100 * ov:+.1f}% (plain vs instrumented median)")
        if self.dropped.get("detected"):
            lines.append("  DROPPED EVENTS: " + str(self.dropped.get("advice")))
        return "\n".join(lines)


def analyze(
    trace: Trace,
    stderr_lines: list[str] | None = None,
    capacity_events_per_warp: int | None = None,
    clock: ClockReading | None = None,
) -> Timeline:
    """Stats of a parsed trace (CPU only)."""
    if clock is not None and clock.mhz:
        trace.clock_mhz, trace.clock_source = clock.mhz, clock.source
    return Timeline(
        trace=trace,
        roles=role_stats(trace),
        overlap=overlap(trace),
        skew=start_skew(trace),
        dropped=dropped_events(trace, stderr_lines, capacity_events_per_warp),
        clock=clock,
    )


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
def instrumented_binary(spec: ModeSpec) -> Iterator[None]:
    """Launches inside run the instrumented build, writing into a scratch buffer nobody parses."""
    import triton
    from triton.runtime._allocation import NullAllocator, set_profile_allocator

    dev = triton.runtime.driver.active.get_current_device()
    smem = triton.runtime.driver.active.utils.get_device_properties(dev)["max_shared_mem"]
    with instrumentation(spec, max_shared_mem=smem):
        set_profile_allocator(_ProfileBuffers())
        try:
            yield
        finally:
            set_profile_allocator(NullAllocator())


def default_spec(num_warps: int | None, sample: bool = True) -> ModeSpec:
    """Global buffer; with ``sample``, one recorded warp per warpgroup (a quarter of the events)."""
    if sample and num_warps and num_warps >= 8:
        return ModeSpec(sampled_warps=tuple(range(0, num_warps, 4)))
    return ModeSpec()


def timeline_of(
    fn: Callable[[], Any],
    *,
    spec: ModeSpec | None = None,
    warm: Callable[[], Any] | None = None,
    time_it: bool = True,
    bench_options: dict[str, Any] | None = None,
    workdir: str | Path | None = None,
    capacity_events_per_warp: int | None = None,
    log: Callable[[str], None] | None = None,
) -> Timeline:
    """Record and analyse a timeline of the kernel that ``fn()`` launches once (GPU).

    1. the plain kernel timed with ``workbench.measure.bench`` (its real performance), SM clock sampled;
    2. ``warm()`` (optional) compiles the instrumented build without launching it;
    3. one launch under a Proton instrumentation session -> chrome trace (libproton's warnings kept);
    4. the instrumented build timed the same way, with no Proton host hooks (the overhead);
    5. SM clock: sampled while the instrumented build ran, and a probe kernel; trace parsed and analysed.
    """
    from workbench.measure import bench
    from workbench.measure._env import environment, require_gpu

    torch = require_gpu("A timeline")
    say = log or (lambda s: None)
    spec = spec or ModeSpec()
    bopts = {"warmup_ms": 25.0, "rep_ms": 100.0, **(bench_options or {})}
    errors: list[str] = []
    timing: dict[str, Any] = {}
    samples_plain: list[float] = []
    samples_instr: list[float] = []
    src = "nvml"
    if time_it:
        try:
            with ClockSampler() as s:
                plain = bench(fn, **bopts)
            samples_plain, src = s.samples, s.source
            timing["plain"] = plain.to_dict()
            say(f"plain: {plain.median_ms * 1e3:.1f} us median")
        except Exception as e:
            errors.append(f"plain timing: {type(e).__name__}: {e}")
    if warm is not None:
        try:
            with instrumented_binary(spec):
                warm()
        except Exception as e:
            errors.append(f"instrumented compile: {type(e).__name__}: {e}")
    # keep the clocks up right before the recorded launch
    t_end = time.perf_counter() + 0.05
    while time.perf_counter() < t_end:
        fn()
    torch.cuda.synchronize()
    wd = Path(workdir or tempfile.mkdtemp(prefix="tlx-timeline-"))
    res = session(fn, spec, wd)
    if res.trace_path is None:
        raise RuntimeError(res.error or "no trace")
    say(f"trace: {res.trace_path} ({res.trace_path.stat().st_size / 1e6:.1f} MB)")
    if time_it:
        try:
            with instrumented_binary(spec), ClockSampler() as s:
                instr = bench(fn, **bopts)
            samples_instr = s.samples
            timing["instrumented"] = instr.to_dict()
            if "plain" in timing:
                timing["overhead"] = instr.median_ms / timing["plain"]["median_ms"] - 1
            say(f"instrumented: {instr.median_ms * 1e3:.1f} us median")
        except Exception as e:
            errors.append(f"instrumented timing: {type(e).__name__}: {e}")
    clock = measure_clock(samples_instr or samples_plain, src)
    say(f"clock: {clock.mhz} MHz ({clock.source}); probe {clock.probe_mhz}")
    t0 = time.perf_counter()
    trace = read_trace(res.trace_path)
    say(f"parsed {len(trace.events)} events in {time.perf_counter() - t0:.1f} s")
    cap = capacity_events_per_warp or (spec.capacity_events_per_warp() if spec.buffer_type == "global" else None)
    tl = analyze(trace, res.stderr, cap, clock)
    if samples_plain:
        timing["plain_clock_mhz"] = statistics.median(samples_plain)
    tl.timing, tl.mode, tl.trace_file, tl.errors = timing, res.mode, str(res.trace_path), errors
    tl.env = environment()
    trace.meta.update({"device": tl.env.get("device"), "when": tl.env.get("measured_at")})
    return tl


def run_timeline(kernel: Any, grid: Any, *args: Any, spec: ModeSpec | None = None, **kwargs: Any) -> Timeline:
    """``kernel[grid](*args, **kwargs)``'s timeline: see :func:`timeline_of` (its keywords pass through)."""
    opts = {k: kwargs.pop(k) for k in list(kwargs) if k in _TIMELINE_KW}

    def fn() -> Any:
        return kernel[grid](*args, **kwargs)

    def warm() -> Any:
        return kernel.run(*args, grid=grid, warmup=True, **kwargs)

    if spec is None:
        spec = default_spec(_num_warps(kernel, args, kwargs, grid))
    return timeline_of(fn, spec=spec, warm=warm, **opts)


_TIMELINE_KW = {"time_it", "bench_options", "workdir", "capacity_events_per_warp", "log"}


def _num_warps(kernel: Any, args: tuple, kwargs: dict[str, Any], grid: Any) -> int | None:
    """Warps per CTA of the plain build (compiles it if needed; None when that fails)."""
    try:
        ck = kernel.run(*args, grid=grid, warmup=True, **kwargs)
        return int(ck.metadata.num_warps)
    except Exception:
        return None


def timeline_section(
    fn: Callable[[], Any],
    *,
    kernel: Any = None,
    grid: Any = None,
    args: Any = None,
    artifact: Any = None,
    spec: ModeSpec | None = None,
    **kw: Any,
) -> dict[str, Any]:
    """For ``%%tlx --timeline``: the Report's timeline payload (raises when no GPU; the magic wraps it)."""
    nw = None
    try:
        nw = int(artifact.metadata.num_warps) if artifact is not None else None
    except Exception:
        nw = None
    return timeline_of(fn, spec=spec or default_spec(nw), **kw).to_dict()
