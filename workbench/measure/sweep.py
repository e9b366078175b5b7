"""`sweep`: time a kernel across configs (shapes, meta-parameters) into a pandas DataFrame."""

from __future__ import annotations

import itertools
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from workbench.measure._env import environment, require_gpu
from workbench.measure.counts import Counts
from workbench.measure.timing import BenchResult, bench

COLUMNS = [
    "median_ms",
    "p10_ms",
    "p90_ms",
    "spread",
    "stable",
    "runs",
    "method",
    "flops",
    "bytes",
    "counts_source",
    "tflops",
    "tbs",
    "ref_median_ms",
    "ref_stable",
    "ref_tflops",
    "ref_tbs",
    "ratio",
    "warning",
    "error",
]


def expand_configs(
    configs: Mapping[str, Iterable[Any]] | Iterable[Mapping[str, Any]],
) -> list[dict[str, Any]]:
    """A list of dicts as is, or a dict of lists as their cartesian product."""
    if isinstance(configs, Mapping):
        keys = list(configs)
        values = [list(v) if not isinstance(v, str | bytes) else [v] for v in configs.values()]
        return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*values)]
    return [dict(c) for c in configs]


def _counts(counts: Any, config: dict[str, Any]) -> Counts | None:
    if counts is None:
        return None
    c = counts(**config) if callable(counts) else counts
    if c is None or isinstance(c, Counts):
        return c
    if isinstance(c, Mapping):
        return Counts(float(c.get("flops", 0.0)), float(c.get("bytes", 0.0)), str(c.get("source", "caller")))
    flops, nbytes = c
    return Counts(float(flops), float(nbytes), "caller")


def _rates(r: BenchResult, c: Counts | None) -> tuple[float | None, float | None]:
    if c is None:
        return None, None
    s = r.median_s
    return (c.flops / s / 1e12 if c.flops else None), (c.bytes / s / 1e12 if c.bytes else None)


def _label(cfg: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in cfg.items())


def _row(fn: Callable[..., Callable[[], Any]], cfg: dict[str, Any], reference: Callable[..., Callable[[], Any]] | None,
         counts: Callable[..., Any] | Counts | None, opts: dict[str, Any], timer: Callable[..., BenchResult]) \
        -> dict[str, Any]:
    """One config's row: its timing (and the reference's, right after), rates, or the error that stopped it."""
    row: dict[str, Any] = {**cfg, **{c: None for c in COLUMNS}}
    label = _label(cfg)
    try:
        c = _counts(counts, cfg)
        if c is not None:
            row.update(flops=c.flops, bytes=c.bytes, counts_source=c.source)
        r = timer(fn(**cfg), name=label, **opts)
        row.update(median_ms=r.median_ms, p10_ms=r.p10_ms, p90_ms=r.p90_ms, spread=r.spread, stable=r.stable,
                   runs=r.runs, method=r.method, warning=r.warning)
        row["tflops"], row["tbs"] = _rates(r, c)
        if reference is not None:
            ref = timer(reference(**cfg), name=f"reference {label}", **opts)
            row.update(ref_median_ms=ref.median_ms, ref_stable=ref.stable, ratio=ref.median_ms / r.median_ms)
            row["ref_tflops"], row["ref_tbs"] = _rates(ref, c)
    except Exception as exc:  # one bad config must not lose the sweep
        if type(exc).__name__ == "GPURequiredError":
            raise
        row["error"] = f"{type(exc).__name__}: {exc}"
    return row


def _print_progress(done: int, total: int, elapsed: float, label: str) -> None:
    end = "\n" if done == total else ""
    print(f"\rsweep {done}/{total} [{elapsed:.0f}s] {label}"[:120].ljust(120), end=end, file=sys.stderr)


def sweep(
    fn: Callable[..., Callable[[], Any]],
    configs: Mapping[str, Iterable[Any]] | Iterable[Mapping[str, Any]],
    *,
    reference: Callable[..., Callable[[], Any]] | None = None,
    counts: Callable[..., Any] | Counts | None = None,
    bench_options: Mapping[str, Any] | None = None,
    progress: bool | Callable[[int, int, dict[str, Any]], None] | None = None,
    name: str | None = None,
    timer: Callable[..., BenchResult] = bench,
):
    """Time across configs and return a pandas DataFrame, one row per config.

    ``fn(**config)`` builds what to time and returns a zero-argument callable (allocating inputs
    there keeps it out of the timing); ``reference(**config)``, if given, does the same for a
    reference (e.g. cuBLAS), timed right after in the same run. ``counts(**config)`` returns a
    Counts, a (flops, bytes) pair or a dict, giving TFLOP/s and TB/s. ``configs``: a list of
    dicts, or a dict of lists (their cartesian product). Columns: the config keys, then
    ``COLUMNS`` (median/p10/p90 in ms, spread, stable, ..., ``ratio`` = reference median / median,
    above 1 when faster than the reference; ``error`` when a config failed: the sweep goes on).
    ``progress``: None = a progress line on stderr for sweeps of 4 configs or more; a callable
    gets (done, total, config). Chart it with ``sweep_figure(df)``. Raises GPURequiredError
    without a GPU (when timing with the default timer).
    """
    import pandas as pd

    if timer is bench:
        require_gpu("Timing")
    rows_cfg = expand_configs(configs)
    keys: list[str] = []
    for c in rows_cfg:
        keys += [k for k in c if k not in keys]
    opts = dict(bench_options or {})
    show = progress if progress is not None else len(rows_cfg) >= 4
    t0 = time.perf_counter()
    rows: list[dict[str, Any]] = []
    for i, cfg in enumerate(rows_cfg):
        rows.append(_row(fn, cfg, reference, counts, opts, timer))
        if callable(show):
            show(i + 1, len(rows_cfg), cfg)
        elif show:
            _print_progress(i + 1, len(rows_cfg), time.perf_counter() - t0, _label(cfg))
    df = pd.DataFrame(rows, columns=keys + COLUMNS)
    env = environment() if timer is bench else {"measured_at": None, "device": None}
    df.attrs.update(
        name=name or getattr(fn, "__name__", "sweep"),
        config_keys=keys,
        device=env.get("device"),
        measured_at=env.get("measured_at"),
        env=env,
    )
    return df
