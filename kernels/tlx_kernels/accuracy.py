"""How far a kernel's output is from its reference: one relative error for every kernel of the library."""

from __future__ import annotations

import math


def rel_err(out, ref) -> float:
    """max |out - ref| / max |ref| (inf if ``out`` holds NaN or inf)."""
    import torch

    o, r = out.float(), ref.float()
    if not torch.isfinite(o).all():
        return math.inf
    den = r.abs().max().item() or 1.0
    return (o - r).abs().max().item() / den


__all__ = ["rel_err"]
