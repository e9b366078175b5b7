"""Tensors as every verdict path handles them: what counts as one, which storage it lives in, the tensors an
argument holds, and the two in-place fills every check uses (NaN poison for outputs, fresh values for inputs)."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

__all__ = ["is_tensor", "poison_", "refill_", "storage_key", "tensors_in"]


def is_tensor(v: Any) -> bool:
    """A torch tensor (anything with a storage, a dtype and strides)."""
    return hasattr(v, "untyped_storage") and hasattr(v, "dtype") and hasattr(v, "stride")


def storage_key(t: Any) -> tuple:
    """Where ``t``'s storage lives: tensors with the same key alias each other."""
    return (t.device.type, t.device.index, t.untyped_storage().data_ptr())


def tensors_in(value: Any) -> list[Any]:
    """The tensors a value holds: itself, or those in its tuple, list, dict or dataclass (descriptor bases)."""
    if is_tensor(value):
        return [value]
    if isinstance(value, tuple | list):
        return [t for v in value for t in tensors_in(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in tensors_in(v)]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [t for f in dataclasses.fields(value) for t in tensors_in(getattr(value, f.name, None))]
    return []


def poison_(t: Any) -> bool:
    """Fill ``t`` with NaN (integers: the dtype's minimum); False for a dtype left alone (bool)."""
    import torch

    with torch.no_grad():
        if t.is_floating_point() or t.is_complex():
            t.fill_(float("nan"))
        elif t.dtype == torch.bool:
            return False
        else:
            t.fill_(torch.iinfo(t.dtype).min)
    return True


def refill_(t: Any, generator: Any) -> None:
    """New random values in ``t``, in place, shaped like the old ones (mean, spread, sign)."""
    import torch

    with torch.no_grad():
        f = t.detach().to(torch.complex128 if t.is_complex() else torch.float64)
        finite = f[torch.isfinite(f)] if not t.is_complex() else f.real
        mean = float(finite.mean()) if finite.numel() else 0.0
        std = float(finite.std()) if finite.numel() > 1 else 1.0
        if not math.isfinite(std) or std == 0.0:
            std = 1.0
        new = torch.randn(tuple(t.shape), generator=generator, device=t.device, dtype=torch.float32) * std + mean
        if finite.numel() and not t.is_complex() and float(finite.min()) >= 0:
            new = new.abs()
        t.copy_(new.to(t.dtype))
