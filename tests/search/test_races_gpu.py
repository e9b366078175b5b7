"""Issue 35's measure: ``workbench.stress`` (``%%tlx --stress N``) on the six racy kernels of racy_kernels.py and on
their correct counterparts, 50 delayed runs each, every run on fresh inputs judged against the reference. Each
case's summary (runs that differ, hung or faulted, the seed that reproduces the first, the most telling delay) and
wall time go into the GPU test JSON (``record_property``); the race shows in at least 5 of the 6, and a correct
kernel differs in none of its runs. Run on the H200 (bench/gpu_session.sh tests)."""

from __future__ import annotations

import time

import pytest
import racy_kernels as R
import torch

import workbench
from workbench.search import STRESS_STOP_AFTER

pytestmark = pytest.mark.gpu
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

RUNS = 50
SHOWN: dict[str, bool] = {}


def _stress(case: R.Case, record_property) -> dict:
    args = case.make("cuda")
    t0 = time.perf_counter()
    r = workbench.stress(case.kernel, *args, grid=case.grid, reference=case.reference, runs=RUNS, progress=False,
                         skip_on_error=False, timeout_s=3, **case.constexprs)
    s = {**r.info["stress"], "wall_s": round(time.perf_counter() - t0, 1), "what": case.what}
    print(case.name, s)
    record_property("stress", s)
    return s


@pytest.mark.parametrize("case", R.cases(True), ids=lambda c: c.name)
def test_a_racy_kernel_under_stress(case, record_property):
    s = _stress(case, record_property)
    assert s["ran"] == RUNS or s["hangs"] + s["faults"] >= STRESS_STOP_AFTER, s  # else stopped: it showed
    SHOWN[case.name] = bool(s["differing"] or s["hangs"] or s["faults"])
    if SHOWN[case.name]:
        assert s["first_failing_seed"] is not None, s


def test_the_race_shows_in_at_least_five_of_the_six():
    assert len(SHOWN) == 6 and sum(SHOWN.values()) >= 5, SHOWN


@pytest.mark.parametrize("case", R.cases(False), ids=lambda c: c.name)
def test_a_correct_kernel_under_stress_differs_in_no_run(case, record_property):
    s = _stress(case, record_property)
    assert s["ran"] == RUNS and s["differing"] == s["hangs"] == s["faults"] == 0, s
