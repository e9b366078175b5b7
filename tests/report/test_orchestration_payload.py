"""The Report's orchestration payload (workbench.report.orchestration, orchestration_marks): tutorial 04's ring
kernel through real ``%%tlx`` cells (compile only, CPU): its lanes, ring, barrier nodes, edges with the phases
of the first two rounds, the simulated rounds, and each of its four bugs drawn where the checks found it;
and the recorded H200 Report (workbench/report/examples/gpu_h200_ws_coop_gemm.json), whose payload is rebuilt
from its own TTGIR and whose wait edges carry its timeline's measured waits."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("IPython")

from IPython.utils.capture import capture_output  # noqa: E402

from workbench.report import MIME_TYPE, Report, validate  # noqa: E402
from workbench.report.orchestration import from_report, launch_values  # noqa: E402
from workbench.report.orchestration_marks import decorate  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
TUTORIAL = ROOT / "tutorials" / "04-orchestration-checks.ipynb"
GPU_EXAMPLE = ROOT / "workbench" / "report" / "examples" / "gpu_h200_ws_coop_gemm.json"
FIXTURE = ROOT / "extension" / "test" / "fixtures" / "orchestration_h200_ws_coop_gemm.json"


def _shown(ip, cell: str) -> dict:
    """The Report payload a %%tlx cell displays."""
    with capture_output(display=True) as cap:
        assert ip.run_cell(cell).success, cell.splitlines()[0]
    return next(o.data[MIME_TYPE] for o in cap.outputs if MIME_TYPE in o.data)


@pytest.fixture(scope="module")
def tutorial04(ip):
    """The Report payload of each %%tlx cell of tutorial 04 (BUG 0..4), as the magic displays it."""
    code = ["".join(c["source"]) for c in json.loads(TUTORIAL.read_text())["cells"] if c["cell_type"] == "code"]
    assert ip.run_cell(code[0].replace("%load_ext workbench\n", "")).success
    return [_shown(ip, cell) for cell in code if cell.startswith("%%tlx")], code


def _line(cell: str, text: str) -> int:
    """The cell line (the %%tlx line is 1) of the first line containing ``text``."""
    return next(i for i, s in enumerate(cell.splitlines(), 1) if text in s)


def _op(p: dict, kind: str, line: int) -> dict:
    return next(o for o in p["ops"] if o["kind"] == kind and o["line"] == line)


def test_ring_sum_graph_lanes_ring_nodes_edges_and_rounds(tutorial04):
    reports, code = tutorial04
    r = reports[0]
    validate(r)
    p = r["orchestration"]
    cell = next(c for c in code if c.startswith("%%tlx") and "def ring_sum" in c)
    assert p["status"] == "ok" and p["warp_specialized"]
    assert [(t["name"], t["num_warps"], t["region"]) for t in p["tasks"]] == [
        ("the default task", 4, "default"), (f"the task at line {_line(cell, 'num_warps=4):  # consumer')}", 4,
                                             "partition0")]
    assert [(b["name"], b["count"], b["arrive_count"]) for b in p["barriers"]] == [("full", 3, 1), ("empty", 3, 1)]
    ring = p["buffers"][0]
    assert (ring["name"], ring["count"], ring["shape"], ring["dtype"]) == ("bufs", 3, [64, 64], "f16")
    assert (ring["filled_by"], ring["released_by"]) == (0, 1)  # full says a slot holds data, empty that it is free
    wait_empty = _op(p, "wait", _line(cell, "tlx.barrier_wait(empty[s], p ^ 1)"))
    expect = _op(p, "expect", _line(cell, "tlx.barrier_expect_bytes(full[s], TILE_BYTES)"))
    copy = _op(p, "tma_load", _line(cell, "tlx.async_descriptor_load"))
    wait_full = _op(p, "wait", _line(cell, "tlx.barrier_wait(full[s], p)  # data landed?"))
    arrive = _op(p, "arrive", _line(cell, "tlx.barrier_arrive(empty[s])"))
    edges = {(e["kind"], e["op"], e["barrier"]): e for e in p["edges"]}
    assert set(edges) == {("wait", wait_empty["id"], 1), ("expect", expect["id"], 0), ("copy", copy["id"], 0),
                          ("wait", wait_full["id"], 0), ("arrive", arrive["id"], 1)}
    # a fresh barrier has completed phase 1: the producer's first wait on empty passes, then it waits for phase 0
    assert edges[("wait", wait_empty["id"], 1)]["label"] == "phase 1, 0"
    assert edges[("wait", wait_full["id"], 0)]["label"] == "phase 0, 1"
    assert edges[("expect", expect["id"], 0)]["label"] == "expect 8 KiB"
    assert edges[("copy", copy["id"], 0)]["label"] == "copy 8 KiB"
    # 8 tiles through 3 slots: rounds 0 and 1 use every slot, round 2 slots 0 and 1
    assert len(p["rounds"]) == 3 and p["blocked"] == [] and p["simulation"]["finished"] == [0, 1]
    assert p["simulation"]["values"]["K"] == 512
    assert [s["state"] for s in p["rounds"][2]["slots"]] == ["released", "released", "empty"]
    assert sorted((w["op"], w["index"], w["parity"]) for w in p["rounds"][1]["waits"] if w["op"] == wait_full["id"]) \
        == [(wait_full["id"], i, 1) for i in range(3)]
    assert p["marks"] == []


def test_steps_show_each_slot_fill_and_release_in_the_order_the_run_made_them(tutorial04):
    """The step control's payload: slot states that change within a round (a round's end shows every slot of a
    correct ring released, which says nothing of the ring's life)."""
    reports, code = tutorial04
    p = reports[0]["orchestration"]
    cell = next(c for c in code if c.startswith("%%tlx") and "def ring_sum" in c)
    steps = p["steps"]
    # 8 tiles: each fills (filling, full) and is released: 24 steps, in rounds 0..2
    assert len(steps) == 24 and {s["round"] for s in steps} == {0, 1, 2}
    assert [s["state"] for s in steps[:2]] == ["filling", "filling"] or steps[0]["state"] == "filling", steps[:3]
    assert steps[0]["line"] == _line(cell, "tlx.barrier_expect_bytes(full[s], TILE_BYTES)")  # the producer's expect
    released = [s for s in steps if s["state"] == "released"]
    assert {s["line"] for s in released} == {_line(cell, "tlx.barrier_arrive(empty[s])")}
    seen = [tuple(s["states"][0]["states"]) for s in steps]
    assert len(set(seen)) >= 6, seen  # the ring's states change from step to step
    assert any(st.count("full") >= 1 and st.count("filling") + st.count("released") >= 1 for st in seen)
    assert seen[-1] == ("released", "released", "released")
    # bug 1 (the consumer never releases): the ring fills and stays full, no step releases a slot
    bug1 = reports[1]["orchestration"]["steps"]
    assert bug1 and not [s for s in bug1 if s["state"] == "released"]
    assert bug1[-1]["states"][0]["states"] == ["full", "full", "full"]


@pytest.mark.parametrize("bug, rule, color, at, also", [
    (1, "wait-never-completes", "red", ("wait", "tlx.barrier_wait(empty[s], p ^ 1)"), None),
    (2, "first-wait-passes", "orange", ("wait", "BUG 2: the producer's phase"), ("local_load", "tlx.local_load")),
    (3, "expect-bytes", "red", ("expect", "BUG 3"), ("wait", "tlx.barrier_wait(full[s], p)  # data landed?")),
    (4, "read-before-write", "orange", ("local_load", "tlx.local_load"), None),
])
def test_each_bug_is_drawn_where_the_checks_found_it(tutorial04, bug, rule, color, at, also):
    reports, code = tutorial04
    r = reports[bug]
    validate(r)
    p = r["orchestration"]
    cell = next(c for c in code if c.startswith("%%tlx") and "def ring_sum" in c)  # the lines are the kernel's cell's
    mark = next(m for m in p["marks"] if m["rule"] == rule)
    assert mark["color"] == color and r["findings"][mark["finding"]]["rule"] == rule
    assert _op(p, at[0], _line(cell, at[1]))["id"] in mark["ops"]
    if also:
        assert _op(p, also[0], _line(cell, also[1]))["id"] in mark["ops"]
    assert all(p["edges"][e]["op"] in mark["ops"] for e in mark["edges"])
    if color == "red":  # the wait that never completes: its edge is drawn red too
        assert mark["edges"]


def test_bug1_the_run_ends_blocked_with_the_ring_full(tutorial04):
    reports, code = tutorial04
    p = reports[1]["orchestration"]
    cell = next(c for c in code if c.startswith("%%tlx") and "def ring_sum" in c)
    producer_wait = _op(p, "wait", _line(cell, "tlx.barrier_wait(empty[s], p ^ 1)"))
    blocked = {b["op"]: b for b in p["blocked"]}
    assert blocked[producer_wait["id"]]["round"] == 1 and blocked[producer_wait["id"]]["parity"] == 0
    assert [s["state"] for s in p["rounds"][0]["slots"]] == ["full"] * 3  # filled, never released
    assert [s["state"] for s in p["rounds"][1]["slots"]] == ["full"] * 3
    assert any(not w["passed"] and w["op"] == producer_wait["id"] for w in p["rounds"][1]["waits"])
    # its arrow says so: phase 1 passed on the fresh barrier, phase 0 never completes
    assert next(e for e in p["edges"] if e["op"] == producer_wait["id"])["label"] == "phase 1, 0 (blocked)"


def test_a_cell_that_only_compiles_follows_the_loops_with_its_bound_arguments(tutorial04, ip):
    """A cell calling workbench.compile (no launch, no run recorded): the payload's simulation follows the loops
    bounded by K with the cell's bound arguments, as the checks do, in one run shared with them."""
    import workbench.analyse.orchestration_sim as sim

    _, code = tutorial04
    kernel_cell = next(c for c in code if c.startswith("%%tlx") and "def ring_sum" in c)
    body = kernel_cell.split("\n", 1)[1].replace("ring_sum[(1,)](", "workbench.compile(ring_sum, ")
    cell = "%%tlx\n" + body.replace("K, BM=BM", "2 * K, BM=BM")  # values no earlier cell simulated
    runs: list[int] = []
    real_run = sim.Simulator.run
    sim.Simulator.run = lambda self: (runs.append(1), real_run(self))[1]
    try:
        r = _shown(ip, cell)
    finally:
        sim.Simulator.run = real_run
    validate(r)
    assert r["runs"] == []  # it only compiled
    p = r["orchestration"]
    assert p["simulation"]["values"]["K"] == 1024 and p["simulation"]["lost"] == []
    assert p["simulation"]["finished"] == [0, 1] and p["blocked"] == []
    wait_full = _op(p, "wait", _line(kernel_cell, "tlx.barrier_wait(full[s], p)  # data landed?"))
    assert next(e for e in p["edges"] if e["op"] == wait_full["id"])["label"] == "phase 0, 1"
    assert len(p["rounds"]) == 6  # 16 tiles through 3 slots
    assert not any(f["rule"] == "not-followed" for f in r["findings"])
    assert runs == [1]  # the checks and the payload share one simulated run


def test_meta_fa_pingpong_named_barriers_hand_the_turn_between_the_replicas(ip):
    """Meta's FA forward ping-pong (the installed triton-utlx wheel's tutorial): its two consumer replicas take
    turns on the tensor cores through two named barriers; each is a node, one replica's bar.sync waits where
    the other's bar.arrive arrives."""
    assert ip.run_cell("from tlx_kernels import meta_tutorials as meta\n"
                          "case = meta.case('hopper_fa_ws_pipelined_pingpong')").success
    r = _shown(ip, "%%tlx\ncase.kernel[(4, 2, 1)](*case.args, **case.kwargs)")
    validate(r)
    p = r["orchestration"]
    assert p["status"] == "ok" and len(p["tasks"]) == 3 and len(p["rounds"]) == 2 and not p["blocked"]
    named = {b["named"]: b["id"] for b in p["barriers"] if b["named"] is not None}
    assert sorted(named) == [9, 10] and all(p["barriers"][i]["arrive_count"] == 256 for i in named.values())
    by_task: dict[int, set] = {}
    for e in p["edges"]:
        o = p["ops"][e["op"]]
        if o["kind"] in ("named_wait", "named_arrive"):
            by_task.setdefault(o["task"], set()).add((e["kind"], p["barriers"][e["barrier"]]["named"]))
    replicas = [t["index"] for t in p["tasks"] if t["replica"] is not None]
    assert by_task[replicas[0]] == {("wait", 9), ("arrive", 10)}
    assert by_task[replicas[1]] == {("wait", 10), ("arrive", 9)}
    waits = {p["ops"][e["op"]]["line"]: e["label"] for e in p["edges"] if e["kind"] == "wait"}
    assert "bar.sync, 256 threads" in waits.values() and "phase 0" in waits.values()


def test_launch_values_from_the_recorded_arguments():
    runs = [{"grid": [4, 2], "arguments": [
        {"name": "K", "kind": "int", "value": 512}, {"name": "BM", "kind": "constexpr", "value": 64},
        {"name": "scale", "kind": "float", "value": 0.5}, {"name": "EVEN", "kind": "bool", "value": True},
        {"name": "d", "kind": "descriptor", "shape": [64, 512]}, {"name": "x", "kind": "tensor", "shape": [3]}]}]
    assert launch_values(runs) == ({"K": 512, "BM": 64, "EVEN": 1, "d.shape.0": 64, "d.shape.1": 512}, [4, 2])
    assert launch_values([]) == ({}, None)


@pytest.fixture(scope="module")
def recorded():
    report = Report.from_dict(json.loads(GPU_EXAMPLE.read_text()))
    return report, from_report(report)


def test_recorded_h200_report_wait_edges_carry_the_timelines_waits(recorded):
    report, base = recorded
    p = decorate(base, report.findings, report.timeline)
    assert p["status"] == "ok" and [t["role"] for t in p["tasks"]] == ["producer", "consumer.0", "consumer.1"]
    roles = {r["role"]: r["waits"] for r in report.timeline["roles"]}
    names = {b["id"]: b["name"] for b in p["barriers"]}
    waits = [e for e in p["edges"] if e["kind"] == "wait"]
    assert len(waits) == 3
    for e in waits:
        role = p["tasks"][p["ops"][e["op"]]["task"]]["role"]
        want = roles[role][names[e["barrier"]]]
        got = e["measured"]
        assert (got["role"], got["count"], got["mean_ns"], got["p95_ns"]) == \
            (role, want["count"], want["mean_ns"], want["p95_ns"])
    slowest = [e for e in waits if e.get("slowest")]
    assert len(slowest) == 1 and slowest[0]["measured"]["role"] == "producer"  # 373 ns per wait on `empty`
    assert p["measured"]["device"] == "NVIDIA H200" and p["measured"]["measured_by"] == "workbench.measure.timeline"
    assert decorate(p, report.findings, report.timeline) == p  # idempotent
    report.orchestration = base
    report.schema_version = "2.3"
    report.validate()


def test_the_viewers_fixture_is_this_payload(recorded):
    """extension/test/fixtures holds the recorded Report's payload, decorated, for the vitest tests: it is
    what this code makes of the recorded Report (rewrite it with
    `python tests/report/test_orchestration_payload.py`)."""
    report, base = recorded
    want, got = json.loads(FIXTURE.read_text())["orchestration"], _fixture(report, base)["orchestration"]
    assert want == got  # the run's budget is a step count: the same payload on any machine, however loaded


def test_a_ring_with_more_slots_than_barriers_pairs_them_by_the_runs_copies(recorded):
    """The GEMM's a_bufs: 8 half-tiles (slot i the top, 4 + i the bottom of stage i) on 4 full / empty barriers;
    the copies the run made pair slots i and 4 + i with barrier i, so its slots have states round by round.
    c_bufs (the epilogue's, announced by no barrier to a task that reads it) is no ring and says nothing."""
    _, p = recorded
    bufs = {b["name"]: b for b in p["buffers"]}
    names = {b["id"]: b["name"] for b in p["barriers"]}
    a = bufs["a_bufs"]
    assert (a["count"], names[a["filled_by"]], names[a["released_by"]]) == (8, "full", "empty")
    assert a["slot_barriers"] == [0, 1, 2, 3, 0, 1, 2, 3] and a["unpaired"] is None
    assert bufs["b_bufs"]["slot_barriers"] == [0, 1, 2, 3]
    assert (bufs["c_bufs"]["filled_by"], bufs["c_bufs"]["unpaired"]) == (None, None)
    for r in p["rounds"]:
        states = [s["state"] for s in r["slots"] if s["buffer"] == a["id"]]
        assert len(states) == 8 and states[:4] == states[4:]  # the two halves of a stage go together


def _fixture(report: Report, base: dict) -> dict:
    p = decorate(base, report.findings, report.timeline)
    p["simulation"].pop("seconds")  # how long the simulation took here, not what it found
    return {"source": report.kernel["source"]["text"], "orchestration": p}


if __name__ == "__main__":
    rep = Report.from_dict(json.loads(GPU_EXAMPLE.read_text()))
    FIXTURE.parent.mkdir(parents=True, exist_ok=True)
    FIXTURE.write_text(json.dumps(_fixture(rep, from_report(rep)), indent=1) + "\n")
    print(f"{FIXTURE.relative_to(ROOT)}: {FIXTURE.stat().st_size / 1024:.1f} KiB")


def test_a_wait_label_says_whether_the_run_reached_it():
    """A wait with no simulated pass is "not simulated" when its task was not followed (a loop on values known only
    at launch, tutorial 05's grouped kernel), "never passed" only when the run went on without it."""
    from workbench.report.orchestration import _phase_label

    assert _phase_label([[0], [1]]) == "phase 0, 1"
    assert _phase_label([[1]], {"parity": 0}) == "phase 1, 0 (blocked)"
    assert _phase_label([], None, task_lost=True) == "not simulated"
    assert _phase_label([], None, task_lost=False) == "never passed"
