"""The live hang snapshot's parts that need no GPU: the snapshot build's PTX (ptxas accepts it: the SASS is there),
its records around every wait loop and named-barrier sync numbered as delays numbers sites, the summary of a
buffer's records and the per-role description a hang's error shows (on a ring whose producer waits for ever).
tests/run/test_isolation_gpu.py runs it on a GPU."""

from __future__ import annotations

import isolation_kernels as K
import pytest

torch = pytest.importorskip("torch")

import snapshot_samples as S  # noqa: E402

from workbench.analyse.orchestration import build_model  # noqa: E402
from workbench.compile.snapshot import (  # noqa: E402
    PASSED,
    SYMBOL,
    WAITING,
    insert_snapshot,
    snapshot_sites,
)
from workbench.run.snapshot import describe  # noqa: E402


def test_the_snapshot_build_is_its_own_compile_and_ptxas_takes_it():
    plain, snap = S.hang_build()
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
    plain, _ = S.hang_build()
    out, _ = insert_snapshot(plain.stages["ptx"])
    lines = out.splitlines()
    i = next(n for n, ln in enumerate(lines) if "mbarrier.try_wait" in ln)
    label = max(n for n in range(i) if lines[n].strip().endswith(":"))
    assert f"state {WAITING}" in "".join(lines[label - 25:label]) and "waitLoop" in lines[label]
    back = next(n for n in range(i, i + 4) if "bra" in lines[n])
    assert f"state {PASSED}" in lines[back + 1]


def test_a_hung_producer_is_described_by_role_line_barrier_and_phase():
    model = build_model(S.hang_build()[0])
    rows = S.hung_rows(model)
    assert rows[0]["state"] == "waiting" and rows[0]["ctas"] == 2 and {r["state"] for r in rows} == {"waiting",
                                                                                                    "passed"}
    [text] = describe(rows, S.sites(), model.tasks, model.line_text)
    assert text.startswith(f"{model.tasks[0].name}: warps 0, 1, 2, 3 of 2 CTA(s) wait at line {S.HANG_LINE}")
    assert "barrier_wait" in text and "0x408, phase 1" in text


def test_the_report_of_a_hung_launch_marks_where_its_warps_waited_on_the_orchestration_graph():
    """What the magic shows above a hang's error (on a GPU: tests/magic/test_hang_report_gpu.py): the run's
    snapshot, and the wait op the producer's warps were blocked in drawn live."""
    from workbench.report import validate

    r = S.hung_report()
    model = build_model(S.hang_build()[0])
    waits = r.runs[-1]["snapshot"]["waits"]
    assert [(w["role"], w["task"], w["warps"], w["ctas"], w["line"]) for w in waits] == [
        (model.tasks[0].name, 0, [0, 1, 2, 3], 2, S.HANG_LINE)]
    d = r.to_dict()
    validate(d)
    p = d["orchestration"]
    [live] = [m for m in p["marks"] if m["source"] == "snapshot"]
    ops = [p["ops"][i] for i in live["ops"]]
    assert live["color"] == "live" and live["line"] == S.HANG_LINE and live["finding"] is None
    assert [(o["kind"], o["task"], o["line"]) for o in ops] == [("wait", 0, S.HANG_LINE)]
    assert live["edges"] and all(p["edges"][e]["op"] in live["ops"] for e in live["edges"])
    assert "warps 0, 1, 2, 3 of 2 CTA(s)" in live["message"] and "2.5 s into the run" in live["message"]


def test_a_stress_runs_telling_delay_is_marked_where_it_slept_and_a_delay_that_told_nothing_is_not():
    from workbench.report import Report
    from workbench.report.orchestration_marks import decorate

    plain, _ = S.hang_build()
    p = Report.from_artifact(plain, kernel=K.ring_hang).to_dict()["orchestration"]
    arrive_line = next(o["line"] for o in p["ops"] if o["kind"] == "arrive")
    stress = {"telling": [
        {"site": f"wait@{S.HANG_LINE}", "delayed_runs": 10, "failed_when_delayed": 0.6, "failed_otherwise": 0.1},
        {"site": f"arrive@{arrive_line}", "delayed_runs": 12, "failed_when_delayed": 0.2, "failed_otherwise": 0.3},
        {"site": "tma@9999", "delayed_runs": 3, "failed_when_delayed": 1.0, "failed_otherwise": 0.0}]}
    marks = [m for m in decorate(p, [], None, None, stress)["marks"] if m["source"] == "stress"]
    assert [(m["color"], m["line"]) for m in marks] == [("delay", S.HANG_LINE)]
    assert {p["ops"][i]["kind"] for i in marks[0]["ops"]} == {"wait"} and "60% of the 10 runs" in marks[0]["message"]
