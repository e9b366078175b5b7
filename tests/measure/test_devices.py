import json

import pytest

from workbench.measure import DeviceError, ceilings, datasheet, known_devices
from workbench.measure.ceilings import datasheet_name, normalize_dtype


@pytest.mark.parametrize(
    "name, key",
    [
        ("H200", "H200 SXM"),
        ("NVIDIA H200", "H200 SXM"),
        ("NVIDIA H200 NVL", "H200 NVL"),
        ("H100", "H100 SXM"),
        ("NVIDIA H100 80GB HBM3", "H100 SXM"),
        ("NVIDIA H100 PCIe", "H100 PCIe"),
        ("h100-nvl", "H100 NVL"),
        ("NVIDIA A100-SXM4-80GB", "A100 SXM"),
        ("NVIDIA B200", "B200"),
    ],
)
def test_datasheet_names(name, key):
    assert datasheet_name(name) == key
    assert datasheet(name).device == key


def test_unknown_names():
    assert datasheet_name("NVIDIA GH200 480GB") is None
    assert datasheet_name("NVIDIA GeForce RTX 4090") is None
    with pytest.raises(DeviceError, match="no datasheet"):
        datasheet("RTX 4090")


def test_datasheet_figures():
    h200, h100 = ceilings("H200"), ceilings("H100")
    assert h200.tflops == {"bf16": 989.0, "fp16": 989.0, "fp8": 1979.0, "tf32": 494.0}
    assert h200.bandwidth == 4.8 and h100.bandwidth == 3.35
    assert h100.tflops == h200.tflops
    assert h200.source == "datasheet"
    json.dumps(h200.to_dict())
    assert "H200" in known_devices()


def test_dtype_aliases():
    assert normalize_dtype("bfloat16") == "bf16"
    assert normalize_dtype("float8_e4m3fn") == "fp8"
    with pytest.raises(ValueError):
        normalize_dtype("int4")
