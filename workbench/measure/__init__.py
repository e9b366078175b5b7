"""Measurement: timing, device ceilings, roofline, kernel capture and sweeps.

API (everything but timing and capture works with no GPU):

- ``bench(fn, *args, warmup_ms=25, rep_ms=100, flush_l2=None, inputs=None, graph=None,
  flops=None, bytes=None, name=None, prior=None) -> BenchResult``: CUDA-event timing, L2 flushed between runs
  (default unless rotating ``inputs`` are given), CUDA-graph replay for launch-bound kernels; ``prior`` (the
  same function's result of an earlier interleaved round) skips the first call and the estimate.
  ``BenchResult``: median_ms, p10_ms, p90_ms, runs, method, l2, spread, stable, warning,
  tflops/tbs, ``to_dict()``.
- ``ceilings(device=None, refresh=False) -> Ceilings``: the local GPU measured once (cuBLAS
  GEMMs, a large copy) and cached per device and driver in the user cache directory, with the
  datasheet beside it; a name ("H100", "H200", "H100 PCIe", "A100", "B200") gives datasheet
  figures anywhere.
- ``roofline(flops, bytes, seconds=None, *, device=None, dtype="bf16", counts=None,
  kernel=None, grid=None, args=None, name=..., references=None) -> Roofline``: intensity,
  bound, ridge; with a time (seconds or a BenchResult) achieved TFLOP/s, TB/s and fractions;
  ``.figure()`` is a plotly chart, ``.to_dict()`` the Report form. Counts: the caller's,
  ``gemm_counts(a, b)`` / ``elementwise_counts(*ts)`` estimates, or ``declared_counts(kernel,
  grid, args)`` from a Triton ``launch_metadata`` hook.
- ``capture(fn, *args, warmup=1, repeat=1) -> Capture``: torch.profiler per-kernel table
  (name, kind, calls, device_us, mean_us, share), device_ms vs event_ms.
- ``sweep(fn, configs, reference=None, counts=None, bench_options=None) -> DataFrame``;
  ``sweep_figure(df)`` charts it.

For the ``%%tlx --bench`` magic: call ``bench_section(fn, reference=ref_fn, flops=..., bytes=...
(or counts=..., or kernel=, grid=, args=), device=None, dtype="bf16", name=...)``. It returns a
JSON-serialisable dict (schema ``tlx-workbench.measure/1``: timed, message, timing, reference,
ratio, roofline, errors, env) and never raises for a missing GPU: ``message`` then holds
"Timing needs a CUDA GPU, ..." and ``roofline`` is the static one (intensity and bound against
``device`` or the datasheet of ``TLX_WORKBENCH_DEVICE``, default H200). ``report_items(section)`` turns that
dict into items for the Report's ``profile`` list (schema 1.0 payloads: kind "bench" and "roofline", status
ok/skipped/error, reason, measured_by, device, when, then the fields above). Without a GPU,
``bench``/``capture``/``sweep`` raise ``GPURequiredError`` (a WorkbenchError) with that sentence.
"""

from __future__ import annotations

from workbench.measure._env import GPURequiredError, cache_dir, gpu_available
from workbench.measure.capture import Capture, capture, kernel_table
from workbench.measure.ceilings import Ceilings, DeviceError, ceilings, datasheet, known_devices
from workbench.measure.charts import roofline_figure, sweep_figure
from workbench.measure.counts import Counts, declared_counts, elementwise_counts, gemm_counts
from workbench.measure.report import SCHEMA, bench_section, report_items
from workbench.measure.roofline import Point, Roofline, roofline
from workbench.measure.sweep import sweep
from workbench.measure.timing import BenchResult, bench

__all__ = [
    "SCHEMA",
    "BenchResult",
    "Capture",
    "Ceilings",
    "Counts",
    "DeviceError",
    "GPURequiredError",
    "Point",
    "Roofline",
    "bench",
    "bench_section",
    "cache_dir",
    "capture",
    "ceilings",
    "datasheet",
    "declared_counts",
    "elementwise_counts",
    "gemm_counts",
    "gpu_available",
    "kernel_table",
    "known_devices",
    "roofline",
    "report_items",
    "roofline_figure",
    "sweep",
    "sweep_figure",
]
