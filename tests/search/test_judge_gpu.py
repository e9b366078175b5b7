"""The search's GPU judge without Ray: a candidate compiled in this process (as a compile task would), shipped as
its binary, judged on fresh inputs in the isolated worker, checked and timed against the reference."""

from __future__ import annotations

import pytest
import torch
import triton
from search_kernels import scale

from workbench.search.compile_job import compile_candidate
from workbench.search.judge import Judge, SetupError
from workbench.search.problem import prepare

pytestmark = pytest.mark.gpu
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)


def _problem(reference, n: int = 1 << 16, outputs=None):
    x, y = torch.randn(n, device="cuda"), torch.empty(n, device="cuda")
    grid = lambda m: (triton.cdiv(n, m["BLOCK"]),)  # noqa: E731
    return prepare(scale, {"BLOCK": [256], "WRONG": [0, 1]}, (x, y, n), {}, grid=grid, target="sm_90",
                   reference=reference, outputs=outputs)


def test_judge_checks_and_times_on_fresh_inputs():
    problem, cands = _problem(lambda x, y, n: x * 2)
    judge = Judge()
    info = judge.setup(problem)
    assert info["outputs"] == ["y_ptr"]
    rows = []
    for c in cands:
        out = compile_candidate(problem, c)
        assert out.status == "compiled" and out.binary is not None, out.error
        rows.append(judge.judge(c, out.binary))
    assert rows[0]["status"] == "ok" and rows[0]["ms"] > 0 and rows[0]["ratio"] > 0, rows[0]
    assert rows[1]["status"] == "check-failed" and "y_ptr" in rows[1]["error"], rows[1]


def test_a_reference_that_raises_is_a_setup_error():
    problem, _ = _problem(lambda x, y, n: x / None)
    with pytest.raises(SetupError, match="the reference raised TypeError"):
        Judge().setup(problem)


def test_the_isolated_worker_starts_with_the_judge_not_with_its_first_candidate():
    """A GPU actor's Judge starts the isolated worker at once (its imports and CUDA context overlap the compiles);
    the first candidate's judge then waits for no process start."""
    from workbench.run import isolate

    isolate._shutdown()
    isolate._WORKERS.clear()
    judge = Judge()
    worker = isolate._WORKERS["gpu"]
    assert worker.alive and worker.conn is None  # started, not yet waited for
    worker.ready()
    problem, cands = _problem(lambda x, y, n: x * 2)
    judge.setup(problem)
    out = compile_candidate(problem, cands[0])
    starts = worker.starts
    row = judge.judge(cands[0], out.binary)
    assert row["status"] == "ok" and worker.starts == starts, row
    assert row["run_s"] < 1.0, row  # the launch alone (a process start took about 4 s on an H100)
