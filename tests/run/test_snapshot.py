"""The live hang snapshot's parts that need no GPU: the snapshot build's PTX (ptxas accepts it: the SASS is there),
its records around every wait loop and named-barrier sync numbered as delays numbers sites, the summary of a
buffer's records and the per-role description a hang's error shows (on a ring whose producer waits for ever).
tests/run/test_isolation_gpu.py runs it on a GPU."""

from __future__ import annotations

import functools

import isolation_kernels as K
import pytest

torch = pytest.importorskip("torch")

from workbench.analyse.orchestration import build_model  # noqa: E402
from workbench.compile.snapshot import (  # noqa: E402
    PASSED,
    SYMBOL,
    WAITING,
    insert_snapshot,
    snapshot_build,
    snapshot_sites,
)
from workbench.run.snapshot import describe, summary  # noqa: E402


@functools.cache
def hang_build():
    import workbench

    x = torch.empty(2 * K.RING_ARGS["TILES"] * K.RING_ARGS["BLOCK"])
    plain = workbench.compile(K.ring_hang, x, x, x.numel(), **K.RING_ARGS)
    with snapshot_build():
        snap = workbench.compile(K.ring_hang, x, x, x.numel(), **K.RING_ARGS)
    return plain, snap


def test_the_snapshot_build_is_its_own_compile_and_ptxas_takes_it():
    plain, snap = hang_build()
    assert snap.key != plain.key and SYMBOL in snap.stages["ptx"] and SYMBOL not in plain.stages["ptx"]
    # the records: volatile 16-byte stores at system scope (the GPU writes the host's pinned memory)
    assert "STG.E.128.STRONG.SYS" in snap.stages["sass"] and "STRONG.SYS" not in plain.stages["sass"]
    _, done = insert_snapshot(plain.stages["ptx"])
    sites = snapshot_sites(snap.stages["ptx"], snap.source.filename, snap.stages["ttgir"]).sites
    waits = [s for s in sites if s.kind == "wait"]
    assert len(waits) == 2 and set(done) >= {s.index for s in waits}
    [hang_line] = K.marked_line(K.ring_hang, "HANG")
    assert hang_line in {s.line for s in waits}


def test_each_wait_loop_is_wrapped_waiting_before_its_label_and_passed_after_its_branch_back():
    plain, _ = hang_build()
    out, _ = insert_snapshot(plain.stages["ptx"])
    lines = out.splitlines()
    i = next(n for n, ln in enumerate(lines) if "mbarrier.try_wait" in ln)
    label = max(n for n in range(i) if lines[n].strip().endswith(":"))
    assert f"state {WAITING}" in "".join(lines[label - 25:label]) and "waitLoop" in lines[label]
    back = next(n for n in range(i, i + 4) if "bra" in lines[n])
    assert f"state {PASSED}" in lines[back + 1]


def test_a_hung_producer_is_described_by_role_line_barrier_and_phase():
    plain, snap = hang_build()
    model = build_model(plain)
    sites = snapshot_sites(snap.stages["ptx"], snap.source.filename, snap.stages["ttgir"]).sites
    [hang_line] = K.marked_line(K.ring_hang, "HANG")
    wait = next(s for s in sites if s.kind == "wait" and s.line == hang_line)
    other = next(s for s in sites if s.kind == "wait" and s.line != hang_line)
    producer, consumer = model.tasks[0], model.tasks[1]
    wpc = producer.num_warps + consumer.num_warps
    records = [[0, 0, 0, 0] for _ in range(2 * wpc)]
    for cta in range(2):
        for w in range(producer.num_warps):  # the producer waits for a free slot, for ever
            records[cta * wpc + w] = [wait.index + 1, 0x408, 1, WAITING]
        for w in range(consumer.num_warps):  # the consumer got past its waits and ended
            records[cta * wpc + consumer.start_warp + w] = [other.index + 1, 0x400, 1, PASSED]
    rows = summary(records, wpc)
    assert rows[0]["state"] == "waiting" and rows[0]["ctas"] == 2
    [text] = describe(rows, sites, model.tasks, model.line_text)
    assert text.startswith(f"{producer.name}: warps 0, 1, 2, 3 of 2 CTA(s) wait at line {hang_line}")
    assert "barrier_wait" in text and "0x408, phase 1" in text
