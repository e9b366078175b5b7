"""CPU tests of the timeline analysis (workbench.measure.timeline).

Trace data:
- ``synth.make_trace()``: SYNTHETIC, generated here in Triton 3.8 libproton's exact chrome-trace form
  with the workbench's scope names (exact cycle counts, so numbers can be checked);
- ``data/ws_gemm_trace.json.gz``: REAL, a CTA sample of the retired lowering's WS GEMM timeline
  recorded on an H200 with Triton 3.6's Proton (older format, older scope names): the reader keeps
  reading it; the H200 trace of the real-TLX kernels (bench/timeline_kernels.py) joins it later.
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))

import synth  # noqa: E402

from workbench.measure.timeline import (  # noqa: E402
    ModeSpec,
    aggregated_lanes,
    analyze,
    figure,
    lane_rows,
    parse_scope_name,
    read_trace,
    to_perfetto,
    trace_clock,
    write_proton_trace,
)
from workbench.measure.timeline.drops import dropped_events  # noqa: E402

REAL_36 = HERE / "data" / "ws_gemm_trace.json.gz"
ROLES = ["producer", "consumer.0", "consumer.1"]


@pytest.fixture(scope="module")
def synthetic():
    return synth.make_trace(n_ctas=8, tiles=2, num_k=8, n_sms=4)


# -- parsing -----------------------------------------------------------------------------------------


def test_scope_names_parse_into_role_activity_detail():
    assert parse_scope_name("producer/wait:empty", 0) == ("producer", "wait", "empty")
    assert parse_scope_name("consumer.1/mma_wait", 8) == ("consumer.1", "mma_wait", None)
    assert parse_scope_name("load_a", 5) == ("wg1", "load_a", None)  # a user's own scope: warpgroup as role


def test_synthetic_trace_parses_to_exact_cycles(synthetic):
    tr = read_trace(synthetic)
    assert tr.kernel == synth.KERNEL and tr.ctas == list(range(8))
    assert tr.roles() == ROLES
    assert tr.role_warps() == {"producer": [0], "consumer.0": [4], "consumer.1": [8]}
    for cta in tr.ctas:  # per CTA, the first event starts at cycle 0
        assert min(e.start for e in tr.events if e.cta == cta) == 0
    mma = [e for e in tr.events if e.activity == "mma"]
    assert len(mma) == 8 * 2 * 2 * 8 and all(e.dur == 60 for e in mma)
    loads = [e for e in tr.events if e.activity == "tma_load"]
    assert len(loads) == 8 * 2 * 8 and all(e.dur == 90 for e in loads)
    # CTA starts are globaltimer ns: 50 ns apart on the 4 SMs of a wave, 400 us between waves
    assert tr.cta_start_ns[1] == pytest.approx(50, abs=0.5)
    assert tr.cta_start_ns[4] == pytest.approx(400_000, abs=1)
    assert tr.cta_core == {c: c % 4 for c in range(8)}
    assert tr.cta_init_ns[0][2] == 2000  # Proton 3.8's finalization time


def test_clock_from_the_trace_and_units(synthetic):
    tr = read_trace(synthetic)
    est = trace_clock(tr)
    assert est == pytest.approx(synth.MHZ, rel=0.02) and est <= synth.MHZ * 1.001  # a lower bound
    assert tr.ns(2000) == 2000  # not measured: Proton's 1 GHz
    tl = analyze(tr)  # no measured clock: the trace's own estimate is used, and said so
    assert tl.clock.mhz == pytest.approx(est) and "lower bound" in tl.clock.source
    rows = lane_rows(tr, ctas=[0])
    mma = next(r for r in rows if r["name"].endswith("/mma"))
    assert mma["dur_ns"] == pytest.approx(60 * 1000 / est) and mma["cycles"] == 60


def test_gz_and_array_forms(tmp_path, synthetic):
    p = tmp_path / "t.chrome_trace.gz"
    p.write_bytes(gzip.compress(json.dumps(synthetic).encode()))
    assert len(read_trace(p).events) == len(synthetic["traceEvents"])
    q = tmp_path / "t.json"
    q.write_text(json.dumps(synthetic["traceEvents"]))
    assert len(read_trace(q).events) == len(synthetic["traceEvents"])


def test_sample_round_trips_in_protons_format(tmp_path, synthetic):
    tr = read_trace(synthetic)
    tr.clock_mhz, tr.clock_source = 1755.0, "test"
    p = write_proton_trace(tr, tmp_path / "s.json.gz", ctas=[0, 5])
    back = read_trace(p)
    assert back.ctas == [0, 5] and back.total_ctas == 8 and back.clock_mhz == 1755.0
    key = lambda e: (e.cta, e.warp, e.name, e.start, e.dur)  # noqa: E731
    assert sorted(map(key, back.events)) == sorted(key(e) for e in tr.events if e.cta in (0, 5))
    assert back.cta_start_ns[5] - back.cta_start_ns[0] == pytest.approx(tr.cta_start_ns[5] - tr.cta_start_ns[0], abs=1)
    assert back.cta_init_ns == {c: tr.cta_init_ns[c] for c in (0, 5)}


# -- stats ---------------------------------------------------------------------------------------------


def test_role_stats_on_synthetic(synthetic):
    tr = read_trace(synthetic)
    tr.clock_mhz = 1000.0
    tl = analyze(tr)
    assert {r.role: r.kind for r in tl.roles} == {"producer": "producer", "consumer.0": "consumer",
                                                  "consumer.1": "consumer"}
    for r in tl.roles:
        assert r.ctas == 8
        assert sum(r.shares.values()) == pytest.approx(1.0)
        waits = sum(r.shares.get(c, 0) for c in ("waiting", "mma_wait", "store_wait"))
        assert r.busy_fraction == pytest.approx(1 - waits)
        assert r.waiting_fraction == pytest.approx(sum(w["fraction"] for w in r.waits.values()))
        assert r.iterations["count"] == 8 * (2 * 8 - 1)  # successive waits on the main barrier, 16 k-steps
        ph = r.phases_ns
        assert ph["prologue"] + ph["steady"] + ph["epilogue"] == pytest.approx(r.span_ns, rel=1e-6)
    p = tl.role("producer")
    assert set(p.waits) == {"empty"} and p.waits["empty"]["count"] == 8 * 16
    assert p.shares["tma"] == pytest.approx(p.issuing_fraction)
    c = tl.role("consumer.0")
    assert set(c.waits) == {"full"} and c.iterations["barrier"] == "full"
    assert c.shares["mma_wait"] > 0.5 and c.shares["epilogue"] > 0 and c.shares["store_wait"] > 0
    assert c.shares["untracked"] > 0  # the 700-cycle conversion before each epilogue has no scope
    assert c.issuing_fraction == pytest.approx(c.shares["mma"] + c.shares["epilogue"])
    assert 0 < c.iterations["p50_ns"] <= c.iterations["p95_ns"]
    assert tl.skew["first_wave_spread_ns"] == pytest.approx(150, abs=1)
    assert not tl.dropped["detected"]


def test_overlaps_on_synthetic(synthetic):
    tl = analyze(read_trace(synthetic))
    assert tl.overlap["consumer.0"]["consumer.1"] > 0.5  # the cooperative consumers issue in lockstep
    pc = tl.producer_consumer["producer"]
    assert set(pc) == {"consumer.0", "consumer.1"} and all(0 < v <= 1 for v in pc.values())
    assert set(tl.epilogue_overlap) == {"consumer.0", "consumer.1"}  # the producer has no epilogue
    e = tl.epilogue_overlap["consumer.0"]
    # during one consumer's epilogue the other stores too: little MMA under it
    assert e["consumer.1"]["mma"] < 0.2 and 0 <= e["producer"]["busy"] <= 1


def test_dropped_events_detected_with_advice():
    d = analyze(read_trace(synth.make_trace(drop_first=5))).dropped
    assert d["detected"] and d["warps_missing_task_scope"] == 1 and d["short_scope_counts"] >= 1
    assert "events_per_warp" in d["advice"]
    line = "Warning (cta3, warp4): first 120 events are dropped due to insufficient buffer size (1024/1144)"
    d2 = dropped_events(None, ["noise", line])
    assert d2["detected"] and d2["dropped_events"] == 120 and "at least 572" in d2["advice"]  # 1144 records


def test_capacity_of_the_buffer_counts_as_a_warning(synthetic):
    tr = read_trace(synthetic)
    per_warp = max(sum(1 for e in tr.events if e.cta == 0 and e.warp == w) for w in (0, 4, 8))
    d = dropped_events(tr, None, capacity_events_per_warp=per_warp)
    assert d["warps_at_capacity"] >= 1 and not d["detected"]


# -- chart, export, report ------------------------------------------------------------------------------


def test_gantt_figure_lanes_and_colours(synthetic):
    fig = figure(read_trace(synthetic), ctas=[0, 7])
    assert len({y for t in fig.data for y in t.y}) == 2 * 3
    assert {t.name for t in fig.data} >= {"waiting on a barrier", "TMA issue", "MMA issue", "waiting for MMA",
                                          "epilogue store"}
    assert "1000 MHz assumed" in fig.layout.xaxis.title.text


def test_perfetto_export_uses_measured_clock(tmp_path, synthetic):
    tr = read_trace(synthetic)
    tr.clock_mhz = 2000.0
    doc = json.loads(to_perfetto(tr, tmp_path / "x.json", ctas=[0]).read_text())
    names = {e["args"]["name"] for e in doc["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"}
    assert names == set(ROLES)
    mma = next(e for e in doc["traceEvents"] if e["ph"] == "X" and e["name"].endswith("/mma"))
    assert mma["dur"] == pytest.approx(0.030) and mma["args"]["cycles"] == 60


def test_the_reports_lanes_make_the_same_trace_layout_as_the_whole_export():
    """``chart.lanes_trace`` (the Timeline tab's download, ``view.trace``): each lane a complete event, process =
    CTA, thread = role (named in the order met), ts/dur in us, the cycles kept; a lane without a time is left out;
    the layout is :func:`chart.chrome_trace`'s, as ``to_perfetto``'s."""
    from workbench.measure.timeline.chart import lanes_trace

    section = dict(kernel="gemm", measured_by="workbench.measure.timeline", device="NVIDIA H200", lanes=[
        dict(cta=3, role="producer", category="tma", name="load", start_ns=1500, dur_ns=500, cycles=900),
        dict(cta=3, role="consumer", category="waiting", name="wait full", start_ns=2000, dur_ns=250, cycles=450),
        dict(cta=7, role="consumer", category="mma", name="wgmma", start_ns=3000, dur_ns=1000),
        dict(cta=7, role="consumer", category="mma", name="no time", start_ns=None, dur_ns=1)])
    trace = lanes_trace(section)
    assert [e for e in trace["traceEvents"] if e["ph"] == "X"] == [
        dict(ph="X", name="load", cat="tma", pid=3, tid=0, ts=1.5, dur=0.5, args=dict(cycles=900)),
        dict(ph="X", name="wait full", cat="waiting", pid=3, tid=1, ts=2.0, dur=0.25, args=dict(cycles=450)),
        dict(ph="X", name="wgmma", cat="mma", pid=7, tid=1, ts=3.0, dur=1.0, args=dict(cycles=None))]
    names = [(e["pid"], e.get("tid"), e["args"]["name"]) for e in trace["traceEvents"]
             if e["ph"] == "M" and e["name"] in ("process_name", "thread_name")]
    assert names == [(3, None, "CTA 3"), (3, 0, "producer"), (3, 1, "consumer"),
                     (7, None, "CTA 7"), (7, 0, "producer"), (7, 1, "consumer")]
    assert trace["displayTimeUnit"] == "ns" and trace["otherData"]["kernel"] == "gemm"
    assert lanes_trace(dict(lanes=[])) is None


def test_aggregated_lanes_are_compact_and_cover_the_span(synthetic):
    tr = read_trace(synth.make_trace(n_ctas=4, tiles=6, num_k=32))
    rows = aggregated_lanes(tr, max_ctas=2, bins=50)
    assert {r["cta"] for r in rows} == {0, 3} and {r["role"] for r in rows} == set(ROLES)
    for cta in (0, 3):
        for role in ROLES:
            lane = [r for r in rows if r["cta"] == cta and r["role"] == role]
            assert 1 <= len(lane) <= 50 < sum(1 for e in tr.events if e.cta == cta and e.role == role)
            span = next(e for e in tr.events if e.cta == cta and e.role == role and e.activity == "task")
            assert sum(r["dur_ns"] for r in lane) == pytest.approx(tr.ns(span.dur), rel=1e-3)
    cons = [r for r in rows if r["role"] == "consumer.0"]
    assert max(cons, key=lambda r: r["dur_ns"])["name"] == "mma_wait"  # what the consumer mostly does


def test_report_payload_is_json_small_and_fits_the_schema(synthetic):
    import jsonschema

    from workbench.report.report import load_schema

    tl = analyze(read_trace(synth.make_trace(n_ctas=16, tiles=4, num_k=32)))
    tl.timing = {"plain": {"median_ms": 1.0}, "instrumented": {"median_ms": 1.05}, "overhead": 0.05}
    payload = {"kind": "timeline", "status": "ok", "reason": None, "measured_by": "workbench.measure.timeline",
               "device": "test", "when": None, **tl.to_dict()}
    text = json.dumps(payload)
    assert len(text) < 100_000 and payload["events"] > 3000  # aggregated, not raw events
    schema = load_schema()
    jsonschema.validate(json.loads(text), {"$defs": schema["$defs"], **schema["properties"]["timeline"]})
    assert [r["role"] for r in payload["roles"]] == ROLES and payload["overhead"] == 0.05
    assert payload["clock"]["trace_mhz"] and payload["producer_consumer"] and payload["epilogue_overlap"]


def test_overhead_over_ten_percent_is_a_warning_naming_a_lighter_level(synthetic):
    tl = analyze(read_trace(synth.make_trace(n_ctas=4, tiles=2, num_k=8)))
    tl.instrumentation = {"level": "fine", "roles": []}
    tl.timing = {"overhead": 0.05}
    assert not tl.overhead_warnings()
    tl.timing = {"overhead": 0.317}  # Meta's FA persistent ping-pong at level fine on the H200
    (w,) = tl.overhead_warnings()
    assert "+31.7% at level fine" in w and "--timeline waits" in w
    assert w in tl.to_dict()["warnings"]
    tl.instrumentation["level"] = "task"
    assert "--timeline" not in tl.overhead_warnings()[0]  # nothing lighter than whole roles


def test_no_gpu_is_a_clear_error():
    import torch

    from workbench.measure import GPURequiredError
    from workbench.measure.timeline import timeline_of

    if torch.cuda.is_available():
        pytest.skip("has a GPU")
    with pytest.raises(GPURequiredError):
        timeline_of(lambda: None)


def test_mode_spec_rounds_segments_to_powers_of_two():
    s = ModeSpec(buffer_size=3000, sampled_warps=(0, 4, 8))
    assert "buffer_size=3072" in str(s.mode()) and "sampling_options=0,4,8" in str(s.mode())
    assert s.capacity_events_per_warp() == 64
    assert ModeSpec().capacity_events_per_warp() == 1024
    assert ModeSpec().to_dict()["granularity"] == "warp"


# -- the real H200 trace (Proton 3.6, the retired lowering) ---------------------------------------------


def test_real_36_trace_still_reads():
    tr = read_trace(REAL_36)
    assert tr.clock_mhz and 800 < tr.clock_mhz < 2500  # measured on the H200
    assert tr.cta_init_ns == {}  # Proton 3.6 wrote no init times
    tl = analyze(tr)
    assert len(tl.roles) == 3 and not tl.dropped["detected"]
    for r in tl.roles:
        assert 0 < r.busy_fraction <= 1 and r.iterations["count"] > 0


# -- real H200 traces of the real-TLX kernels (bench/timeline_kernels.py writes them; skipped until committed) --


@pytest.mark.parametrize("name", ["ws_cooperative", "ws_pingpong", "fa_pingpong"])
def test_real_38_traces(name):
    path = HERE / "data" / f"{name}.json.gz"
    if not path.exists():
        pytest.skip(f"{path.name}: not recorded on the H200 yet (bench/timeline_kernels.py)")
    tr = read_trace(path)
    assert tr.cta_init_ns and tr.clock_mhz and 800 < tr.clock_mhz < 2500
    tl = analyze(tr)
    assert [r.role for r in tl.roles] == ROLES
    assert {r.role: r.kind for r in tl.roles} == {"producer": "producer", "consumer.0": "consumer",
                                                  "consumer.1": "consumer"}
    assert 0.5 < trace_clock(tr) / tr.clock_mhz <= 1.02  # the in-trace estimate is a lower bound
    for r in tl.roles:
        assert 0 < r.busy_fraction <= 1 and r.waits and r.iterations["count"] > 0
    for (_cta, role), evs in tr.lanes().items():
        acts = {e.activity for e in evs}
        assert {"task", "wait"} <= acts and ({"tma_load"} if role == "producer" else {"mma", "mma_wait"}) <= acts
    assert not tl.dropped["detected"]
