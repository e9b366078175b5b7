"""CPU tests of workbench.measure.timeline.

Trace data:
- ``synth.make_trace()``: SYNTHETIC, generated here in libproton 3.6's exact chrome-trace form;
- ``data/ws_gemm_trace.json.gz``: REAL, a CTA sample of the ws_gemm timeline recorded on an H200 by
  bench/timeline_ws_gemm.py (the tests that need it skip until it is committed).
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tlx"))

import synth  # noqa: E402

from workbench.measure.timeline import (  # noqa: E402
    analyze,
    figure,
    instrumentation,
    lane_rows,
    parse_scope_name,
    read_trace,
    to_perfetto,
    write_proton_trace,
)
from workbench.measure.timeline.stats import dropped_events  # noqa: E402

REAL = HERE / "data" / "ws_gemm_trace.json.gz"
needs_real = pytest.mark.skipif(
    not REAL.exists(), reason="real H200 trace not recorded yet (bench/timeline_ws_gemm.py)"
)


@pytest.fixture(scope="module")
def synthetic():
    return synth.make_trace(n_ctas=8, num_k=16, n_sms=4)


# -- parsing -----------------------------------------------------------------------------------------


def test_scope_names_parse_into_role_activity_detail():
    assert parse_scope_name("default/wait:empty", 0) == ("default", "wait", "empty")
    assert parse_scope_name("consumer1/mma", 8) == ("consumer1", "mma", None)
    # a plain Gluon kernel's own pl.scope names: the warpgroup is the role
    assert parse_scope_name("load_a", 5) == ("wg1", "load_a", None)


def test_synthetic_trace_parses_to_exact_cycles(synthetic):
    tr = read_trace(synthetic)
    assert tr.kernel == "ws_gemm_kernel"
    assert tr.ctas == list(range(8))
    assert tr.roles() == ["default", "task1_0", "task1_1"]
    assert tr.role_warps() == {"default": [0], "task1_0": [4], "task1_1": [8]}
    # the generator's cycles come back exactly: per CTA, the first event starts at 0
    for cta in tr.ctas:
        assert min(e.start for e in tr.events if e.cta == cta) == 0
    mma = [e for e in tr.events if e.activity == "mma"]
    assert mma and all(e.dur == 60 for e in mma)
    loads = [e for e in tr.events if e.activity == "tma_load"]
    assert len(loads) == 8 * 16 * 3 and all(e.dur == 30 for e in loads)
    # CTA starts are globaltimer ns: 50 ns apart on the 4 SMs of a wave, 40 us between waves
    assert tr.cta_start_ns[1] == pytest.approx(50, abs=0.5)
    assert tr.cta_start_ns[4] == pytest.approx(40_000, abs=1)
    assert tr.cta_core == {c: c % 4 for c in range(8)}


def test_clock_turns_cycles_into_ns(synthetic):
    tr = read_trace(synthetic)
    assert tr.ns(2000) == 2000  # not measured: Proton's 1 GHz
    tr.clock_mhz = 2000.0
    assert tr.ns(2000) == 1000
    rows = lane_rows(tr, ctas=[0])
    mma = next(r for r in rows if r["name"].endswith("/mma"))
    assert mma["dur_ns"] == pytest.approx(30.0) and mma["cycles"] == 60


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
    assert back.ctas == [0, 5] and back.total_ctas == 8
    assert back.clock_mhz == 1755.0
    key = lambda e: (e.cta, e.warp, e.name, e.start, e.dur)  # noqa: E731
    assert sorted(map(key, back.events)) == sorted(key(e) for e in tr.events if e.cta in (0, 5))
    assert back.cta_start_ns[5] - back.cta_start_ns[0] == pytest.approx(tr.cta_start_ns[5] - tr.cta_start_ns[0], abs=1)


# -- stats ---------------------------------------------------------------------------------------------


def test_role_stats_on_synthetic(synthetic):
    tr = read_trace(synthetic)
    tr.clock_mhz = 1000.0
    tl = analyze(tr)
    kinds = {r.role: r.kind for r in tl.roles}
    assert kinds == {"default": "producer", "task1_0": "consumer", "task1_1": "consumer"}
    for r in tl.roles:
        assert r.ctas == 8
        assert r.busy_fraction + r.waiting_fraction == pytest.approx(1.0)
        assert sum(r.shares.values()) == pytest.approx(1.0)
        assert r.iterations["count"] == 8 * 15  # successive main-loop waits, 16 k-steps per CTA
        ph = r.phases_ns
        assert ph["prologue"] + ph["steady"] + ph["epilogue"] == pytest.approx(r.span_ns, rel=1e-6)
    p = tl.role("default")
    assert p.iterations["barrier"] == "empty" and set(p.waits) == {"empty"}
    c = tl.role("task1_0")
    assert c.iterations["barrier"] == "full"
    assert c.shares["mma"] > 0.5 and c.shares["epilogue"] > 0
    assert 0 < c.iterations["p50_ns"] <= c.iterations["p95_ns"]
    # the consumers work in lockstep, the producer mostly runs ahead
    assert tl.overlap["task1_0"]["task1_1"] > 0.9
    assert 0 <= tl.overlap["default"]["task1_0"] <= 1
    assert tl.skew["first_wave_spread_ns"] == pytest.approx(150, abs=1)
    assert not tl.dropped["detected"]


def test_dropped_events_detected_with_advice():
    tr = read_trace(synth.make_trace(drop_first=5))
    d = analyze(tr).dropped
    assert d["detected"] and d["warps_missing_task_scope"] == 1 and d["short_scope_counts"] >= 1
    assert "buffer_size" in d["advice"] and "sampled_warps" in d["advice"]
    line = "Warning (cta3, warp4): first 120 events are dropped due to insufficient buffer size (1024/1144)"
    d2 = dropped_events(None, ["noise", line])
    assert d2["detected"] and d2["dropped_events"] == 120 and "1144" in d2["advice"]


# -- chart, export, report --------------------------------------------------------------------------------


def test_gantt_figure_lanes_and_colours(synthetic):
    tr = read_trace(synthetic)
    fig = figure(tr, ctas=[0, 7])
    lanes = {y for t in fig.data for y in t.y}
    assert len(lanes) == 2 * 3
    assert {t.name for t in fig.data} >= {"waiting on a barrier", "TMA issue", "MMA (issue and wait)", "epilogue store"}
    assert "1000 MHz assumed" in fig.layout.xaxis.title.text
    assert fig.layout.barmode == "overlay"


def test_perfetto_export_uses_measured_clock(tmp_path, synthetic):
    tr = read_trace(synthetic)
    tr.clock_mhz = 2000.0
    p = to_perfetto(tr, tmp_path / "x.json", ctas=[0])
    doc = json.loads(p.read_text())
    names = {e["args"]["name"] for e in doc["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"}
    assert names == {"default", "task1_0", "task1_1"}
    mma = next(e for e in doc["traceEvents"] if e["ph"] == "X" and e["name"].endswith("/mma"))
    assert mma["dur"] == pytest.approx(0.030) and mma["args"]["cycles"] == 60


def test_report_payload_is_json_and_fits_the_schema(synthetic):
    import jsonschema

    from workbench.report.report import load_schema

    tl = analyze(read_trace(synthetic))
    payload = {
        "kind": "timeline",
        "status": "ok",
        "reason": None,
        "measured_by": "workbench.measure.timeline",
        "device": "test",
        "when": None,
        **tl.to_dict(),
    }
    text = json.dumps(payload)
    assert len(text) < 1_000_000
    schema = load_schema()
    sub = {"$defs": schema["$defs"], **schema["properties"]["timeline"]}
    jsonschema.validate(json.loads(text), sub)
    assert payload["roles"][0]["role"] == "default" and payload["lanes"]


def test_no_gpu_is_a_clear_error():
    import torch

    from workbench.measure import GPURequiredError
    from workbench.measure.timeline import timeline_of

    if torch.cuda.is_available():
        pytest.skip("has a GPU")
    with pytest.raises(GPURequiredError):
        timeline_of(lambda: None)


# -- the TLX timeline build ---------------------------------------------------------------------------------


def _scopes(ttgir: str) -> set[str]:
    import re

    return set(re.findall(r'proton.record (?:start|end) "([^"]+)"', ttgir))


@pytest.fixture(scope="module")
def ws_builds():
    import tlx_examples as E

    args, kw = E.ws_example_args()
    plain = E.ws_gemm_kernel.compile_for(args, kw)
    with instrumentation() as mode:
        instr = E.ws_gemm_kernel.compile_for(args, {**kw, "instrumentation_mode": mode})
    return plain, instr


def test_ws_gemm_timeline_build_has_role_scopes(ws_builds):
    plain, instr = ws_builds
    assert _scopes(plain.asm["ttgir"]) == set()
    assert plain.metadata.profile_scratch_size == 0
    got = _scopes(instr.asm["ttgir"])
    assert {"default/task", "default/wait:empty", "default/tma_load"} <= got
    for c in ("task1_0", "task1_1"):
        assert {f"{c}/task", f"{c}/wait:full", f"{c}/mma", f"{c}/mma_wait", f"{c}/tma_store", f"{c}/store_wait"} <= got
    assert instr.metadata.profile_scratch_size > 0
    ptx = instr.asm["ptx"]
    assert "%globaltimer" in ptx and "%clock" in ptx  # Proton's CTA start stamp and cycle reads
    assert instr.hash != plain.hash


def test_async_task_name_keyword_names_roles():
    import named_kernels as NK

    args, kw = NK.example_args()
    with instrumentation() as mode:
        ck = NK.named_pipeline.compile_for(args, {**kw, "instrumentation_mode": mode})
    got = _scopes(ck.asm["ttgir"])
    assert {"producer/task", "producer/wait:empty", "consumer0/task", "consumer1/wait:full"} <= got


def test_async_task_name_must_be_an_identifier():
    import named_kernels as NK
    from workbench.tlx import TLXCompileError

    args, kw = NK.example_args()
    with pytest.raises(TLXCompileError, match="name= must be a Python identifier"):
        NK.bad_name.compile_for(args, kw)


# -- the real H200 trace ------------------------------------------------------------------------------


@needs_real
def test_real_trace_roles_and_activities():
    tr = read_trace(REAL)
    assert tr.clock_mhz and 800 < tr.clock_mhz < 2500  # measured on the H200
    tl = analyze(tr)
    kinds = {r.role: r.kind for r in tl.roles}
    producers = [r for r, k in kinds.items() if k == "producer"]
    consumers = [r for r, k in kinds.items() if k == "consumer"]
    assert len(producers) == 1 and len(consumers) == 2
    lanes = tr.lanes()
    for (_cta, role), evs in lanes.items():
        acts = {(e.activity, e.detail) for e in evs}
        if role in producers:
            assert ("wait", "empty") in acts and ("tma_load", None) in acts
        else:
            assert ("wait", "full") in acts and ("mma", None) in acts
    for r in tl.roles:
        assert 0 < r.busy_fraction <= 1 and r.iterations["count"] > 0
    assert not tl.dropped["detected"]
    fig = figure(tr)
    assert len({y for t in fig.data for y in t.y}) == len(lanes)


def test_mode_spec_rounds_segments_to_powers_of_two():
    from workbench.measure.timeline import ModeSpec

    s = ModeSpec(buffer_size=3000, sampled_warps=(0, 4, 8))
    assert "buffer_size=3072" in str(s.mode()) and "sampling_options=0,4,8" in str(s.mode())
    assert s.capacity_events_per_warp() == 64
    assert ModeSpec().capacity_events_per_warp() == 1024
    assert ModeSpec().to_dict()["granularity"] == "warp"
