"""``workbench.measure.timeline``: per-role intra-kernel timelines from Triton Proton's instrumentation backend.

API:

- ``run_timeline(kernel, grid, *args, **kwargs) -> Timeline`` (GPU): times the plain kernel
  (``workbench.measure.bench``: the real performance number), records one instrumented launch under
  Proton (global buffer, warp granularity, one sampled warp per warpgroup), times the instrumented
  build (the overhead), measures the SM clock, parses and analyses the trace.
  ``timeline_of(fn, spec=, warm=)`` does the same for a zero-argument launcher.
- ``read_trace(path) -> Trace`` and ``analyze(trace, stderr_lines=None) -> Timeline`` (CPU): Proton
  chrome traces (also ``.gz``) to events in cycles per CTA and warp, roles and activities from scope
  names (``"<role>/<activity>[:<detail>]"``, what the TLX lowering inserts; other names get the
  warpgroup as role), times in ns from the measured clock.
- ``Timeline``: ``roles`` (per role busy/waiting fractions, activity shares, bubbles, iteration
  p50/p95, prologue/steady/epilogue), ``overlap``, ``skew`` (CTA start skew), ``dropped`` (buffer
  overflow, with what to change), ``timing`` (plain vs instrumented, ``overhead``), ``figure()`` (plotly
  Gantt: CTA -> role lanes coloured by activity), ``to_perfetto(path)``, ``save_sample(path)``,
  ``to_dict()`` (the Report's ``timeline`` payload), ``summary()``.
- ``instrumentation(spec)`` (CPU): compile timeline builds without a GPU (``instrumentation_mode=``).
- ``timeline_section(fn, kernel=, grid=, args=, artifact=)``: what ``%%tlx --timeline`` calls.
"""

from __future__ import annotations

from workbench.measure.timeline.chart import figure, lane_rows, to_perfetto
from workbench.measure.timeline.clock import ClockReading, ClockSampler, probe_clock
from workbench.measure.timeline.instrument import ModeSpec, instrumentation, session
from workbench.measure.timeline.run import (
    SCHEMA,
    Timeline,
    analyze,
    default_spec,
    instrumented_binary,
    run_timeline,
    timeline_of,
    timeline_section,
)
from workbench.measure.timeline.stats import RoleStats, dropped_events, overlap, role_stats, start_skew
from workbench.measure.timeline.trace import Event, Trace, parse_scope_name, pick_ctas, read_trace, write_proton_trace

__all__ = [
    "SCHEMA",
    "ClockReading",
    "ClockSampler",
    "Event",
    "ModeSpec",
    "RoleStats",
    "Timeline",
    "Trace",
    "analyze",
    "default_spec",
    "dropped_events",
    "figure",
    "instrumentation",
    "instrumented_binary",
    "lane_rows",
    "overlap",
    "parse_scope_name",
    "pick_ctas",
    "probe_clock",
    "read_trace",
    "role_stats",
    "run_timeline",
    "session",
    "start_skew",
    "timeline_of",
    "timeline_section",
    "to_perfetto",
    "write_proton_trace",
]
