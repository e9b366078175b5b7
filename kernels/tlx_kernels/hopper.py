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


def require_sm90(op: str, t: Any, *others: Any) -> None:
    """Raise unless tensor ``t`` is on a CUDA GPU of compute capability 9.x: the public calls tune and launch on it,
    and the kernels issue wgmma and TMA (sm_90a). A clear error in place of every config failing to launch. An empty
    operand (``t`` or ``others``) is an empty problem: no kernel runs, and any device will do."""
    import torch

    if any(x.numel() == 0 for x in (t, *others)):
        return
    if getattr(t, "is_cuda", False):
        major, minor = torch.cuda.get_device_capability(t.device)
        if major != 9:
            raise RuntimeError(f"{op}: the kernels need a Hopper GPU (sm_90: wgmma, TMA); "
                               f"{torch.cuda.get_device_name(t.device)} is sm_{major}{minor}")
        return
    hint = ("move the tensors to the GPU" if torch.cuda.is_available() else
            "this machine has no CUDA GPU: compile and inspect a kernel with workbench.compile or a %%tlx cell")
    raise ValueError(f"{op}: the tensors must be on a CUDA GPU, got {getattr(t, 'device', type(t).__name__)}; {hint}")


__all__ = ["H200_SMS", "SMEM_LIMIT", "num_sms", "require_sm90"]
