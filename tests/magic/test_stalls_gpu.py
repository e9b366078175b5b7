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
