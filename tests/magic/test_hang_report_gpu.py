"""A ``%%tlx --snapshot`` cell whose launch hangs (the consumer never frees a slot): the cell fails with the
KernelHangError, and above it the kernel's Report shows where the warps waited: its last run's live snapshot and
the producer's wait drawn live on the Orchestration tab. Run on the H200 (bench/gpu_session.sh tests)."""

from __future__ import annotations

import time

import pytest
import torch
from cells import TLX
from test_magic import reports, run

from workbench.report import validate

pytestmark = pytest.mark.gpu
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

NEVER_FREED = TLX.replace("                tlx.barrier_arrive(tlx.local_view(empty, slot))\n", "")
PRODUCER_WAIT = 1 + next(i for i, s in enumerate(TLX.splitlines(), 1)
                         if "tlx.barrier_wait(tlx.local_view(empty, slot)" in s)  # the %%tlx line is line 1


def test_a_hung_cell_shows_its_report_with_the_waits_the_snapshot_found(ip):
    assert NEVER_FREED != TLX
    t0 = time.perf_counter()
    res, outputs, text = run(ip, "%%tlx --snapshot --timeout 3 -o hung\n" + NEVER_FREED)
    took = time.perf_counter() - t0
    assert not res.success and type(res.error_in_exec).__name__ == "KernelHangError", res.error_in_exec
    [d] = reports(outputs)
    validate(d)
    snap = d["runs"][-1]["snapshot"]
    print(snap, f"({took:.1f} s)")
    assert any(w["role"] == "the default task" and w["line"] == PRODUCER_WAIT for w in snap["waits"]), snap
    live = [m for m in d["orchestration"]["marks"] if m["source"] == "snapshot"]
    assert live and live[0]["line"] == PRODUCER_WAIT and live[0]["color"] == "live"
    assert any(x["severity"] == "error" and "live snapshot" in x["message"] for x in d["diagnostics"])
    assert ip.user_ns["hung"].name == "ew_kernel"
    assert took < 3 + 2 + 30  # the limit, the snapshot's 2 s, a worker start and a compile
