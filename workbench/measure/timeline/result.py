"""``Timeline``: one analysed per-role timeline, and ``analyze`` (trace -> Timeline, CPU only).

``Timeline.to_dict()`` is the Report's ``timeline`` payload (schema ``SCHEMA``; the caller adds
``kind``/``status``/``reason``/``measured_by``/``device``/``when``). It is compact: per-role stats and
overlaps, and lanes aggregated into at most ``bins`` segments per (CTA, role) for a sample of CTAs,
never the raw events (those stay in the Proton trace / Perfetto file named by ``trace_file``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.measure.timeline import chart
from workbench.measure.timeline.clock import ClockReading, trace_clock
from workbench.measure.timeline.drops import dropped_events
from workbench.measure.timeline.overlap import epilogue_overlap, overlap, producer_consumer, start_skew
from workbench.measure.timeline.scopes import LEVELS
from workbench.measure.timeline.stats import RoleStats, role_stats
from workbench.measure.timeline.trace import Trace, pick_ctas, write_proton_trace

SCHEMA = "tlx-workbench.measure.timeline/2"
OVERHEAD_LIMIT = 0.10  # instrumented vs plain median: above this the timeline says its shares are indicative
_LIGHTER = dict(zip(LEVELS[1:], LEVELS[:-1], strict=True))  # each level -> the next lighter one (LEVELS: light first)


def _r(x: Any, digits: int = 4) -> Any:
    """Round floats (recursively) so the payload stays small."""
    if isinstance(x, float):
        return round(x, digits)
    if isinstance(x, dict):
        return {k: _r(v, digits) for k, v in x.items()}
    if isinstance(x, list):
        return [_r(v, digits) for v in x]
    return x


@dataclass
class Timeline:
    trace: Trace
    roles: list[RoleStats]
    overlap: dict[str, dict[str, float | None]]
    producer_consumer: dict[str, dict[str, float | None]]
    epilogue_overlap: dict[str, Any]
    skew: dict[str, Any]
    dropped: dict[str, Any]
    clock: ClockReading | None = None
    timing: dict[str, Any] = field(default_factory=dict)  #: plain / instrumented BenchResult dicts, overhead
    mode: dict[str, Any] = field(default_factory=dict)
    instrumentation: dict[str, Any] = field(default_factory=dict)  #: what was inserted (scopes.Plan.to_dict)
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

    def to_dict(self, lane_ctas: int = 4, bins: int = 160) -> dict[str, Any]:
        """The Report's ``timeline`` payload (fields documented in this package's ``__init__``)."""
        t = self.trace
        clock = self.clock.to_dict() if self.clock else {"mhz": t.clock_mhz, "source": t.clock_source or "not measured"}
        return _r({
            "schema": SCHEMA,
            "kernel": t.kernel,
            "unit": "ns",
            "ctas_recorded": len(t.cta_start_ns),
            "ctas_total": t.total_ctas or len(t.cta_start_ns),
            "events": len(t.events),
            "clock": clock,
            "mode": self.mode,
            "instrumentation": self.instrumentation,
            "roles": [r.to_dict() for r in self.roles],
            "overlap": self.overlap,
            "producer_consumer": self.producer_consumer,
            "epilogue_overlap": self.epilogue_overlap,
            "cta_start_skew": self.skew,
            "dropped": self.dropped,
            "timing": self.timing,
            "overhead": self.timing.get("overhead"),
            "lanes": chart.aggregated_lanes(t, max_ctas=lane_ctas, bins=bins),
            "trace_file": self.trace_file,
            "warnings": list(t.warnings) + ([self.dropped["advice"]] if self.dropped.get("advice") else [])
            + self.overhead_warnings(),
            "errors": self.errors,
            "env": self.env,
        })

    def overhead_warnings(self) -> list[str]:
        """A warning when the instrumentation slowed the kernel by more than :data:`OVERHEAD_LIMIT`, naming the
        lighter level that would record it (``--timeline waits`` records the barrier waits only)."""
        ov, level = self.timing.get("overhead"), self.instrumentation.get("level")
        if ov is None or ov <= OVERHEAD_LIMIT:
            return []
        lighter = _LIGHTER.get(level or "")
        return [f"instrumentation overhead {ov:+.1%} at level {level or '?'} (more than {OVERHEAD_LIMIT:.0%}): the "
                "instrumented kernel is slower, so read its shares as indicative"
                + (f"; --timeline {lighter} (level='{lighter}') records less and costs less" if lighter else "")]

    def summary(self) -> str:
        lines = [f"{self.trace.kernel}: {len(self.trace.cta_start_ns)} CTAs, clock {self.trace.mhz:.0f} MHz"]
        for r in self.roles:
            top = ", ".join(f"{k} {100 * v['fraction']:.1f}%" for k, v in list(r.waits.items())[:3])
            lines.append(
                f"  {r.role:<12} {r.kind:<9} busy {100 * (r.busy_fraction or 0):5.1f}%  issuing "
                f"{100 * (r.issuing_fraction or 0):5.1f}%  waiting {100 * (r.waiting_fraction or 0):5.1f}%"
                f" ({top or 'no barrier waits'})  span {r.span_ns or 0:8.0f} ns"
            )
        ov = self.timing.get("overhead")
        if ov is not None:
            lines.append(f"  instrumentation overhead {100 * ov:+.1f}% (plain vs instrumented median)")
        if self.dropped.get("detected"):
            lines.append("  DROPPED EVENTS: " + str(self.dropped.get("advice")))
        return "\n".join(lines)


def analyze(trace: Trace, stderr_lines: list[str] | None = None, capacity_events_per_warp: int | None = None,
            clock: ClockReading | None = None) -> Timeline:
    """Stats of a parsed trace (CPU only). Without a measured clock the trace's own estimate is used."""
    est = trace_clock(trace)
    if clock is None and trace.clock_mhz:
        clock = ClockReading(mhz=trace.clock_mhz, source=trace.clock_source or "recorded with the trace")
    if clock is None:
        clock = ClockReading(mhz=est, source="trace: cycles over globaltimer (a lower bound)" if est else
                             "none (times assume Proton's 1000 MHz)")
    clock.trace_mhz = est
    if clock.mhz:
        trace.clock_mhz, trace.clock_source = clock.mhz, clock.source
    return Timeline(
        trace=trace,
        roles=role_stats(trace),
        overlap=overlap(trace),
        producer_consumer=producer_consumer(trace),
        epilogue_overlap=epilogue_overlap(trace),
        skew=start_skew(trace),
        dropped=dropped_events(trace, stderr_lines, capacity_events_per_warp),
        clock=clock,
    )
