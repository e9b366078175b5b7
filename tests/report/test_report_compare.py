"""Why one run is faster (``workbench.compare``, ``--diff``/``--compare``'s performance part): on two real compiles of
Meta's warp-specialized GEMM (two of its configs: the hottest SASS loop's instruction mix, no GPU needed) and on
the arithmetic of the ranking, with two runs' bench and stalls payloads as ``--bench --stalls`` writes them."""

from __future__ import annotations

import functools
from collections import Counter

import pytest

pytest.importorskip("torch")

from tlx_kernels import meta_tutorials as mt  # noqa: E402

import workbench  # noqa: E402
from workbench.report import Report, diff_reports, validate  # noqa: E402
from workbench.report.compare import RULE, hottest_loop_mix, performance  # noqa: E402


@functools.cache
def two_configs() -> tuple[Report, Report]:
    out = []
    for cfg in ({"NUM_STAGES": 3}, {"NUM_STAGES": 4}):
        c = mt.case("hopper_gemm_ws", config=cfg)
        out.append(Report.from_artifact(c.compile(), kernel=c.kernel))
    return out[0], out[1]


def _stalls(duration_ns: float, producer: dict[str, int], consumer: dict[str, int]) -> dict:
    roles = [{"role": "the default task", "samples": sum(producer.values()), "by_reason": producer},
             {"role": "the task at line 245", "samples": sum(consumer.values()), "by_reason": consumer}]
    return {"kind": "stalls", "status": "ok", "reason": None, "duration_ns": duration_ns,
            "samples": sum(r["samples"] for r in roles), "roles": roles, "hot": [],
            "by_reason": dict(Counter(producer) + Counter(consumer))}  # every sample here is on a role


def _bench(ms: float, when: str) -> dict:
    return {"kind": "bench", "status": "ok", "reason": None, "when": when, "timing": {"median_ms": ms}}


def test_the_hottest_loop_of_each_compile_is_found_and_its_instruction_mix_compared():
    a, b = two_configs()
    mix = hottest_loop_mix(next(s["text"] for s in a.stages if s["name"] == "sass"))
    assert mix["classes"].get("HGMMA", 0) > 0 and mix["instructions"] > 10, mix
    c = workbench.compare(a, b)
    assert c.data is not None and c.data["time"] is None and c.data["stalls"] is None
    rows = {r["class"]: r for r in c.data["loop_mix"]["rows"]}
    assert rows["HGMMA"]["before"] > 0 and rows["HGMMA"]["after"] > 0
    assert "In [" in str(c) or "report " in str(c)


def test_stall_reasons_are_ranked_by_the_time_they_explain_and_roles_set_side_by_side():
    a, b = two_configs()
    before, after = a.to_dict(), b.to_dict()
    before["measurements"] = [_bench(1.0, "t1"), _stalls(1_000_000, {"long_scoreboard": 300, "selected": 100},
                                                          {"barrier": 100, "math_pipe_throttle": 500})]
    after["measurements"] = [_bench(0.8, "t2"), _stalls(800_000, {"long_scoreboard": 100, "selected": 100},
                                                         {"barrier": 300, "math_pipe_throttle": 500})]
    p = performance(before, after)
    assert p["time"] == {"before_ms": 1.0, "after_ms": 0.8, "speedup": 1.25, "measured": "in separate runs"}
    top = p["stalls"]["reasons"][0]
    # long_scoreboard: 30% of 1000 us = 300 us before, 10% of 800 us = 80 us after
    assert top["reason"] == "long_scoreboard" and top["before_ns"] == 300_000.0 and top["delta_ns"] == -220_000.0
    assert [r["reason"] for r in p["stalls"]["reasons"]][1:3] == ["barrier", "math_pipe_throttle"]  # +140, -100 us
    assert p["stalls"]["rule"] == RULE
    roles = {r["role"]: r for r in p["stalls"]["roles"]}
    assert roles["the default task"]["before"]["top"][0][0] == "long_scoreboard"
    assert p["ranked"][0].startswith("time: 1 ms -> 0.8 ms (1.250x, in separate runs)")
    assert p["ranked"][1].startswith("long_scoreboard: -220.00 us (30.0% -> 10.0% of warp samples)")
    assert p["timeline"] is None  # neither run recorded one
    before["timeline"] = {"kind": "timeline", "status": "ok", "reason": None,
                          "roles": [{"role": "default", "busy_fraction": 0.5, "waiting_fraction": 0.4}]}
    after["timeline"] = {"kind": "timeline", "status": "ok", "reason": None,
                         "roles": [{"role": "default", "busy_fraction": 0.7, "waiting_fraction": 0.2}]}
    p = performance(before, after)
    assert p["timeline"][0]["after"]["waiting_fraction"] == 0.2
    assert p["ranked"][-1] == "default: waiting 40% -> 20% of its span (--timeline)"
    b.previous = diff_reports(before, after, label="r1")
    validate(b.to_dict())
    b.previous = None
    html = workbench.compare(before, after)._repr_mimebundle_()["text/html"]
    assert "long_scoreboard" in html and "-220.00 us" in html


def test_the_library_attention_against_metas_best_compares_their_hottest_loops_on_a_cpu():
    """Tutorial 02's closing comparison without a GPU: Meta's persistent ping-pong FA (``W.meta``: its kernel
    compiled for the shape) against the library's persistent kernel; same HGMMA count per loop, the rest differs."""
    from tlx_kernels.attention import walkthrough as W
    from tlx_kernels.attention import ws_persistent

    q, k, v = W.inputs(2, 16, 4096, 128, "cpu")
    meta = Report.from_artifact(W.meta(q, k, v))
    launch = ws_persistent.prepare(q, k, v, False, dict(ws_persistent.DEFAULT), out=W.output(q))
    ours = Report.from_artifact(workbench.compile(launch.kernel, *launch.args, **launch.kwargs),
                                kernel=launch.kernel)
    c = workbench.compare(meta, ours)
    rows = {r["class"]: r for r in c.data["loop_mix"]["rows"]}
    assert rows["HGMMA"]["before"] == rows["HGMMA"]["after"] > 0
    assert any(r["delta"] for r in rows.values())
    assert c.data["ranked"][0].startswith("hottest loop (every path through it, counted in the SASS): ")
