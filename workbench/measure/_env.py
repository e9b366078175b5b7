"""Shared helpers: the GPU check, versions and driver, the cache directory."""

from __future__ import annotations

import datetime as _dt
import functools
import os
import platform
import re
import subprocess
from pathlib import Path
from typing import Any

from workbench.errors import WorkbenchError

NO_GPU_HINT = (
    "Compiling, the IR and layout views and the static roofline work without one, e.g. "
    'workbench.measure.roofline(flops, bytes, device="H100"); run on a machine with an NVIDIA GPU '
    "to time kernels."
)


class GPURequiredError(WorkbenchError):
    """Timing, capture and ceiling measurement need a CUDA GPU and none is visible."""


def gpu_available() -> bool:
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a dependency
        return False
    try:
        return bool(torch.cuda.is_available())
    except Exception:  # pragma: no cover - broken driver installs
        return False


def require_gpu(what: str = "Timing"):
    """Return the torch module, or raise GPURequiredError with the sentence users see."""
    if not gpu_available():
        raise GPURequiredError(
            f"{what} needs a CUDA GPU, and PyTorch sees none on this machine "
            "(torch.cuda.is_available() is False).",
            hint=NO_GPU_HINT,
        )
    import torch

    return torch


def now_iso() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


@functools.cache
def driver_version() -> str:
    """The NVIDIA driver version ("570.124.06"), or the CUDA driver API version, or "unknown"."""
    try:
        text = Path("/proc/driver/nvidia/version").read_text()
        m = re.search(r"Kernel Module\s+(?:for\s+\S+\s+)?([0-9][0-9.]+)", text)
        if m:
            return m.group(1)
    except OSError:
        pass
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=10,
        )
        if out.returncode == 0 and out.stdout.strip():
            return out.stdout.strip().splitlines()[0].strip()
    except (OSError, subprocess.SubprocessError):
        pass
    try:
        import ctypes

        lib = ctypes.CDLL("libcuda.so.1")
        v = ctypes.c_int(0)
        if lib.cuDriverGetVersion(ctypes.byref(v)) == 0:
            return f"cuda-driver-api {v.value // 1000}.{(v.value % 1000) // 10}"
    except (OSError, AttributeError):
        pass
    return "unknown"


def device_name(index: int | None = None) -> str:
    torch = require_gpu("Naming the local GPU")
    idx = torch.cuda.current_device() if index is None else index
    return torch.cuda.get_device_name(idx)


def versions() -> dict[str, str | None]:
    info: dict[str, str | None] = {"python": platform.python_version()}
    try:
        import torch

        info["torch"] = torch.__version__
        info["cuda_runtime"] = torch.version.cuda
    except ImportError:  # pragma: no cover
        info["torch"] = None
    try:
        import triton

        info["triton"] = triton.__version__
    except ImportError:  # pragma: no cover
        info["triton"] = None
    return info


def environment(index: int | None = None) -> dict[str, Any]:
    """Where and when a number was measured: device, driver, versions, timestamp."""
    env: dict[str, Any] = {"measured_at": now_iso(), **versions()}
    if gpu_available():
        env["device"] = device_name(index)
        env["driver"] = driver_version()
    else:
        env["device"] = None
        env["driver"] = None
    return env


def cache_dir() -> Path:
    """The user's cache directory for the workbench (TLX_WORKBENCH_CACHE_DIR overrides it)."""
    override = os.environ.get("TLX_WORKBENCH_CACHE_DIR")
    if override:
        return Path(override).expanduser()
    try:
        import platformdirs

        return Path(platformdirs.user_cache_dir("tlx-workbench"))
    except ImportError:
        return Path("~/.cache/tlx-workbench").expanduser()


