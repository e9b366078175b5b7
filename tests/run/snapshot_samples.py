"""A hung launch's live snapshot without a GPU: ``isolation_kernels.ring_hang`` compiled plain and as a snapshot
build, the records its warps would write when the producer waits for a free slot for ever (two CTAs, the
consumer's warps gone), and the Report the magic shows above the hang's error. The records are what the GPU
writes (tests/run/test_isolation_gpu.py and tests/magic/test_hang_report_gpu.py take them from a real hang);
everything else is the real code. Used by tests/run/test_snapshot.py and tests/browser/test_orchestration_tab.py."""

from __future__ import annotations

import functools
from typing import Any

import isolation_kernels as K

from workbench.compile.snapshot import PASSED, WAITING, snapshot_build, snapshot_sites
from workbench.run.snapshot import summary, waiting

HANG_LINE = K.marked_line(K.ring_hang, "HANG")[0]
SNAPSHOT_S = 2.5


@functools.cache
def hang_build() -> tuple[Any, Any]:
    """ring_hang's plain build and its snapshot build."""
    import torch

    import workbench

    x = torch.empty(2 * K.RING_ARGS["TILES"] * K.RING_ARGS["BLOCK"])
    plain = workbench.compile(K.ring_hang, x, x, x.numel(), **K.RING_ARGS)
    with snapshot_build():
        snap = workbench.compile(K.ring_hang, x, x, x.numel(), **K.RING_ARGS)
    return plain, snap


def sites() -> list[Any]:
    _, snap = hang_build()
    return snapshot_sites(snap.stages["ptx"], snap.source.filename, snap.stages["ttgir"]).sites


def hung_rows(model: Any) -> list[dict[str, Any]]:
    """The buffer's summary when every producer warp of two CTAs waits at HANG_LINE (phase 1, barrier 0x408) and
    the consumer's warps got past their last wait and ended."""
    wait = next(s for s in sites() if s.kind == "wait" and s.line == HANG_LINE)
    other = next(s for s in sites() if s.kind == "wait" and s.line != HANG_LINE)
    producer, consumer = model.tasks[0], model.tasks[1]
    wpc = producer.num_warps + consumer.num_warps
    records = [[0, 0, 0, 0] for _ in range(2 * wpc)]
    for cta in range(2):
        for w in range(producer.num_warps):
            records[cta * wpc + w] = [wait.index + 1, 0x408, 1, WAITING]
        for w in range(consumer.num_warps):
            records[cta * wpc + consumer.start_warp + w] = [other.index + 1, 0x400, 1, PASSED]
    return summary(records, wpc)


def hung_report() -> Any:
    """The Report of the hung launch as the magic shows it above the error: its run's snapshot as
    ``run/launching.py`` records it, the static checks' findings."""
    from workbench.analyse.orchestration import build_model
    from workbench.report import Report
    from workbench.run.isolate import static_findings

    plain, _ = hang_build()
    model = build_model(plain)
    run = {"mode": "gpu", "ran": False, "reason": "hung", "grid": [2], "arguments": [], "checks": [],
           "snapshot": {"when_s": SNAPSHOT_S, "waits": waiting(hung_rows(model), sites(), model.tasks)}}
    r = Report.from_artifact(plain, kernel=K.ring_hang, runs=[run])
    r.findings = static_findings(plain, K.ring_hang)
    return r
