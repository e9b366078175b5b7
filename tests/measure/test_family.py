"""The kernel-family runner (``workbench.measure.family``) on a real family of CPU callables
(``testbed/cpu_family.py``) in real CPU workers: the preflight rejects the wrong config with its reason, a public
call that hangs costs its row and nothing else, a baseline's candidates give the fastest, the rows' ratios come
from interleaved rounds, targets are judged; a sweep ranks the configs. The library's families are checked in
tests/kernels/test_families.py; the bench scripts over the runner run on the GPU (``bench/gpu_session.sh gemm``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from workbench.measure import family as F

ROOT = Path(__file__).resolve().parents[2]
TESTBED = str(ROOT / "testbed")
sys.path.insert(0, TESTBED)

from cpu_family import CPU  # noqa: E402


def settings(**kw) -> F.Settings:
    base = dict(dtype="fp32", rounds=3, rep_ms=10, tune_rep_ms=5, timing="wall", kernel_timing="wall",
                warmup_s=0.1, workers=2, job_timeout_s=15, gpu=False, paths=[TESTBED])
    return F.Settings(**{**base, **kw})


@pytest.fixture(scope="module")
def run() -> dict:
    return F.bench(CPU, CPU.shapes["bench"], lambda shape: {k: CPU.configs(k, "configs", shape) for k in CPU.kernels},
                   settings(), log=lambda *a: None)


def test_the_preflight_rejects_a_wrong_config_at_the_odd_shape_and_says_why(run):
    verdict = run["preflight"]["all"]["blocked"]
    assert verdict["BK32"] == verdict["BK64"] == "ok"
    assert verdict["BK16_SKIP_TAILTrue"].startswith("(33, 17, 100): AssertionError: wrong result")


def test_each_public_call_tunes_over_the_passing_configs_only(run):
    mine = [c for c in run["checks"] if c["kernel"] == "blocked"]
    assert len(mine) == 2 and all(c["error"] is None and c["error_value"] < 1e-5 for c in mine)
    assert {c["config"] for c in mine} <= {"BK32", "BK64"}


def test_a_public_call_that_hangs_is_its_rows_error_and_the_run_goes_on(run):
    hung = [c for c in run["checks"] if c["kernel"] == "hangs"]
    assert len(hung) == 2 and all("hung" in c["error"] for c in hung)
    assert not [r for r in run["rows"] if r["kernel"] == "hangs"]
    assert {r["shape"][0] for r in run["rows"]} == {64, 96}  # both shapes measured after it


def test_a_baseline_keeps_its_fastest_candidate_and_one_absent_at_a_shape_has_no_row(run):
    slow = [c for c in run["checks"] if c["kernel"] == "slow"]
    assert [c["config"] for c in slow] == ["sleep 2 ms"]  # absent at 96x32x128
    assert {r["baseline"] for r in run["rows"] if r["shape"][0] == 96} == {"torch"}


def test_rows_are_interleaved_ratios_and_targets_are_judged(run):
    rows = {(r["shape"][0], r["baseline"]): r for r in run["rows"]}
    vs_slow = rows[(64, "slow")]
    assert vs_slow["method"] == "wall; interleaved, 3 rounds"
    assert vs_slow["baseline_ms"] > 2.0 and vs_slow["ratio"] > 5  # a 2 ms sleep against a small product
    times = run["interleaved"]["64x64x256"]
    assert set(times) == {"blocked", "torch", "slow"} and all(len(t) == 3 for t in times.values())
    target = next(t for t in run["summary"] if t["target"] is not None)
    assert (target["against"], target["best_kernel"], target["met"]) == ("slow", "blocked", True)


def test_a_sweep_ranks_every_passing_config():
    part = F.sweep(CPU, CPU.shapes["sweep"], lambda shape: {"blocked": CPU.configs("blocked", "candidates", shape)},
                   settings(), budget_s=120, log=lambda *a: None)
    ranked = part["ranking"]["all"]["blocked"]
    assert {r["config"] for r in ranked} == {"BK32", "BK64"}  # the wrong one never timed
    assert 1.0 >= ranked[0]["score"] >= ranked[1]["score"] > 0  # the confirm round times the best again
    plan2 = F.with_ranked(CPU, {"blocked": [{"BK": 8}]}, part["ranking"]["all"], n=1)
    assert plan2["blocked"][0] == ranked[0]["cfg"] and plan2["blocked"][-1] == {"BK": 8}


def test_settings_refuse_an_unknown_timing():
    with pytest.raises(ValueError, match="timing must be one of"):
        F.Settings(timing="graph")


def test_a_run_without_a_gpu_says_so_and_gives_no_device():
    said: list[str] = []
    assert F.on_gpu(CPU, settings(), "bench/x.py", CPU.shapes["quick"], log=said.append) is None
    assert said == ["bench/x.py needs a CUDA GPU (the kernels' compile-only checks are in tests/kernels/)"]
    assert F.chosen_shapes(CPU, "8x8x8,16x8x4", "bench") == [(8, 8, 8), (16, 8, 4)]
    assert F.chosen_shapes(CPU, None, "quick") == [(64, 64, 256)]


def test_the_run_takes_the_worker_the_device_line_started(monkeypatch):
    """``on_gpu``'s worker (the device line) is kept for the run that follows: one worker start fewer."""
    made: list[object] = []
    real = F._Worker

    class Counted(real):
        def __init__(self, *a, **kw):
            made.append(self)
            super().__init__(*a, **kw)

    monkeypatch.setattr(F, "_Worker", Counted)
    plan = lambda shape: {"blocked": [{"BK": 32}]}  # noqa: E731
    shapes = CPU.shapes["quick"]

    def workers_of_a_sweep(s: F.Settings) -> int:
        before = len(made)
        F.sweep(CPU, shapes, plan, s, budget_s=60, log=lambda *a: None)
        assert s.kept is None
        return len(made) - before

    s = settings()
    fresh = workers_of_a_sweep(s)
    info = F.device(CPU, s, keep=True)
    kept = s.kept
    assert info["device"] == "cpu" and kept is made[-1]
    assert workers_of_a_sweep(s) == fresh - 1
