"""Is there a GPU to run on? Detected once per process (``TLX_WORKBENCH_NO_GPU=1`` forces "no")."""

from __future__ import annotations

import functools
import os
from dataclasses import asdict, dataclass
from typing import Any


@dataclass(frozen=True)
class Device:
    available: bool
    kind: str  # 'cuda', 'hip' or 'none'
    name: str | None
    arch: str | None
    reason: str | None  # why there is no GPU

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def torch_device(self) -> str:
        return "cuda" if self.available else "cpu"


@functools.lru_cache(maxsize=1)
def detect() -> Device:
    if os.environ.get("TLX_WORKBENCH_NO_GPU", "").strip() not in ("", "0"):
        return Device(False, "none", None, None, "TLX_WORKBENCH_NO_GPU is set")
    try:
        import torch
    except Exception as e:  # pragma: no cover - torch is a dependency
        return Device(False, "none", None, None, f"torch cannot be imported ({e})")
    try:
        if not torch.cuda.is_available():
            if getattr(torch.version, "cuda", None) is None and getattr(torch.version, "hip", None) is None:
                why = f"this torch ({torch.__version__}) is a CPU-only build"
            else:
                why = "torch.cuda.is_available() is False (no visible CUDA device)"
            return Device(False, "none", None, None, why)
        idx = torch.cuda.current_device()
        name = torch.cuda.get_device_name(idx)
        major, minor = torch.cuda.get_device_capability(idx)
        kind = "hip" if getattr(torch.version, "hip", None) else "cuda"
        return Device(True, kind, name, f"sm_{major}{minor}" if kind == "cuda" else None, None)
    except Exception as e:
        return Device(False, "none", None, None, f"the GPU could not be queried ({type(e).__name__}: {e})")
