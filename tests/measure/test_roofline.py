import json
import math

import pytest

from workbench.measure import (
    Ceilings,
    Point,
    datasheet,
    elementwise_counts,
    gemm_counts,
    roofline,
)
from workbench.measure.counts import Counts


def test_intensity_ridge_and_bound_h200():
    n = 8192
    flops, nbytes = 2 * n**3, 3 * n * n * 2
    r = roofline(flops, nbytes, device="H200")
    assert r.intensity == pytest.approx(flops / nbytes)
    assert r.ridge == pytest.approx(989.0 / 4.8)
    assert r.bound == "compute"
    assert r.attainable_tflops == pytest.approx(989.0)
    assert r.seconds is None and r.achieved_tflops is None and r.roof_fraction is None


def test_memory_bound_and_fractions():
    # a copy-like kernel: 1 FLOP per 8 bytes
    r = roofline(1e9, 8e9, seconds=2e-3, device="H100")
    assert r.intensity == pytest.approx(0.125)
    assert r.bound == "memory"
    assert r.ridge == pytest.approx(989.0 / 3.35)
    assert r.achieved_tbs == pytest.approx(4.0)
    assert r.achieved_tflops == pytest.approx(0.5)
    assert r.memory_fraction == pytest.approx(4.0 / 3.35)
    assert r.compute_fraction == pytest.approx(0.5 / 989.0)
    assert r.roof_fraction == r.memory_fraction
    assert r.attainable_tflops == pytest.approx(3.35 * 0.125)


def test_bound_at_ridge_is_compute_and_dtype_changes_ridge():
    c = datasheet("H200")
    ridge = c.peak_tflops("bf16") / c.bandwidth
    assert roofline(ridge * 1e6, 1e6, device=c).bound == "compute"
    assert roofline(ridge * 0.99e6, 1e6, device=c).bound == "memory"
    # at fp8 the ridge doubles: the same kernel becomes memory-bound
    assert roofline(ridge * 1.5e6, 1e6, device=c, dtype="fp8").bound == "memory"
    assert roofline(ridge * 1.5e6, 1e6, device=c, dtype="torch.bfloat16").dtype == "bf16"


def test_zero_flops_copy_is_memory_bound():
    r = roofline(0, 2e9, seconds=0.5e-3, device="H200")
    assert r.intensity == 0 and r.bound == "memory"
    assert r.achieved_tbs == pytest.approx(4.0)
    assert r.memory_fraction == pytest.approx(4.0 / 4.8)
    json.dumps(r.to_dict())
    r.figure()  # a zero-FLOP point must still draw


def test_references_and_to_dict_is_json():
    r = roofline(2e12, 4e8, seconds=2.5e-3, device="H200", name="tlx gemm", references={"cuBLAS": 2.0e-3})
    r.add_reference("other shape", 1e-3, flops=1e12, bytes=1e9)
    d = json.loads(json.dumps(r.to_dict(), allow_nan=False))
    assert [p["kind"] for p in d["points"]] == ["kernel", "reference", "reference"]
    assert d["points"][1]["tflops"] == pytest.approx(1000.0)
    assert d["bound"] == "compute" and d["ceilings"]["source"] == "datasheet"
    assert d["achieved_tflops"] == pytest.approx(800.0)
    assert "cuBLAS" in r.summary()


def test_estimated_counts_are_flagged():
    import torch

    a = torch.empty(128, 64, dtype=torch.bfloat16)
    b = torch.empty(64, 256, dtype=torch.bfloat16)
    r = roofline(counts=gemm_counts(a, b), device="H100")
    assert r.flops == 2 * 128 * 256 * 64
    assert r.bytes == (128 * 64 + 64 * 256 + 128 * 256) * 2
    assert r.counts.is_estimate and r.to_dict()["counts"]["estimate"] is True
    assert any("estimate" in n for n in r.notes)


def test_missing_counts_is_a_clear_error():
    with pytest.raises(ValueError, match="needs FLOP and byte counts"):
        roofline(device="H100")


def test_no_gpu_defaults_to_named_device(monkeypatch):
    import importlib

    monkeypatch.setattr(importlib.import_module("workbench.measure.roofline"), "gpu_available", lambda: False)
    monkeypatch.delenv("TLX_WORKBENCH_DEVICE", raising=False)
    r = roofline(1e9, 1e9)
    assert r.ceilings.device == "H200 SXM"  # the device this workbench targets
    assert any("no GPU here: placed against the H200 datasheet" in n for n in r.notes)
    monkeypatch.setenv("TLX_WORKBENCH_DEVICE", "H100")  # the user's device, named
    assert roofline(1e9, 1e9).ceilings.device == "H100 SXM"


def test_measured_ceilings_fall_back_to_datasheet_for_missing_entries():
    c = Ceilings(
        "NVIDIA H200",
        "measured",
        {"bf16": 750.0, "fp16": 760.0, "fp8": None, "tf32": 380.0},
        4.3,
        datasheet=datasheet("H200"),
        measured_at="2025-01-01T00:00:00+00:00",
        driver="570.1",
    )
    assert c.peak_tflops("fp8") == 1979.0
    r = roofline(1e12, 1e9, seconds=1e-3, device=c)
    # the roofs are the datasheet's (nothing runs above them); the measured ceiling is a second line
    assert r.peak_tflops == datasheet("H200").tflops["bf16"] and r.measured_peak_tflops == 750.0
    assert r.ridge == pytest.approx(r.peak_tflops / datasheet("H200").bandwidth_tbs)
    assert r.to_dict()["measured_bandwidth_tbs"] == 4.3 and "as a second line" in r.to_dict()["ceilings_label"]
    assert "measured 2025-01-01" in r.ceilings.describe()
    assert Ceilings.from_dict(json.loads(json.dumps(c.to_dict()))) == c


def test_chart_construction():
    r = roofline(2e12, 4e8, seconds=2.5e-3, device="H200", name="k", references={"cuBLAS": 2e-3})
    fig = r.figure()
    assert fig.layout.xaxis.type == "log" and fig.layout.yaxis.type == "log"
    names = [t.name for t in fig.data]
    assert any(n.startswith("memory roof") for n in names)
    assert any(n.startswith("bf16 compute roof") for n in names)
    assert any(n.startswith("ridge") for n in names)
    assert any(n.startswith("k:") for n in names) and any(n.startswith("cuBLAS") for n in names)
    assert "H200 SXM" in fig.layout.title.text  # says which device and what measured it
    mem = fig.data[0]
    assert mem.y[-1] == pytest.approx(989.0) and mem.x[-1] == pytest.approx(r.ridge)
    # an untimed kernel is no point (not even on the roof): only its intensity, as a vertical line
    fig2 = roofline(1e9, 1e9, device="H200").figure(other_dtypes=False)
    assert not [t for t in fig2.data if "markers" in (t.mode or "")]
    assert any("not timed" in (a.text or "") for a in fig2.layout.annotations)
    # the same counts timed alike would cover each other: moved apart along x, each labelled
    close = roofline(2e12, 4e8, seconds=2.5e-3, device="H200", name="k", references={"cuBLAS": 2.51e-3}).figure()
    pts = [t for t in close.data if "markers" in (t.mode or "")]
    assert len(pts) == 2 and pts[0].x[0] != pts[1].x[0] and [t.text[0] for t in pts] == ["k", "cuBLAS"]


def test_point_intensity_infinite_without_bytes():
    p = Point("x", 1.0, 0.0)
    assert math.isinf(p.intensity)
    assert roofline(counts=Counts(1e9, 0.0), device="H100").bound == "compute"


def test_elementwise_counts():
    import torch

    x = torch.empty(1000, dtype=torch.float32)
    y = torch.empty(1000, dtype=torch.float32)
    c = elementwise_counts(x, y)
    assert c.flops == 1000 and c.bytes == 3 * 4000
    copy = elementwise_counts(x, flops_per_element=0)
    assert copy.flops == 0 and copy.bytes == 8000


def test_a_kernel_above_the_measured_ceiling_stays_under_the_datasheet_roof_and_says_why():
    """Measured ceilings are what cuBLAS reached at one moment's clock; a kernel timed at a better clock sits
    above that line, never above the datasheet roof, and the roofline says why."""
    from workbench.report.sections.roofline import summary as _roofline

    c = Ceilings("NVIDIA H200", "measured", {"bf16": 687.0, "fp16": 690.0, "fp8": None, "tf32": 380.0}, 4.2,
                 datasheet=datasheet("H200"), measured_at="2026-12-03T00:00:00+00:00", driver="580")
    n = 4096
    fast = roofline(2 * n**3, 3 * n * n * 2, seconds=2 * n**3 / 757e12, device=c)
    assert 0.7 < fast.roof_fraction < 1  # of the datasheet roof
    [note] = [x for x in fast.notes if "above the measured compute ceiling" in x]
    assert "687" in note and "989" in note
    assert "110% of the measured ceiling" in _roofline(fast.to_dict())
    slow = roofline(2 * n**3, 3 * n * n * 2, seconds=2 * n**3 / 600e12, device=c)
    assert not any("above" in x for x in slow.notes) and "of the roof" in _roofline(slow.to_dict())
    wrong = roofline(2 * n**3, 3 * n * n * 2, seconds=2 * n**3 / 1200e12, device=c)  # counts or timing wrong
    assert any("which no kernel reaches" in x for x in wrong.notes)
    # the other dtypes' roofs in the chart are the datasheet's too (fp16 is no measured 690 line among roofs)
    names = [t.name for t in fast.figure().data]
    assert "fp16 roof 690" not in names and "tf32 roof 494" in names and "fp8 roof 1979" in names, names


def test_without_a_byte_count_no_bound_is_claimed():
    """--flops without --bytes: the intensity is unknown, so neither the Report, its summary, the text nor the
    chart calls the kernel compute-bound; the achieved rate is still set against the compute roofs."""
    from workbench.report.sections.roofline import summary as _roofline

    c = Ceilings("NVIDIA H200", "measured", {"bf16": 687.0, "fp16": 690.0, "fp8": None, "tf32": 380.0}, 4.2,
                 datasheet=datasheet("H200"), measured_at="2026-12-03T00:00:00+00:00", driver="580")
    r = roofline(9.6e11, 0, seconds=9.6e11 / 587.7e12, device=c)
    d = r.to_dict()
    assert d["bound"] is None and d["intensity"] is None
    line = _roofline(d)
    assert "bound" not in line and "intensity unknown (no byte count: --bytes)" in line
    assert "achieved 587.7 TFLOP/s" in line and "of the measured ceiling" in line
    assert "intensity unknown" in r.summary() and "compute-bound" not in r.summary()
    assert "compute-bound" not in r.figure().layout.title.text
