"""``workbench.measure.timeline`` (also ``workbench.timeline``): per-role timelines of TLX kernels from Proton.

The user edits nothing: while recording, every kernel compiled gets Proton scopes inserted into its
TTGIR by role (``hook.scoped``: a pass in Triton's stages hook, chained to uTLX's): ``<role>/task``
around each task's body (``producer``, ``consumer.0``, ``consumer.1``, ...), and ``wait:<barrier
set>``, ``tma_load``, ``mma``, ``mma_wait``, ``epilogue``, ``store_wait``, ``store`` around those ops,
inside the persistent loops too (``scopes.py``; ``bench/notes/timeline-scopes-in-ws-loops.md``).

API:

- ``record(kernel, grid, *args, **kwargs) -> Timeline`` (GPU), ``timeline_of(fn) -> Timeline`` for a
  zero-argument launcher, ``timeline_section(fn, artifact=...) -> dict`` (``%%tlx --timeline``);
- ``compile_instrumented(kernel, *args, target="sm_90", level=..., **options) -> (CompiledKernel,
  Plan)`` (CPU): the instrumented build, no GPU;
- ``read_trace(path) -> Trace``, ``analyze(trace) -> Timeline`` (CPU): Proton 3.8 chrome traces
  (also ``.gz``); ``Timeline.figure()`` (plotly), ``.to_perfetto(path)``, ``.save_sample(path)``,
  ``.summary()``, ``.to_dict()``.

The Report payload (``Timeline.to_dict()``, schema ``tlx-workbench.measure.timeline/2``; the magic adds
``kind``, ``status``, ``reason``, ``measured_by``, ``device``, ``when``):

- ``kernel``, ``unit`` ("ns"), ``ctas_recorded``, ``ctas_total``, ``events`` (scope instances parsed);
- ``clock``: ``mhz`` (used), ``source``, ``probe_mhz``, ``trace_mhz`` (in-trace estimate, a lower
  bound), ``sampled_mhz`` {n, median, min, max}, ``notes``;
- ``mode``: Proton's settings (backend, granularity, buffer_type, buffer_size, sampled_warps, ...);
- ``instrumentation``: ``mechanism``, ``level`` (task | waits | fine), ``roles``: [{role, region,
  num_warps, kind, scopes: {scope name: places inserted}}];
- ``roles``: [{role, warps, ctas, kind, span_ns, busy_fraction, waiting_fraction, issuing_fraction,
  shares {category: fraction of span, "untracked"}, waits {barrier set: {count, per_cta, total_ns,
  mean_ns, p95_ns, fraction}}, bubbles {threshold_ns, count, per_cta, total_ns, fraction_of_span},
  iterations {barrier, count, per_cta, p50_ns, p95_ns, max_ns}, phases_ns {prologue, steady,
  epilogue}, events_per_cta, notes}];
- ``overlap`` {a: {b: fraction}}, ``producer_consumer`` {producer: {consumer: fraction}},
  ``epilogue_overlap`` {role: {other: {busy, mma}}} (see ``overlap.py``), ``cta_start_skew``;
- ``dropped``: {detected, dropped_events, warps_reporting_drops, warps_missing_task_scope,
  warps_at_capacity, short_scope_counts, examples, advice, note};
- ``timing``: {plain, instrumented (``workbench.measure`` results), overhead, plain_clock_mhz};
  ``overhead`` (instrumented / plain median - 1) also at the top level;
- ``lanes``: [{cta, role, name (category), start_ns, dur_ns, share}]: at most ``bins`` segments per
  (CTA, role) for a sample of CTAs (``chart.aggregated_lanes``);
- ``trace_file``, ``warnings``, ``errors``, ``env``.

Categories: ``waiting`` (barrier waits), ``tma``, ``mma``, ``mma_wait``, ``epilogue``, ``store_wait``,
``other``, and ``untracked`` in lanes.
"""

from __future__ import annotations

from workbench.measure.timeline.chart import aggregated_lanes, figure, lane_rows, to_perfetto
from workbench.measure.timeline.clock import ClockReading, ClockSampler, probe_clock, trace_clock
from workbench.measure.timeline.drops import dropped_events
from workbench.measure.timeline.hook import ScopeRecorder, scoped
from workbench.measure.timeline.instrument import ModeSpec, compile_instrumented, instrumentation, session
from workbench.measure.timeline.overlap import epilogue_overlap, overlap, producer_consumer, start_skew
from workbench.measure.timeline.result import SCHEMA, Timeline, analyze
from workbench.measure.timeline.run import (
    default_spec,
    record,
    role_warps,
    time_instrumented,
    timeline_of,
    timeline_section,
)
from workbench.measure.timeline.scopes import LEVELS, Plan, instrument
from workbench.measure.timeline.stats import RoleStats, role_stats
from workbench.measure.timeline.trace import Event, Trace, parse_scope_name, pick_ctas, read_trace, write_proton_trace

__all__ = [
    "LEVELS",
    "SCHEMA",
    "ClockReading",
    "ClockSampler",
    "Event",
    "ModeSpec",
    "Plan",
    "RoleStats",
    "ScopeRecorder",
    "Timeline",
    "Trace",
    "aggregated_lanes",
    "analyze",
    "compile_instrumented",
    "default_spec",
    "dropped_events",
    "epilogue_overlap",
    "figure",
    "instrument",
    "instrumentation",
    "lane_rows",
    "overlap",
    "parse_scope_name",
    "pick_ctas",
    "probe_clock",
    "producer_consumer",
    "read_trace",
    "record",
    "role_stats",
    "role_warps",
    "scoped",
    "session",
    "start_skew",
    "time_instrumented",
    "timeline_of",
    "timeline_section",
    "to_perfetto",
    "trace_clock",
    "write_proton_trace",
]
