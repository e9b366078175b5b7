"""Issue 35's hang measure: four rings that hang (tutorial 04's deadlock as ``isolation_kernels.ring_hang``, a
producer waiting for the wrong parity, and two rings the static model cannot follow: counts read from memory, slots
from a table) launched in the isolated worker with ``--snapshot`` and a 3 s limit: the KernelHangError's live
snapshot names the role whose warps wait at the ``# HANG`` line, with barrier and phase, within the limit + 2 s of
the launch (the worker ready first: the one the previous case's hang replaced is still importing torch, ~3-4 s
that the H100 run of 2026-12-06 counted in). Run on the H200 (bench/gpu_session.sh tests)."""

from __future__ import annotations

import time

import hang_kernels as H
import isolation_kernels as K
import pytest
from test_hang_kernels import launch_args

torch = pytest.importorskip("torch")

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]

LIMIT_S = 3.0


@pytest.mark.parametrize("kernel", [K.ring_hang, H.ring_wrong_parity, H.ring_counts_from_memory,
                                    H.ring_slots_from_table], ids=lambda k: k.__name__)
def test_the_snapshot_names_who_waits_where_when_a_ring_hangs(kernel, record_property):
    import workbench
    from workbench.compile.snapshot import snapshot_build
    from workbench.run.capture import Capture
    from workbench.run.device import detect
    from workbench.run.isolate import KernelHangError, shared_worker

    shared_worker().ready()
    args, consts = launch_args(kernel, "cuda") if kernel is not K.ring_hang else (
        (x := torch.randn(2 * 8 * 1024, device="cuda"), torch.empty_like(x), x.numel()), K.RING_ARGS)
    with snapshot_build():
        workbench.compile(kernel, *args, **consts)  # compiled before the launch is timed
    [hang] = K.marked_line(kernel, "HANG")
    with pytest.raises(KernelHangError) as err, Capture(device=detect(), timeout=LIMIT_S, snapshot=True):
        t0 = time.perf_counter()
        try:
            kernel[(2,)](*args, **consts)
        finally:
            took = time.perf_counter() - t0
    msg = err.value.message
    print(kernel.__name__, f"{took:.2f} s\n", msg)
    found = [ln for ln in msg.splitlines() if f"wait at line {hang}" in ln]
    record_property("hang", {"kernel": kernel.__name__, "seconds": round(took, 2), "line": hang, "found": found})
    assert "live snapshot" in msg and found and "phase" in found[0], msg
    assert took <= LIMIT_S + 2, took
