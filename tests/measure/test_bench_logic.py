"""bench's control flow against a simulated CUDA clock (no GPU): sizing, flush, rotation, graphs."""

import contextlib
import importlib

import pytest

timing = importlib.import_module("workbench.measure.timing")


class FakeCuda:
    """Just enough of torch.cuda for bench: a device clock that kernels advance, events, graphs."""

    def __init__(self, flush_ms=0.07):
        self.clock = 0.0
        self.capturing = None
        self.flush_ms = flush_ms
        self.launches = 0
        fake = self

        class Event:
            def __init__(self, enable_timing=True):
                self.t = None

            def record(self):
                assert fake.capturing is None, "bench must not record events inside a capture"
                self.t = fake.clock

            def elapsed_time(self, other):
                return other.t - self.t

        class CUDAGraph:
            def __init__(self):
                self.ops = []

            def replay(self):
                for dt in self.ops:
                    fake.clock += dt

        @contextlib.contextmanager
        def graph(g, stream=None, **kw):
            fake.capturing = g.ops
            try:
                yield
            finally:
                fake.capturing = None

        class Props:
            L2_cache_size = 50 * 2**20

        class Stream:
            def wait_stream(self, other):
                pass

        self.Event, self.CUDAGraph, self.graph, self.Stream = Event, CUDAGraph, graph, Stream
        self.get_device_properties = lambda dev: Props()
        self.current_device = lambda: 0
        self.current_stream = lambda: Stream()
        self.stream = lambda s: contextlib.nullcontext()
        self.synchronize = lambda: None

    def launch(self, dt):
        self.launches += 1
        if self.capturing is not None:
            self.capturing.append(dt)
        else:
            self.clock += dt


class FakeTorch:
    int32 = "int32"

    def __init__(self, cuda):
        self.cuda = cuda

    def empty(self, n, dtype=None, device=None):
        cuda = self.cuda

        class Buf:
            def zero_(self):
                cuda.launch(cuda.flush_ms)

        return Buf()


@pytest.fixture
def fake(monkeypatch):
    cuda = FakeCuda()
    monkeypatch.setattr(timing, "require_gpu", lambda what="Timing": FakeTorch(cuda))
    monkeypatch.setattr(timing, "environment", lambda: {"device": "fake"})
    monkeypatch.setattr(timing, "_FLUSH_BUFFERS", {})
    return cuda


def test_events_mode_times_only_the_kernel(fake):
    r = timing.bench(lambda: fake.launch(1.5), graph=False, flops=2 * 8192**3)
    assert r.method == "cuda-events" and r.l2 == "flushed"
    assert r.median_ms == pytest.approx(1.5) and r.stable and r.runs >= 10
    assert r.runs == int(100 / (1.5 + 0.07))  # sized like do_bench: run plus flush
    assert r.tflops == pytest.approx(2 * 8192**3 / 1.5e-3 / 1e12)


def test_rotating_inputs_cycle_and_do_not_flush_by_default(fake):
    seen = []

    def fn(i):
        seen.append(i)
        fake.launch(0.5)

    r = timing.bench(fn, inputs=[(0,), (1,), (2,)], graph=False)
    assert r.l2 == "rotating 3 input sets"
    assert set(seen) == {0, 1, 2}
    assert r.median_ms == pytest.approx(0.5)


def test_graph_mode_flushes_outside_the_timed_replay(fake):
    r = timing.bench(lambda: fake.launch(0.003), graph=True)
    assert r.method == "cuda-graph" and r.l2 == "flushed"
    assert r.median_ms == pytest.approx(0.003)  # the flush is not in the interval
    assert r.calls_per_run == 1 and r.runs == int(100 / (0.003 + 0.07))
    warm = timing.bench(lambda: fake.launch(0.003), graph=True, flush_l2=False)
    assert warm.l2 == "warm" and warm.calls_per_run == 1000 and warm.median_ms == pytest.approx(0.003)


def test_graph_failure_falls_back_to_events(fake, monkeypatch):
    def broken(*a, **k):
        raise RuntimeError("operation not permitted when stream is capturing")

    monkeypatch.setattr(fake, "CUDAGraph", broken)
    r = timing.bench(lambda: fake.launch(0.01), graph=True, flush_l2=False)
    assert r.method == "cuda-events" and "capture failed" in r.notes[0]


def test_auto_picks_graph_only_when_launch_bound(fake, monkeypatch):
    # a long kernel is never launch-bound
    assert timing.bench(lambda: fake.launch(2.0), flush_l2=False).method == "cuda-events"
    # a "kernel" whose host side is slow relative to its (tiny) device time, with no flush
    import time as _time

    def slow_host():
        _time.sleep(0.0002)
        fake.launch(0.001)

    r = timing.bench(slow_host, flush_l2=False, rep_ms=5, warmup_ms=1)
    assert r.method == "cuda-graph" and "launch-bound" in r.notes[0]


def test_a_prior_result_stands_in_for_the_first_call_and_the_estimate(fake):
    """An interleaved round's second bench of a function reuses the first's median and method: 11 calls fewer,
    the same sizing and the same times."""
    calls = []

    def kernel():
        calls.append(1)
        fake.launch(1.6)

    first = timing.bench(kernel, warmup_ms=5, rep_ms=20)
    n_first = len(calls)
    calls.clear()
    again = timing.bench(kernel, warmup_ms=5, rep_ms=20, prior=first)
    assert n_first - len(calls) == 11  # the first call, 5 timed and 5 host-timed estimate calls
    assert (again.runs, again.method) == (first.runs, first.method)
    assert again.median_ms == pytest.approx(first.median_ms)
    graphed = timing.bench(lambda: fake.launch(0.003), graph=True)
    assert timing.bench(lambda: fake.launch(0.003), prior=graphed).method == "cuda-graph"


def test_time_call_times_a_users_loop_warm_or_the_kernel_flushed(fake, monkeypatch):
    launched: list[float] = []
    launch = fake.launch
    monkeypatch.setattr(fake, "launch", lambda dt: launched.append(dt) or launch(dt))
    assert timing.time_call(lambda: fake.launch(0.2), 20) == pytest.approx(0.2)
    assert fake.flush_ms not in launched  # back to back, L2 warm
    launched.clear()
    assert timing.time_call(lambda: fake.launch(0.2), 20, "flush") == pytest.approx(0.2)  # the flush is not timed
    assert launched.count(fake.flush_ms) > 0.8 * launched.count(0.2)  # a flush before each timed call
    with pytest.raises(ValueError, match="timing must be one of"):
        timing.time_call(lambda: None, 20, "graph")


def test_host_per_call_is_the_loop_before_the_synchronize_and_wall_after_it(fake, monkeypatch):
    import time as _time

    synced: list[int] = []
    monkeypatch.setattr(fake, "synchronize", lambda: synced.append(fake.launches) or _time.sleep(0.02))
    host_us, wall_us = timing.host_per_call(lambda: fake.launch(0.001), calls=10, warmup=3)
    assert synced == [3, 13]  # after the warm-up, then after the timed calls
    assert wall_us - host_us >= 0.02 / 10 * 1e6 * 0.9  # the final synchronize is in the wall time only
