"""Device ceilings: peak dense tensor rates and memory bandwidth, measured once or from datasheets."""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from workbench.compile.triton_reach import scaled_mm
from workbench.errors import WorkbenchError
from workbench.ir.json_values import json_num
from workbench.measure._env import (
    cache_dir,
    driver_version,
    environment,
    gpu_available,
    now_iso,
    require_gpu,
)

DTYPES = ("bf16", "fp16", "fp8", "tf32")

_DTYPE_ALIASES = {
    "bf16": "bf16",
    "bfloat16": "bf16",
    "torch.bfloat16": "bf16",
    "fp16": "fp16",
    "f16": "fp16",
    "half": "fp16",
    "float16": "fp16",
    "torch.float16": "fp16",
    "fp8": "fp8",
    "e4m3": "fp8",
    "e5m2": "fp8",
    "float8_e4m3fn": "fp8",
    "float8_e5m2": "fp8",
    "torch.float8_e4m3fn": "fp8",
    "torch.float8_e5m2": "fp8",
    "tf32": "tf32",
    "fp32": "tf32",
    "float32": "tf32",
    "torch.float32": "tf32",
}

# Dense (no sparsity) tensor-core peaks in TFLOP/s and HBM bandwidth in TB/s, from NVIDIA datasheets.
_DATASHEETS: dict[str, tuple[dict[str, float | None], float]] = {
    "H200 SXM": ({"bf16": 989.0, "fp16": 989.0, "fp8": 1979.0, "tf32": 494.0}, 4.8),
    "H200 NVL": ({"bf16": 835.0, "fp16": 835.0, "fp8": 1671.0, "tf32": 418.0}, 4.8),
    "H100 SXM": ({"bf16": 989.0, "fp16": 989.0, "fp8": 1979.0, "tf32": 494.0}, 3.35),
    "H100 NVL": ({"bf16": 835.0, "fp16": 835.0, "fp8": 1671.0, "tf32": 418.0}, 3.9),
    "H100 PCIe": ({"bf16": 756.0, "fp16": 756.0, "fp8": 1513.0, "tf32": 378.0}, 2.0),
    "A100 SXM": ({"bf16": 312.0, "fp16": 312.0, "fp8": None, "tf32": 156.0}, 2.039),
    "A100 PCIe": ({"bf16": 312.0, "fp16": 312.0, "fp8": None, "tf32": 156.0}, 1.935),
    "B200": ({"bf16": 2250.0, "fp16": 2250.0, "fp8": 4500.0, "tf32": 1100.0}, 8.0),
}

_ALIASES = {"H200": "H200 SXM", "H100": "H100 SXM", "A100": "A100 SXM"}


class DeviceError(WorkbenchError):
    """A device name that the workbench has no datasheet for."""


def normalize_dtype(dtype: Any) -> str:
    key = str(dtype).lower()
    if key not in _DTYPE_ALIASES:
        raise ValueError(f"unknown dtype {dtype!r}: use one of {', '.join(DTYPES)}")
    return _DTYPE_ALIASES[key]


def known_devices() -> list[str]:
    return sorted(_DATASHEETS) + sorted(_ALIASES)


def datasheet_name(name: str) -> str | None:
    """Map a name ("H200", "NVIDIA H100 80GB HBM3", "h100-pcie") to a datasheet entry, or None."""
    up = re.sub(r"[-_]", " ", name.upper()).replace("NVIDIA", " ")
    tokens = set(up.split())
    for chip in ("H200", "H100", "A100", "B200"):
        if not re.search(rf"(?<![A-Z0-9]){chip}(?![0-9])", up):
            continue
        if chip == "B200":
            return "B200"
        if "NVL" in tokens and chip in ("H100", "H200"):
            return f"{chip} NVL"
        if "PCIE" in tokens and chip in ("H100", "A100"):
            return f"{chip} PCIe"
        return f"{chip} SXM"
    return None


@dataclass
class Ceilings:
    """Peak rates of one device. ``tflops`` maps bf16/fp16/fp8/tf32 to TFLOP/s (None: unknown)."""

    device: str
    source: str  #: "measured" or "datasheet"
    tflops: dict[str, float | None]
    bandwidth_tbs: float | None
    datasheet: Ceilings | None = None  #: the datasheet figures beside measured ones
    measured_at: str | None = None
    driver: str | None = None
    env: dict[str, Any] = field(default_factory=dict)
    method: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def peak_tflops(self, dtype: Any = "bf16") -> float:
        """Peak for ``dtype``; a measured entry that is missing falls back to the datasheet."""
        key = normalize_dtype(dtype)
        value = self.tflops.get(key)
        if value is None and self.datasheet is not None:
            value = self.datasheet.tflops.get(key)
        if value is None:
            raise DeviceError(f"no {key} peak is known for {self.device}.")
        return float(value)

    @property
    def bandwidth(self) -> float:
        value = self.bandwidth_tbs
        if value is None and self.datasheet is not None:
            value = self.datasheet.bandwidth_tbs
        if value is None:
            raise DeviceError(f"no memory bandwidth is known for {self.device}.")
        return float(value)

    def describe(self) -> str:
        """One line naming what the figures are: for chart titles and tables."""
        if self.source == "measured":
            when = (self.measured_at or "")[:10]
            return f"{self.device}, measured {when} (driver {self.driver})"
        return f"{self.device}, datasheet"

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["tflops"] = {k: json_num(v) for k, v in self.tflops.items()}
        d["bandwidth_tbs"] = json_num(self.bandwidth_tbs)
        d["datasheet"] = self.datasheet.to_dict() if self.datasheet is not None else None
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Ceilings:
        d = dict(d)
        ds = d.get("datasheet")
        d["datasheet"] = cls.from_dict(ds) if ds else None
        return cls(**d)


def datasheet(name: str) -> Ceilings:
    """Datasheet ceilings of a named device; works on machines with no GPU."""
    key = _ALIASES.get(name.strip(), None) or (name.strip() if name.strip() in _DATASHEETS else None)
    key = key or datasheet_name(name)
    if key is None:
        raise DeviceError(
            f"no datasheet for device {name!r}.",
            hint=f"use one of {', '.join(known_devices())}, or measure the local GPU with ceilings().",
        )
    rates, bw = _DATASHEETS[key]
    return Ceilings(
        device=key, source="datasheet", tflops=dict(rates), bandwidth_tbs=bw, notes=["dense, no sparsity"]
    )


def _cache_key(name: str, driver: str) -> str:
    return f"{name} | driver {driver}"


def _cache_file():
    return cache_dir() / "ceilings.json"


def _read_cache() -> dict[str, Any]:
    try:
        return json.loads(_cache_file().read_text())
    except (OSError, ValueError):
        return {}


def _write_cache(key: str, c: Ceilings) -> None:
    data = _read_cache()
    data[key] = c.to_dict()
    path = _cache_file()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
        tmp.replace(path)
    except OSError:
        pass  # an unwritable cache only costs a re-measurement


def _is_local(device: Any) -> bool:
    if device is None or isinstance(device, int):
        return True
    text = str(device)
    return text == "cuda" or text.startswith("cuda:")


def ceilings(device: Any = None, *, refresh: bool = False, size: int = 8192) -> Ceilings:
    """Ceilings of a device.

    - ``device=None`` / ``"cuda"`` / ``"cuda:N"`` / an index / a torch.device: the local GPU,
      measured once (cuBLAS GEMMs of ``size``^3 per dtype, a large device-to-device copy) and cached
      per device and driver in the user's cache directory; ``refresh=True`` measures again.
      Datasheet figures, where known, sit beside them in ``.datasheet``.
    - a name (``"H100"``, ``"H200"``, ``"H100 PCIe"``, ...): datasheet ceilings, no GPU needed.
    - a Ceilings object is returned as is.
    """
    if isinstance(device, Ceilings):
        return device
    if not _is_local(device):
        return datasheet(str(device))
    if not gpu_available():
        require_gpu("Measuring the device ceilings")
    import torch

    if device is None or isinstance(device, int):
        index = device
    else:
        text = str(device)
        index = int(text.split(":", 1)[1]) if ":" in text else None
    with torch.cuda.device(torch.cuda.current_device() if index is None else index):
        name = torch.cuda.get_device_name()
        key = _cache_key(name, driver_version())
        if not refresh:
            cached = _read_cache().get(key)
            if cached:
                try:
                    return Ceilings.from_dict(cached)
                except TypeError:
                    pass
        result = measure_ceilings(size=size)
    _write_cache(key, result)
    return result


def measure_ceilings(size: int = 8192, copy_bytes: int = 1 << 30, rep_ms: float = 200.0) -> Ceilings:
    """Measure the current GPU: cuBLAS GEMMs (bf16, fp16, tf32, fp8 via torch._scaled_mm) and a copy."""
    torch = require_gpu("Measuring the device ceilings")
    from workbench.measure.timing import bench

    name = torch.cuda.get_device_name()
    env = environment()
    rates: dict[str, float | None] = {k: None for k in DTYPES}
    method: dict[str, str] = {}
    notes: list[str] = []
    flops = 2.0 * size**3
    m = k = n = size

    def gemm(key: str, dtype) -> None:
        a = torch.randn(m, k, device="cuda", dtype=dtype)
        b = torch.randn(k, n, device="cuda", dtype=dtype)
        r = bench(torch.matmul, a, b, rep_ms=rep_ms, flush_l2=False, flops=flops, name=f"matmul {key}")
        rates[key] = r.tflops
        method[key] = f"torch.matmul (cuBLAS) {m}x{k}x{n}, median of {r.runs} runs, {r.method}"
        if not r.stable and r.warning:
            notes.append(f"{key}: {r.warning}")

    for key, dtype in (("bf16", torch.bfloat16), ("fp16", torch.float16)):
        try:
            gemm(key, dtype)
        except Exception as exc:
            notes.append(f"{key} GEMM failed: {type(exc).__name__}: {exc}")
    old = torch.get_float32_matmul_precision()
    try:
        torch.set_float32_matmul_precision("high")  # TF32 tensor cores for float32 matmul
        gemm("tf32", torch.float32)
    except Exception as exc:
        notes.append(f"tf32 GEMM failed: {type(exc).__name__}: {exc}")
    finally:
        torch.set_float32_matmul_precision(old)
    try:
        a = torch.randn(m, k, device="cuda").to(torch.float8_e4m3fn)
        b = torch.randn(n, k, device="cuda").to(torch.float8_e4m3fn).t()  # column-major K x N
        one = torch.ones((), device="cuda", dtype=torch.float32)

        def mm8():
            return scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16, use_fast_accum=True)

        r = bench(mm8, rep_ms=rep_ms, flush_l2=False, flops=flops, name="scaled_mm fp8")
        rates["fp8"] = r.tflops
        method["fp8"] = f"torch._scaled_mm e4m3 (cuBLASLt, fast accum) {m}x{k}x{n}, median of {r.runs} runs"
    except Exception as exc:
        notes.append(f"fp8 GEMM failed or unsupported: {type(exc).__name__}: {exc}")
    bw = None
    try:
        src = torch.empty(copy_bytes, dtype=torch.uint8, device="cuda").random_(0, 255)
        dst = torch.empty_like(src)
        r = bench(dst.copy_, src, rep_ms=rep_ms, flush_l2=False, bytes=2.0 * copy_bytes, name="d2d copy")
        bw = r.tbs
        method["bandwidth"] = (
            f"device-to-device copy of {copy_bytes / 2**30:.1f} GiB (read + write counted), "
            f"median of {r.runs} runs"
        )
        del src, dst
    except Exception as exc:
        notes.append(f"copy failed: {type(exc).__name__}: {exc}")
    torch.cuda.empty_cache()
    ds_name = datasheet_name(name)
    return Ceilings(
        device=name,
        source="measured",
        tflops=rates,
        bandwidth_tbs=bw,
        datasheet=datasheet(ds_name) if ds_name else None,
        measured_at=now_iso(),
        driver=driver_version(),
        env=env,
        method=method,
        notes=notes,
    )
