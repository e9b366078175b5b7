"""The roofline on the local GPU (issue 25: every H200 GEMM sat above the 'measured roof'): the top roof is the
datasheet's peak, the measured ceiling is a second line, and a timed cuBLAS GEMM sits under the top roof."""

import pytest
import torch

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

from workbench.measure import bench, roofline  # noqa: E402


def test_a_cublas_gemm_sits_under_the_datasheet_roof_with_the_measured_ceiling_as_a_second_line():
    n = 4096
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    r = roofline(2 * n**3, 3 * n * n * 2, bench(lambda: a @ b), name="torch.matmul")
    if r.ceilings.datasheet is None:
        pytest.skip(f"no datasheet for {r.ceilings.device}: the measured ceilings are the only roofs")
    assert r.ceilings.source == "measured" and r.roofs is r.ceilings.datasheet
    assert r.measured_peak_tflops is not None and r.measured_peak_tflops <= r.peak_tflops
    assert r.bound == "compute" and 0 < r.achieved_tflops <= r.peak_tflops
    d = r.to_dict()
    assert d["peak_tflops"] == r.ceilings.datasheet.peak_tflops("bf16")
    assert [p["name"] for p in d["points"]] == ["torch.matmul"]
    assert all(p["tflops"] <= d["peak_tflops"] for p in d["points"])
    names = [t.name for t in r.figure().data]
    assert any(s.startswith("bf16 compute roof") for s in names), names
    assert any(s.startswith("measured ceiling") for s in names), names
