"""The watchdog with a real worker process (no GPU: "kernels" are Python functions in fake_kernels.py
that sleep, crash, raise, or check what they were sent)."""

from __future__ import annotations

import os
import time

import pytest
import torch
from triton.tools.tensor_descriptor import TensorDescriptor

from workbench.run import isolate
from workbench.run.protocol import Encoder, KernelRef
from workbench.run.watchdog import Worker

HERE = os.path.dirname(__file__)


@pytest.fixture(scope="module")
def worker():
    w = Worker(env={"PYTHONPATH": HERE, "TLX_WORKBENCH_WORKER_CPU": "1", "TLX_WORKBENCH_WORKER_EXIT": "fast"})
    w.start()
    w.ready(120)
    yield w
    w.close()


def request(fn: str, *values):
    enc = Encoder("copy")
    args = enc.encode(list(values), [False] * len(values))
    storages, drop = enc.take()
    return {"kernel": KernelRef("callable", fn, f"fake_kernels:{fn}"), "grid": (1, 1, 1), "args": args,
            "storages": storages, "drop": drop}


def test_arguments_arrive_in_the_worker(worker):
    x = torch.arange(24, dtype=torch.float32).reshape(4, 6)[1:, 2:]
    d = TensorDescriptor.from_tensor(torch.ones(8, 16), [4, 16])
    out = worker.launch(request("check_kernel", x, d, 2.0, float(x.sum()), [4, 16]), timeout_s=30)
    assert out.ok, out.message
    bad = worker.launch(request("check_kernel", x, d, 2.0, float(x.sum()) + 1, [4, 16]), timeout_s=30)
    assert bad.status == "error" and "AssertionError" in bad.message and not bad.restarted


def test_a_hang_is_stopped_at_its_limit_and_the_worker_replaced(worker):
    pid = worker.info["pid"]
    t0 = time.perf_counter()
    out = worker.launch(request("sleep_kernel", 60.0), timeout_s=1.0)
    took = time.perf_counter() - t0
    assert out.status == "timeout" and out.phase == "run" and out.timeout_s == 1.0
    assert 1.0 <= took < 1.0 + 5.0, took  # the limit, plus killing the process
    assert out.restarted and out.worker_pid == pid
    nxt = worker.launch(request("sleep_kernel", 0.0), timeout_s=5.0)
    assert nxt.ok and worker.info["pid"] != pid  # a fresh process answered


def test_time_before_the_kernel_starts_does_not_count_against_its_limit(worker):
    worker.stop()
    worker.start()  # cold: importing torch takes longer than the kernel's limit
    out = worker.launch(request("sleep_kernel", 0.05), timeout_s=0.5)
    assert out.ok, out.message
    assert out.run_s is not None and 0.05 <= out.run_s < 0.5


def test_crash_and_fault_end_the_worker_and_the_next_launch_works(worker):
    for fn, status in (("crash_kernel", "died"), ("fatal_kernel", "fault")):
        pid = worker.info["pid"]
        out = worker.launch(request(fn), timeout_s=10)
        assert out.status == status and out.restarted, out
        assert worker.launch(request("sleep_kernel", 0.0), timeout_s=10).ok
        assert worker.info["pid"] != pid
    out = worker.launch(request("fatal_kernel"), timeout_s=10)
    assert "illegal memory access" in out.message and out.phase == "run"


def test_an_ordinary_error_keeps_the_worker(worker):
    worker.launch(request("sleep_kernel", 0.0), timeout_s=10)
    pid = worker.info["pid"]
    out = worker.launch(request("raise_kernel", "boom"), timeout_s=10)
    assert out.status == "error" and "ValueError: boom" in out.message and not out.restarted
    assert worker.launch(request("sleep_kernel", 0.0), timeout_s=10).ok and worker.info["pid"] == pid


def test_a_worker_killed_while_idle_is_replaced_on_the_next_launch(worker):
    worker.launch(request("sleep_kernel", 0.0), timeout_s=10)
    os.killpg(worker.proc.pid, 9)
    worker.proc.wait(10)
    out = worker.launch(request("sleep_kernel", 0.0), timeout_s=10)
    assert out.ok, out.message


def test_round_trip_cost_is_measured(worker):
    outs = [worker.launch(request("sleep_kernel", 0.0), timeout_s=10) for _ in range(20)]
    assert all(o.ok for o in outs)
    overheads = sorted(o.overhead_s for o in outs)
    assert overheads[len(overheads) // 2] < 0.05  # a socket round trip, not a process start
    rec = isolate.record(outs[-1])
    assert rec["mode"] == "worker" and rec["overhead_ms"] is not None and rec["kernel_ms"] is not None


def test_default_timeout_grows_with_the_kernels_time():
    assert isolate.default_timeout("never-seen") == isolate.BASE_TIMEOUT_S
    isolate._EXPECTED_S["k"] = 2.0
    try:
        assert isolate.default_timeout("k") == isolate.BASE_TIMEOUT_S + 8.0
    finally:
        del isolate._EXPECTED_S["k"]
