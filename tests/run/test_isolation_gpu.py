"""On a GPU: launches in the isolated worker. A hang and a fault become errors, the next launch works
and the notebook's tensors are intact; a snapshot build's hang says where each role's warps wait; racecheck and
ConSan find a deliberate slot-reuse race at its line; the worker's cost per launch. About 1-2 minutes (two
sanitized launches)."""

from __future__ import annotations

import statistics
import time

import isolation_kernels as K
import pytest

torch = pytest.importorskip("torch")

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

GRID = (2,)


@pytest.fixture(scope="module")
def tensors():
    from workbench.run.isolate import prestart

    prestart()
    x = torch.randn(GRID[0] * K.RING_ARGS["TILES"] * K.RING_ARGS["BLOCK"], device="cuda")
    keep = torch.arange(1 << 20, device="cuda", dtype=torch.float32)
    return x, torch.empty_like(x), keep


def capture(**kw):
    from workbench.run.capture import Capture
    from workbench.run.device import detect

    return Capture(device=detect(), **kw)


def ready(kernel, *args, grid=GRID, **kw):
    """Compile before a timed launch (workbench.compile and the JIT's own), so only the run is timed."""
    import workbench

    workbench.compile(kernel, *args, **kw)
    kernel.run(*args, grid=grid, warmup=True, **kw)


def ring(kernel, x, y, **kw):
    kernel[GRID](x, y, x.numel(), **K.RING_ARGS)


def test_ring_runs_in_the_worker_and_writes_in_place(tensors):
    x, y, _ = tensors
    y.fill_(float("nan"))
    with capture() as cap:
        ring(K.ring_ok, x, y)
    [entry] = cap.entries.values()
    iso = entry.runs[-1]["isolation"]
    assert iso["mode"] == "worker" and iso["status"] == "ok" and iso["overhead_ms"] is not None
    torch.testing.assert_close(y, x * 2)  # written by the worker, visible here


def test_a_hang_is_an_error_within_timeout_plus_5s_and_the_next_launch_works(tensors):
    from workbench.run.isolate import KernelHangError

    x, y, keep = tensors
    ready(K.ring_hang, x, y, x.numel(), **K.RING_ARGS)
    t0 = time.perf_counter()
    with pytest.raises(KernelHangError) as err, capture(timeout=2.0):
        ring(K.ring_hang, x, y)
    took = time.perf_counter() - t0
    assert took < 2.0 + 5.0, took
    [hang_line] = K.marked_line(K.ring_hang, "HANG")
    assert "did not finish within 2 s" in err.value.message
    assert f"line {hang_line}" in err.value.message  # the static check's wait that nothing completes
    assert torch.equal(keep, torch.arange(1 << 20, device="cuda", dtype=torch.float32))
    y.fill_(0)
    with capture():
        ring(K.ring_ok, x, y)
    torch.testing.assert_close(y, x * 2)


def test_a_snapshot_says_which_role_waits_on_which_barrier_at_which_line(tensors):
    from workbench.run.isolate import KernelHangError

    x, y, _ = tensors
    [hang_line] = K.marked_line(K.ring_hang, "HANG")
    t0 = time.perf_counter()
    with pytest.raises(KernelHangError) as err, capture(timeout=3.0, snapshot=True):
        ring(K.ring_hang, x, y)
    took = time.perf_counter() - t0
    msg = err.value.message
    print(msg, f"\n({took:.2f} s)")
    assert "live snapshot" in msg and "the default task: warps 0, 1, 2, 3 of 2 CTA(s)" in msg
    assert f"wait at line {hang_line}" in msg and "phase" in msg
    y.fill_(0)
    with capture():
        ring(K.ring_ok, x, y)
    torch.testing.assert_close(y, x * 2)


def test_a_fault_is_an_error_and_the_next_launch_works(tensors):
    from workbench.run.isolate import KernelFaultError

    x, y, keep = tensors
    with pytest.raises(KernelFaultError) as err, capture():
        K.oob_store[(4,)](y, 4096, 1 << 40, BLOCK=1024)
    assert "illegal" in err.value.message or "launch failure" in err.value.message
    assert torch.equal(keep, torch.arange(1 << 20, device="cuda", dtype=torch.float32))
    y.fill_(0)
    with capture():
        ring(K.ring_ok, x, y)
    torch.testing.assert_close(y, x * 2)


def race_lines_hit(findings) -> list[dict]:
    lines = set(K.marked_line(K.ring_race, "RACE"))
    return [f for f in findings if ({f.get("line")} | {r["line"] for r in f.get("related", [])}) & lines]


@pytest.mark.slow
def test_racecheck_reports_the_slot_reuse_race_at_its_line(tensors):
    x, y, _ = tensors
    with capture(sanitize="racecheck") as cap:
        ring(K.ring_race, x, y)
    [entry] = cap.entries.values()
    rec = entry.runs[-1]["sanitizer"]
    assert rec["status"] == "ok", rec
    assert race_lines_hit(entry.sanitizer_findings), (entry.sanitizer_findings, rec.get("raw", "")[-2000:])


@pytest.mark.slow
def test_consan_reports_the_slot_reuse_race_at_its_line(tensors):
    x, y, _ = tensors
    with capture(sanitize="consan") as cap:
        ring(K.ring_race, x, y)
    [entry] = cap.entries.values()
    rec = entry.runs[-1]["sanitizer"]
    hits = race_lines_hit(entry.sanitizer_findings)
    assert hits and all(f["source"] == "consan" for f in hits), (entry.sanitizer_findings, rec.get("raw", "")[-2000:])


def test_worker_cost_per_launch(tensors):
    """Median wall time of a small kernel's launch-and-wait: isolated vs in the notebook's process."""
    z = torch.zeros(4096, device="cuda")

    def per_launch(**kw) -> float:
        times = []
        with capture(**kw):
            for _ in range(100):
                t0 = time.perf_counter()
                K.add_one[(4,)](z, z.numel(), BLOCK=1024)
                torch.cuda.synchronize()
                times.append(time.perf_counter() - t0)
        return statistics.median(times[10:])

    iso, local = per_launch(), per_launch(isolate=False)
    assert torch.equal(z, torch.full_like(z, 200.0))  # every isolated launch wrote the notebook's tensor
    print(f"per launch: isolated {iso * 1e6:.0f} us, in-process {local * 1e6:.0f} us, "
          f"isolation adds {(iso - local) * 1e6:.0f} us")
    assert iso - local < 2e-3


def test_storages_go_to_the_worker_once_and_are_dropped_once_freed():
    from workbench.run.protocol import Encoder

    enc = Encoder("ipc")
    a = torch.zeros(1024, device="cuda")
    b = a[100:]
    specs = enc.encode([a, b], [False, False])
    sent, drop = enc.take()
    assert len(sent) == 1 and drop == [] and specs[0].storage == specs[1].storage and specs[1].offset == 100
    enc.encode([b], [False])
    assert enc.take() == ({}, [])  # already there
    del a, b, sent
    enc.collect()
    assert len(enc.take()[1]) == 1  # freed in the notebook: the worker may let it go
