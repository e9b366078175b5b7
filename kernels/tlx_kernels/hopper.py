"""What the kernels assume of the GPU (Hopper, sm_90): its SM count and the shared memory one CTA may use."""

from __future__ import annotations

from typing import Any

H200_SMS = 132  # streaming multiprocessors of an H100/H200 SXM (used when no GPU is present)
SMEM_LIMIT = 232448  # dynamic shared memory per CTA on sm_90 (227 KiB)


def num_sms(device: Any = None) -> int:
    """SM count of ``device`` (a CUDA device, its name, or a tensor on it; None: the current GPU); 132
    (H100/H200 SXM) for a CPU device or without a GPU."""
    try:
        import torch

        dev = getattr(device, "device", device)
        if torch.cuda.is_available() and (dev is None or getattr(dev, "type", "cuda") == "cuda"):
            return torch.cuda.get_device_properties(dev or 0).multi_processor_count
    except Exception:  # pragma: no cover - best effort
        pass
    return H200_SMS


__all__ = ["H200_SMS", "SMEM_LIMIT", "num_sms"]
