"""A warp-stall report recorded on a GPU (``bench/stalls.py`` on an H100: Meta's ``hopper_gemm_ws`` at 4096^3 under
``ncu --section SourceCounters --section WarpStateStats``, tests/measure/data) read on this CPU through NVIDIA's
``ncu-report`` package (the ``profile`` extra) and placed on the kernel compiled here: the same SASS, so every
sample lands on an instruction, and on a role and a line."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("ncu_report")  # pip install tlx-workbench[profile] (in the dev extra)
pytest.importorskip("torch")

from tlx_kernels import meta_tutorials as mt  # noqa: E402

from workbench.analyse.orchestration import build_model  # noqa: E402
from workbench.analyse.stalls import attribute, roles_of  # noqa: E402
from workbench.measure.ncu import read_samples  # noqa: E402

REPORT = Path(__file__).parent / "data" / "meta_hopper_gemm_ws_4096.ncu-rep"


def test_a_report_from_the_gpu_is_read_here_and_lands_on_metas_roles_and_lines():
    s = read_samples(REPORT)
    assert s.kernel == "matmul_kernel_tlx_ws" and "H100" in (s.device or "")
    total = sum(sum(r.values()) for r in s.by_pc.values())
    assert total > 10_000 and len(s.sass) == len(s.by_pc) > 100
    assert {"barrier", "long_scoreboard", "selected"} <= {k for r in s.by_pc.values() for k in r}
    art = mt.case("hopper_gemm_ws").compile()
    roles = roles_of(build_model(art))
    p = attribute(s.by_pc, s.sass, art.stages["sass"], art.reverse_map("sass"), roles)
    assert p["samples"] == total and p["mapped"]["instruction"] == 1.0, p["mapped"]  # the SASS the GPU ran
    assert p["mapped"]["role_and_line"] >= 0.99 and p["mapped"]["loop_role_and_line"] >= 0.99, p["mapped"]
    by_role = {r["role"]: r["samples"] for r in p["roles"]}
    consumers = roles[2].name
    assert by_role[consumers] > by_role["the default task"] > by_role[roles[0].name]  # 8 warps vs 1 producer
    assert p["hot"][0]["role"] is not None and p["hot"][0]["line"] is not None


def test_a_report_made_elsewhere_becomes_the_reports_stalls_payload_and_a_missing_one_says_why(tmp_path):
    from workbench.measure.stalls import from_report
    from workbench.report import Report, validate

    art = mt.case("hopper_gemm_ws").compile()
    m = from_report(REPORT, art)
    assert m["status"] == "ok" and m["kernel"] == "matmul_kernel_tlx_ws" and m["report_file"] == str(REPORT)
    assert m["mapped"]["role_and_line"] >= 0.99 and m["duration_ns"] > 0
    r = Report.from_artifact(art)
    r.measurements.append(m)
    d = r.to_dict()
    validate(d)
    [shown] = [x for x in d["measurements"] if x["kind"] == "stalls"]
    assert "samples" in shown["summary"] and "%" in shown["summary"]
    other = from_report(REPORT, mt.case("hopper_gemm_pipelined").compile())  # another kernel's build
    assert other["status"] == "error" and "the report profiled matmul_kernel_tlx_ws" in other["reason"], other
    gone = from_report(tmp_path / "none.ncu-rep", art)
    assert gone["status"] == "error" and "none.ncu-rep" in (gone["reason"] or "") + gone["report_file"]
