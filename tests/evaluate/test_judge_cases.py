"""The judge's defaults on its test set (testbed/judge_cases.py) in Triton's CPU interpreter: every correct kernel
passes, every planted bug fails at a stated cause. (The H200 run of the same set, at real sizes and with the
library's TLX kernels: bench/judge.py.)"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from workbench import evaluate

CASES = Path(__file__).parents[2] / "testbed" / "judge_cases.py"
_spec = importlib.util.spec_from_file_location("judge_cases_data", CASES)
J = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(J)  # test data: the kernels are loaded by path, as evaluate loads them


@pytest.mark.parametrize("op", [op for op, v in J.OPS.items() if v[2]])
def test_correct_kernels_pass_and_planted_bugs_fail(op):
    ref, make, shapes, _ = J.OPS[op]
    names = [c for c in J.candidates(op) if c not in J.GPU_ONLY]
    res = evaluate([f"{CASES}:{c}" for c in names], reference=f"{CASES}:{ref}", inputs=f"{CASES}:{make}",
                   shapes=shapes, trials=2, rounds=1, progress=False)
    rows = {r["candidate"].split(":")[1]: r for r in res.rows}
    for name in names:
        r = rows[name]
        if J.is_bug(name):
            assert r["status"] == "failed", (name, r["status"], r["reasons"])
            assert "elements differ" in " ".join(r["reasons"]) and "first at" in " ".join(r["reasons"]), r["reasons"]
        else:
            assert r["status"] == "passed", (name, r["reasons"])
            assert all(s["max_ulps"] <= 8 for s in r["shapes"]), r["shapes"]
