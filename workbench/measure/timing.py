"""`bench`: CUDA-event timing with warm-up, L2 flush, rotating inputs and CUDA-graph replay; `time_call`: one call's
median as a user's loop sees it or with L2 flushed (the one timing every bench and tuner uses); `host_per_call`:
the host's time per call of back-to-back calls."""

from __future__ import annotations

import functools
import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from workbench.ir.json_values import json_num
from workbench.measure._env import environment, gpu_available, require_gpu

#: p10-p90 spread (as a fraction of the median) above which a timing is flagged as untrustworthy.
SPREAD_LIMIT = 0.10

_FLUSH_BUFFERS: dict[int, Any] = {}


def quantile(values: Sequence[float], q: float) -> float:
    """Linear-interpolated quantile, the same rule as ``triton.testing``'s ``_quantile``."""
    if not values:
        return math.nan
    a = sorted(values)
    point = q * (len(a) - 1)
    lo, hi = math.floor(point), math.ceil(point)
    return a[lo] + (a[hi] - a[lo]) * (point - lo)


@dataclass
class BenchResult:
    """One timing. Times are in milliseconds per call of the timed function."""

    name: str
    median_ms: float
    p10_ms: float
    p90_ms: float
    mean_ms: float
    min_ms: float
    runs: int  #: number of timed samples
    calls_per_run: int  #: calls averaged into one sample (1 for events, N for a graph replay)
    method: str  #: "cuda-events" or "cuda-graph"
    l2: str  #: "flushed", "warm" or "rotating N input sets"
    spread: float  #: (p90 - p10) / median
    stable: bool
    spread_limit: float
    warning: str | None = None
    notes: list[str] = field(default_factory=list)
    env: dict[str, Any] = field(default_factory=dict)
    flops: float | None = None
    bytes: float | None = None
    samples_ms: list[float] = field(default_factory=list, repr=False)

    @property
    def median_s(self) -> float:
        return self.median_ms * 1e-3

    # a count of 0 is one nobody gave (--flops without --bytes): no rate from it, not 0.000 TB/s
    @property
    def tflops(self) -> float | None:
        return self.flops / self.median_s / 1e12 if self.flops else None

    @property
    def tbs(self) -> float | None:
        return self.bytes / self.median_s / 1e12 if self.bytes else None

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form for the Report (samples left out)."""
        d = asdict(self)
        d.pop("samples_ms")
        for k in ("median_ms", "p10_ms", "p90_ms", "mean_ms", "min_ms", "spread", "flops", "bytes"):
            d[k] = json_num(d[k])
        d["tflops"] = json_num(self.tflops)
        d["tbs"] = json_num(self.tbs)
        return d

    def __str__(self) -> str:
        flag = "" if self.stable else "  [UNSTABLE]"
        rate = ""
        if self.tflops is not None:
            rate += f", {self.tflops:.1f} TFLOP/s"
        if self.tbs is not None:
            rate += f", {self.tbs:.3f} TB/s"
        return (
            f"{self.name}: median {self.median_ms * 1e3:.2f} us (p10 {self.p10_ms * 1e3:.2f}, "
            f"p90 {self.p90_ms * 1e3:.2f}; {self.runs} runs, {self.method}, L2 {self.l2}){rate}{flag}"
        )


def summarize(
    samples_ms: Sequence[float],
    *,
    name: str,
    method: str,
    l2: str,
    calls_per_run: int = 1,
    spread_limit: float = SPREAD_LIMIT,
    notes: list[str] | None = None,
    env: dict[str, Any] | None = None,
    flops: float | None = None,
    bytes: float | None = None,  # noqa: A002 - the roofline's word
) -> BenchResult:
    """Statistics of timed samples; flags a p10-p90 spread wider than ``spread_limit``."""
    samples = [float(s) for s in samples_ms]
    med = statistics.median(samples)
    p10, p90 = quantile(samples, 0.1), quantile(samples, 0.9)
    spread = (p90 - p10) / med if med > 0 else math.inf
    stable = spread <= spread_limit and len(samples) >= 5
    warning = None
    if len(samples) < 5:
        warning = f"only {len(samples)} timed runs: too few to trust; raise rep_ms."
    elif not stable:
        warning = (
            f"the p10-p90 spread is {spread:.0%} of the median (limit {spread_limit:.0%}): too wide to "
            "trust. Stop other work on the GPU, raise rep_ms, or time again."
        )
    return BenchResult(
        name=name,
        median_ms=med,
        p10_ms=p10,
        p90_ms=p90,
        mean_ms=statistics.fmean(samples),
        min_ms=min(samples),
        runs=len(samples),
        calls_per_run=calls_per_run,
        method=method,
        l2=l2,
        spread=spread,
        stable=stable,
        spread_limit=spread_limit,
        warning=warning,
        notes=list(notes or []),
        env=dict(env or {}),
        flops=flops,
        bytes=bytes,
        samples_ms=samples,
    )


def _flush_buffer(torch):
    dev = torch.cuda.current_device()
    buf = _FLUSH_BUFFERS.get(dev)
    if buf is None:
        l2 = int(getattr(torch.cuda.get_device_properties(dev), "L2_cache_size", 0) or 0)
        nbytes = max(256 * 1024 * 1024, 2 * l2)  # 256 MB, as triton.testing.do_bench uses
        buf = torch.empty(nbytes // 4, dtype=torch.int32, device="cuda")
        _FLUSH_BUFFERS[dev] = buf
    return buf


def _event_ms(torch, fn: Callable[[], Any], n: int = 1) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(n):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / n


def bench(
    fn: Callable[..., Any],
    *args: Any,
    warmup_ms: float = 25.0,
    rep_ms: float = 100.0,
    flush_l2: bool | None = None,
    inputs: Sequence[Sequence[Any]] | None = None,
    graph: bool | None = None,
    min_runs: int = 10,
    max_runs: int = 10_000,
    spread_limit: float = SPREAD_LIMIT,
    flops: float | None = None,
    bytes: float | None = None,  # noqa: A002
    name: str | None = None,
    prior: BenchResult | None = None,
) -> BenchResult:
    """Time ``fn(*args)`` on the current CUDA device and stream.

    - warm-up for ``warmup_ms``, then time for about ``rep_ms`` (at least ``min_runs`` runs);
    - ``flush_l2`` (default: on unless ``inputs`` is given) zeroes a buffer larger than L2 before
      every run, outside the timed interval, as ``triton.testing.do_bench`` does;
    - ``inputs``: rotating input sets; run i calls ``fn(*inputs[i % len(inputs)])``;
    - ``graph``: replay a CUDA graph of many calls (None = automatic: only when the host cannot
      keep up with the device, i.e. short launch-bound kernels). With a flush, each run flushes
      eagerly, then replays a graph of one call between two events: the flush keeps the device
      busy while the host launches the replay, so the interval holds the call alone. (An earlier
      method timed flush+call graphs and subtracted a graph of flushes; on the H200 it read 4096^3
      GEMMs 15% fast, because a flush after a GEMM writes back less than a flush after a flush.)

    Returns a BenchResult: median, p10, p90, run count, method, and ``stable``/``warning`` when
    the spread is too wide to trust. ``flops``/``bytes`` (per call) give TFLOP/s and TB/s.
    ``prior``: this function's result of a moment ago (an earlier round of interleaved timing): its median and
    method stand in for the first call and the estimate (11 calls fewer; the warm-up still runs).
    Raises GPURequiredError without a CUDA GPU.
    """
    torch = require_gpu("Timing")
    sets = [tuple(s) for s in inputs] if inputs is not None else [tuple(args)]
    if not sets:
        raise ValueError("bench: inputs is empty; give at least one input set.")
    calls = [functools.partial(fn, *s) for s in sets]
    flush = (inputs is None) if flush_l2 is None else bool(flush_l2)
    buf = _flush_buffer(torch) if flush else None
    clear = buf.zero_ if buf is not None else (lambda: None)
    notes: list[str] = []
    common = dict(name=name or getattr(fn, "__name__", None) or "fn", l2=_l2_label(flush, len(calls)),
                  spread_limit=spread_limit, notes=notes, env=environment(), flops=flops, bytes=bytes)

    if prior is None:
        for c in calls:  # first call: compilation, autotuning, lazy init
            c()
        torch.cuda.synchronize()
        est_ms, host_ms = _device_and_host_ms(torch, calls[0])
    else:
        est_ms, host_ms = max(prior.median_ms, 1e-4), 0.0  # medians are per call
        graph = prior.method == "cuda-graph" if graph is None else graph
        notes.extend(n for n in prior.notes if n.startswith("launch-bound"))
    flush_ms = _event_ms(torch, clear, 3) if flush else 0.0
    if graph is None:
        graph = _launch_bound(host_ms, est_ms, flush_ms if flush else None)
        if graph:
            notes.append(
                f"launch-bound (host {host_ms * 1e3:.1f} us vs device {est_ms * 1e3:.1f} us per call): "
                "timed by CUDA-graph replay"
            )

    runs = dict(cycle_ms=est_ms + flush_ms, warmup_ms=warmup_ms, rep_ms=rep_ms, min_runs=min_runs, max_runs=max_runs)
    if graph:
        try:
            if flush:
                return summarize(_bench_graph_flushed(torch, calls, clear, **runs), method="cuda-graph", **common)
            samples, per = _bench_graph(torch, calls, est_ms, warmup_ms, rep_ms)
            return summarize(samples, method="cuda-graph", calls_per_run=per, **common)
        except Exception as exc:  # capture is not possible for every function
            notes.append(f"CUDA-graph capture failed ({type(exc).__name__}: {exc}); timed with events")
            torch.cuda.synchronize()
    samples = _event_runs(torch, lambda i: calls[i % len(calls)](), clear, **runs)
    return summarize(samples, method="cuda-events", **common)


def _l2_label(flush: bool, n_sets: int) -> str:
    """How the L2 stands before each timed call, as a BenchResult says it."""
    if flush and n_sets > 1:
        return f"flushed, rotating {n_sets} input sets"
    if flush:
        return "flushed"
    return f"rotating {n_sets} input sets" if n_sets > 1 else "warm"


def _device_and_host_ms(torch, call: Callable[[], Any]) -> tuple[float, float]:
    """Estimates of one call's device time and of the host's time per call when called back to back (ms)."""
    est_ms = max(_event_ms(torch, call, 5), 1e-4)
    t0 = time.perf_counter()
    for _ in range(5):
        call()
    host_ms = (time.perf_counter() - t0) * 1e3 / 5
    torch.cuda.synchronize()
    return est_ms, host_ms


def _launch_bound(host_ms: float, est_ms: float, flush_ms: float | None) -> bool:
    """Whether to time by graph replay: the host cannot keep up with the device (and, with a flush between calls,
    cannot hide behind the flush either)."""
    return host_ms > 0.5 * est_ms and (flush_ms is None or host_ms > 0.8 * flush_ms)


def _event_runs(
    torch,
    run: Callable[[int], Any],
    clear: Callable[[], Any],
    cycle_ms: float,
    warmup_ms: float,
    rep_ms: float,
    min_runs: int,
    max_runs: int,
) -> list[float]:
    """Samples (ms): ``run(i)`` between two CUDA events, after ``clear()`` outside them; the run count sized from
    ``cycle_ms`` (one run and its flush) as do_bench sizes its loop, after about ``warmup_ms`` of warm-up."""
    n_warmup = max(1, int(warmup_ms / cycle_ms))
    n_repeat = min(max_runs, max(min_runs, int(rep_ms / cycle_ms)))
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(n_repeat)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(n_repeat)]
    for i in range(n_warmup):
        clear()
        run(i)
    for i in range(n_repeat):
        clear()
        starts[i].record()
        run(i)
        ends[i].record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) for s, e in zip(starts, ends, strict=True)]


#: How one call is timed (``time_call``'s ``timing``; the GEMM and attention benches' ``--timing``).
TIMINGS = {
    "calls": "back-to-back calls, L2 warm, CUDA events around each call, median (workbench.measure.bench)",
    "flush": "L2 flushed before each call, CUDA events around each call, median (workbench.measure.bench)",
    "wall": "the host's clock around each call, the GPU (if any) synchronized after it, median: a CPU callable's "
            "time, or a GPU call's with its launch and synchronization",
}


def time_call(fn: Callable[[], Any], rep_ms: float, timing: str = "calls", warmup_ms: float | None = None) -> float:
    """Milliseconds per call of ``fn``: the median of about ``rep_ms`` of timed calls, after ``warmup_ms`` of
    warm-up (default: a quarter of ``rep_ms``, at least 5 ms). No CUDA graph: each call is launched as written.

    - ``"calls"``: the call as a user makes it in a loop: back to back, L2 warm. A call whose host work takes
      longer than its kernel shows that time (the GPU waits for the host), as in the user's program.
    - ``"flush"``: L2 flushed before each call, outside the timed interval (as ``triton.testing.do_bench``
      times): the kernel's time; the flush keeps the GPU busy while the host prepares the call, so host time
      hides unless it is longer than the flush.
    - ``"wall"``: ``time.perf_counter`` around each call, the GPU synchronized after it when there is one: needs
      no GPU (a family benchmark of CPU callables, as its tests run one).
    """
    if timing not in TIMINGS:
        raise ValueError(f"timing must be one of {sorted(TIMINGS)}, got {timing!r}")
    warmup = max(5.0, rep_ms / 4) if warmup_ms is None else warmup_ms
    if timing == "wall":
        return _wall_ms(fn, rep_ms, warmup)
    return bench(fn, warmup_ms=warmup, rep_ms=rep_ms, flush_l2=timing == "flush", graph=False).median_ms


def _wall_ms(fn: Callable[[], Any], rep_ms: float, warmup_ms: float, min_runs: int = 5) -> float:
    """The median of ``time.perf_counter`` around each call (synchronized when a GPU is there) over about
    ``rep_ms`` after ``warmup_ms`` of calls."""
    sync: Callable[[], Any] = lambda: None  # noqa: E731
    if gpu_available():  # asked once, not per call
        import torch

        sync = torch.cuda.synchronize
    for budget_ms, keep in ((warmup_ms, False), (rep_ms, True)):
        samples: list[float] = []
        end = time.perf_counter() + budget_ms / 1e3
        while time.perf_counter() < end or (keep and len(samples) < min_runs):
            t0 = time.perf_counter()
            fn()
            sync()
            samples.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(samples)


def synchronize() -> None:
    """Wait for the GPU's work, when there is a GPU."""
    if gpu_available():
        import torch

        torch.cuda.synchronize()


def host_per_call(fn: Callable[[], Any], calls: int = 1000, warmup: int = 20) -> tuple[float, float]:
    """(host us per call, wall us per call) of ``calls`` back-to-back calls of ``fn`` after ``warmup`` calls: the
    host time is the loop's before the final synchronize, the wall time includes it (wall ~ host: the GPU waited
    for the host). Raises GPURequiredError without a CUDA GPU."""
    torch = require_gpu("Timing")
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    return (t1 - t0) / calls * 1e6, (time.perf_counter() - t0) / calls * 1e6


def _bench_graph_flushed(
    torch,
    calls: list[Callable[[], Any]],
    clear: Callable[[], Any],
    **runs: Any,
) -> list[float]:
    """Samples (ms per call): per run an eager L2 flush, then an event-timed replay of a graph
    holding one call (one graph per input set). ``runs``: ``_event_runs``'s sizes."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    graphs = []
    with torch.cuda.stream(stream):
        for c in calls:
            c()
        torch.cuda.synchronize()
        for c in calls:
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g, stream=stream):
                c()
            graphs.append(g)
        torch.cuda.synchronize()
        samples = _event_runs(torch, lambda i: graphs[i % len(graphs)].replay(), clear, **runs)
    torch.cuda.current_stream().wait_stream(stream)
    return samples


def _bench_graph(
    torch,
    calls: list[Callable[[], Any]],
    est_ms: float,
    warmup_ms: float,
    rep_ms: float,
    replays: int = 20,
) -> tuple[list[float], int]:
    """Samples (ms per call), one per replay of a graph of ``per`` calls; ``est_ms`` is one call's estimated time."""
    per = max(len(calls), min(1000, int(rep_ms / replays / est_ms)))
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for c in calls:  # warm up on the side stream before capture, as torch's docs advise
            c()
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, stream=stream):
            for i in range(per):
                calls[i % len(calls)]()
        torch.cuda.synchronize()
        for _ in range(max(1, int(warmup_ms / max(est_ms * per, 1e-3)))):
            g.replay()
        samples = [_event_ms(torch, g.replay) / per for _ in range(replays)]
    torch.cuda.current_stream().wait_stream(stream)
    del g
    return samples, per
