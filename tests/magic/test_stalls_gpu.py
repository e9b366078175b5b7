"""``%%tlx --stalls`` on a GPU with Nsight Compute: a warp-specialized TLX cell's launch profiled once in a worker
under ncu, its samples on the cell's roles and lines. Run on the H200 (bench/gpu_session.sh tests)."""

from __future__ import annotations

import pytest
import torch
from cells import TLX
from test_magic import reports, run

from workbench.measure.ncu import ncu_path
from workbench.report import validate

pytestmark = pytest.mark.gpu
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

# long enough to sample: 4096 CTAs of 4 tiles
BIG = TLX.replace("torch.randn(8192,", "torch.randn(1 << 24,").replace("ew_kernel[(2,)](x, y, 8192,",
                                                                        "ew_kernel[(4096,)](x, y, 1 << 24,")


def test_the_stalls_of_a_warp_specialized_cell_land_on_its_roles_and_lines(ip):
    if ncu_path() is None:
        pytest.skip("Nsight Compute (ncu) is not installed here")
    assert BIG != TLX
    res, outputs, _ = run(ip, "%%tlx --stalls\n" + BIG)
    assert res.success, res.error_in_exec
    [d] = reports(outputs)
    validate(d)
    [m] = [m for m in d["measurements"] if m["kind"] == "stalls"]
    print({k: m.get(k) for k in ("status", "reason", "seconds", "samples", "mapped", "pc_offset", "ncu_version")})
    assert m["status"] == "ok", m["reason"]
    assert m["samples"] > 100 and m["mapped"]["instruction"] >= 0.99, m["mapped"]
    assert m["mapped"]["role_and_line"] >= 0.9, m["mapped"]
    roles = {r["role"]: r for r in m["roles"]}
    assert roles["the default task"]["samples"] > 0 and any(r.startswith("the task at line") and v["samples"] > 0
                                                            for r, v in roles.items())
    assert m["seconds"] < 60


def test_compare_ranks_the_stall_reasons_of_two_runs_by_the_time_they_explain(ip):
    if ncu_path() is None:
        pytest.skip("Nsight Compute (ncu) is not installed here")
    one_slot = BIG.replace("NUM_BUF=2)", "NUM_BUF=1)")
    assert one_slot != BIG
    res, _, _ = run(ip, "%%tlx --bench --stalls -o ring_two\n" + BIG)
    assert res.success, res.error_in_exec
    res, outputs, _ = run(ip, "%%tlx --bench --stalls --compare ring_two\n" + one_slot)
    assert res.success, res.error_in_exec
    [d] = reports(outputs)
    validate(d)
    perf = d["previous"]["performance"]
    print(perf["ranked"])
    assert perf["time"] and perf["time"]["speedup"] > 0 and perf["stalls"]["reasons"], perf
    assert perf["ranked"][0].startswith("time: ") and len(perf["ranked"]) >= 3
    assert {r["role"] for r in perf["stalls"]["roles"]} >= {"the default task"}
