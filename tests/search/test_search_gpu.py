"""workbench.search on a GPU: candidates that pass, give a wrong answer, hang or fault each get their status, the
search finishes, and the winner is timed against the reference; workbench.autotune fixes its winner on the
autotuner. Run on the H200 (bench/gpu_session.sh tests)."""

from __future__ import annotations

import pytest
import torch
import triton
from lost_workers import kill_first
from search_kernels import ring_sum, scale
from triton.tools.tensor_descriptor import TensorDescriptor

import workbench
from workbench.search.engine import SearchError

pytestmark = pytest.mark.gpu
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)


def test_wrong_answers_fail_their_check_and_the_rest_are_timed():
    n = 1 << 20
    x, y = torch.randn(n, device="cuda"), torch.empty(n, device="cuda")
    r = workbench.search(scale, {"BLOCK": [256, 1024], "WRONG": [0, 1]}, x, y, n,
                         grid=lambda m: (triton.cdiv(n, m["BLOCK"]),), reference=lambda x, y, n: x * 2,
                         bytes=8 * n, progress=False)
    t = r.table
    assert list(t["status"]) == ["ok", "check-failed", "ok", "check-failed"], t.to_string()
    assert all(t.loc[t["status"] == "ok", "ms"] > 0) and all(t.loc[t["status"] == "ok", "ratio"] > 0)
    assert r.best_config["WRONG"] == 0 and r.best["tbs"] > 0
    assert "y_ptr:" in t.loc[1, "error"] and r.rows[0]["gpu"]
    rep = r.report(r.best_index)
    assert rep.runs[0]["ran"] and "ms" in rep.diagnostics[-1]["message"]


def test_a_hang_and_a_fault_cost_their_candidates_only():
    K, BM, BK = 512, 64, 64
    x = torch.randn(BM, K, dtype=torch.float16, device="cuda")
    out = torch.empty(BM, BK, dtype=torch.float16, device="cuda")
    desc = TensorDescriptor(x, [BM, K], [K, 1], [BM, BK])
    expected = lambda d, o, k: d.base.float().reshape(BM, K // BK, BK).sum(1).half()  # noqa: E731
    r = workbench.search(ring_sum, {"BUG": [0, 1, 2, 0]}, desc, out, K, grid=(1,), reference=expected,
                         skip_on_error=False, timeout_s=3.0, progress=False, BM=BM, BK=BK, STAGES=3)
    t = r.table
    assert t.loc[0, "status"] == "ok" and t.loc[3, "status"] == "ok", t.to_string()
    assert t.loc[1, "status"] == "hang", t.to_string()
    assert t.loc[2, "status"] in ("fault", "check-failed", "hang"), t.to_string()
    assert t.loc[1, "findings"]  # the static checks saw it coming


def test_autotune_fixes_the_winner_on_the_autotuner():
    n = 1 << 20
    tuned = triton.autotune([triton.Config({"BLOCK": b}, num_warps=w) for b in (256, 1024) for w in (4, 8)],
                            key=["n"])(scale)
    x, y = torch.randn(n, device="cuda"), torch.empty(n, device="cuda")
    grid = lambda m: (triton.cdiv(n, m["BLOCK"]),)  # noqa: E731
    r = workbench.autotune(tuned, x, y, n, grid=grid, reference=lambda x, y, n: x * 2, progress=False)
    assert len(tuned.cache) == 1 and tuned.best_config.kwargs["BLOCK"] == r.best_config["BLOCK"]
    benched = []
    triton.knobs.autotuning.listener = lambda **kw: benched.append(kw)
    try:
        tuned[grid](x, y, n)
    finally:
        triton.knobs.autotuning.listener = None
    assert benched == [] and len(tuned.cache) == 1  # the launch used the fixed winner: no tuning
    torch.testing.assert_close(y, x * 2)


def test_autotune_with_no_passing_config_raises_with_the_whole_table():
    n = 1 << 16
    tuned = triton.autotune([triton.Config({"BLOCK": b, "WRONG": 1}) for b in (256, 1024)], key=["n"])(scale)
    x, y = torch.randn(n, device="cuda"), torch.empty(n, device="cuda")
    grid = lambda m: (triton.cdiv(n, m["BLOCK"]),)  # noqa: E731
    with pytest.raises(SearchError) as info:
        workbench.autotune(tuned, x, y, n, grid=grid, reference=lambda x, y, n: x * 2, progress=False)
    res = info.value.result
    assert res is not None and set(res.table["status"]) == {"check-failed"}
    assert "BLOCK=256" in str(info.value) and "elements differ" in str(info.value)


def test_a_gpu_actor_killed_mid_search_costs_one_try():
    """The GPU actor's process killed by its pid while it judges (what an OOM killer does): Ray restarts it, the
    candidate is judged again on the fresh actor (else it is ``lost``), and every row has its status."""
    pytest.importorskip("psutil")
    n = 1 << 24
    x, y = torch.randn(n, device="cuda"), torch.empty(n, device="cuda")
    killer, killed = kill_first("ray::_GpuActor.run")
    r = workbench.search(scale, {"BLOCK": [256, 512, 1024, 2048], "WRONG": [0]}, x, y, n,
                         grid=lambda m: (triton.cdiv(n, m["BLOCK"]),), reference=lambda x, y, n: x * 2,
                         progress=False)
    killer.join()
    t = r.table
    assert killed, "no GPU actor was seen judging"
    assert set(t["status"]) <= {"ok", "lost"} and (t["status"] == "ok").sum() >= 3, t.to_string()


def test_a_budgeted_search_measures_a_share_and_skips_the_rest_with_the_reason():
    """strategy='budgeted' over the pipeline: a 96-config space, at most a quarter measured (at least 16), the
    winner among the measured, every other row 'skipped' with why, the steps in the notes."""
    n = 1 << 22
    x, y = torch.randn(n, device="cuda"), torch.empty(n, device="cuda")
    space = {"BLOCK": [128, 256, 512, 1024, 2048, 4096], "num_warps": [1, 2, 4, 8], "WRONG": [0],
             "num_stages": [1, 2, 3, 4]}
    r = workbench.search(scale, space, x, y, n, grid=lambda m: (triton.cdiv(n, m["BLOCK"]),),
                         reference=lambda x, y, n: x * 2, progress=False, strategy="budgeted", fresh=True)
    t = r.table
    measured = t[t["status"] != "skipped"]
    assert 16 <= len(measured) <= 24 + 4, t.to_string()
    assert r.best_index in measured.index and (measured["status"] == "ok").all(), t.to_string()
    assert all("not tried by the budgeted search" in e for e in t[t["status"] == "skipped"]["error"])
    assert any(n.startswith("strategy='budgeted': sample:") for n in r.info["notes"]), r.info["notes"]
