"""The tutorials' step printout (tlx_kernels.gemm.walkthrough.print_step, used by the GEMM and attention
walkthroughs' show_step): facts before/now with the changed ones marked, the ratio to the baseline measured
in the same run, or what a GPU would show."""

from __future__ import annotations

from types import SimpleNamespace

from tlx_kernels.gemm import walkthrough as GW

BEFORE = {"kernel": "matmul_tma", "warps": 4, "setmaxnreg": "-", "accumulator layout": "mma v3"}
NOW = {"kernel": "matmul_ws_cooperative", "warps": 12, "setmaxnreg": "240/24", "accumulator layout": "mma v3"}


def test_facts_mark_what_changed_and_put_long_facts_on_their_own_lines():
    lines = GW.facts_lines(NOW, BEFORE, width=24)
    assert lines[0].split() == ["fact", "matmul_tma", "matmul_ws_cooperative"]
    (warps,) = [ln for ln in lines if ln.startswith("warps")]
    assert warps.split() == ["warps", "4", "12", "<-"]
    i = lines.index("setmaxnreg  <-")
    assert lines[i + 1:i + 3] == ["  before: -", "  now:    240/24"]
    assert "accumulator layout" in lines  # unchanged: no mark


def test_long_facts_a_walkthrough_does_not_have_are_skipped():
    now = {k: v for k, v in NOW.items() if k != "accumulator layout"}
    before = {k: v for k, v in BEFORE.items() if k != "accumulator layout"}
    assert not any("accumulator" in ln for ln in GW.facts_lines(now, before))


def test_measured_step_shows_the_ratio_to_the_baseline(capsys):
    m = dict(check="passed", tflops=700.0, median_us=1570.7, bench="do_bench median, L2 flushed", timeline=None)
    GW.print_step(NOW, BEFORE, m, SimpleNamespace(tflops=680.0), "cuBLAS", "unused", ("timeline", lambda t: []))
    out = capsys.readouterr().out
    assert "check: passed" in out
    assert "measured: 700.0 TFLOP/s, median 1570.7 us, 1.03x cuBLAS (680)" in out


def test_untimed_step_says_what_a_gpu_would_show_and_prints_the_timeline(capsys):
    m = dict(check=None, tflops=None, median_us=None, bench=None, timeline={"roles": ["producer"]})
    GW.print_step(NOW, None, m, None, "cuBLAS", "On a GPU this step also shows the median.",
                  ("timeline (per role)", lambda t: [f"  {r}" for r in t["roles"]]))
    out = capsys.readouterr().out
    assert "check: none" in out and "not timed: no --bench" in out and "On a GPU this step also shows" in out
    assert "timeline (per role):\n  producer" in out
    assert "warps" in out and "<-" not in out  # no previous step: facts only
