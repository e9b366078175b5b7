"""The no-GPU path: a clear sentence for timing, and the static roofline still there."""

import importlib
import json

import pytest

import workbench.measure as prof
from workbench.errors import WorkbenchError
from workbench.measure import _env


@pytest.fixture
def no_gpu(monkeypatch):
    # the package exports functions named like their modules: patch the modules themselves
    for mod in ("_env", "ceilings", "roofline", "report"):
        module = importlib.import_module(f"workbench.measure.{mod}")
        monkeypatch.setattr(module, "gpu_available", lambda: False)


def test_bench_raises_clear_sentence(no_gpu):
    with pytest.raises(prof.GPURequiredError, match="Timing needs a CUDA GPU") as info:
        prof.bench(lambda: None)
    assert isinstance(info.value, WorkbenchError)
    assert "roofline" in info.value.hint


def test_capture_sweep_and_measuring_raise(no_gpu):
    with pytest.raises(prof.GPURequiredError, match="needs a CUDA GPU"):
        prof.capture(lambda: None)
    with pytest.raises(prof.GPURequiredError, match="Timing needs a CUDA GPU"):
        prof.sweep(lambda **c: lambda: None, [{"n": 1}])
    with pytest.raises(prof.GPURequiredError, match="needs a CUDA GPU"):
        prof.ceilings()
    assert prof.ceilings("H100").device == "H100 SXM"  # named devices need no GPU


def test_bench_section_without_gpu(no_gpu):
    called = []
    d = prof.bench_section(lambda: called.append(1), flops=2 * 4096**3, bytes=3 * 4096**2 * 2, device="H200")
    d = json.loads(json.dumps(d, allow_nan=False))
    assert not called
    assert d["schema"] == prof.SCHEMA
    assert d["timed"] is False and d["timing"] is None
    assert d["message"].startswith("Timing needs a CUDA GPU")
    assert d["roofline"]["bound"] == "compute"
    assert d["roofline"]["ceilings"]["device"] == "H200 SXM"
    assert d["roofline"]["achieved_tflops"] is None
    assert d["errors"] == []


def test_bench_section_without_counts(no_gpu):
    d = prof.bench_section(lambda: None)
    assert d["roofline"] is None and d["message"]


def test_real_machine_matches_gpu_available():
    # on this CPU machine, the real check says no GPU and bench raises
    if _env.gpu_available():
        pytest.skip("a GPU is present")
    with pytest.raises(prof.GPURequiredError):
        prof.bench(lambda: None)


def test_report_items_match_the_report_schema(no_gpu):
    from pathlib import Path

    jsonschema = pytest.importorskip("jsonschema")
    schema_path = Path(__file__).resolve().parents[2] / "workbench" / "report" / "schema.json"
    if not schema_path.exists():
        pytest.skip("no Report schema in this checkout")
    schema = json.loads(schema_path.read_text())
    payload = {**schema["$defs"]["measurement"], "$defs": schema["$defs"]}
    section = prof.bench_section(lambda: None, flops=1e12, bytes=1e9, device="H200")
    items = json.loads(json.dumps(prof.report_items(section), allow_nan=False))
    assert [i["kind"] for i in items] == ["bench", "roofline"]
    assert items[0]["status"] == "skipped" and items[0]["reason"].startswith("Timing needs a CUDA GPU")
    # nothing was timed: the roofline has no "measured by" and no point, its roofs are the H200's datasheet
    assert items[1]["measured_by"] is None and items[1]["device"] is None and items[1]["points"] == []
    assert items[1]["ceilings"]["device"] == "H200 SXM" and items[1]["bound"] == "compute"
    for item in items:
        jsonschema.validate(item, payload)
