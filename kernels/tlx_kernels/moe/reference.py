"""The grouped products computed the plain way: a loop of ``torch.matmul`` over the groups, in fp32."""

from __future__ import annotations

from tlx_kernels.moe.problem import KINDS


def bounds(offsets) -> list[tuple[int, int]]:
    """``[start, end)`` token range of each group (reads ``offsets`` on the host)."""
    ends = [int(v) for v in offsets.tolist()]
    return list(zip([0, *ends[:-1]], ends, strict=True))


def reference(kind: str, a, b, offsets):
    """The fp32 result of ``kind`` (``fwd``: a=x, b=w; ``dx``: a=dy, b=w; ``dw``: a=x, b=dy), one
    ``torch.matmul`` per group; rows past the last group are zero."""
    import torch

    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    a32, b32 = a.float(), b.float()
    if kind == "dw":
        out = torch.zeros(offsets.shape[0], a.shape[1], b.shape[1], dtype=torch.float32, device=a.device)
        for e, (s, t) in enumerate(bounds(offsets)):
            out[e] = a32[s:t].T @ b32[s:t]
        return out
    cols = b.shape[2] if kind == "fwd" else b.shape[1]
    out = torch.zeros(a.shape[0], cols, dtype=torch.float32, device=a.device)
    for e, (s, t) in enumerate(bounds(offsets)):
        out[s:t] = a32[s:t] @ (b32[e] if kind == "fwd" else b32[e].T)
    return out


def covered_rows(offsets) -> int:
    """Rows of ``out`` / ``dx`` the kernels write: up to the last group's end."""
    return int(offsets[-1]) if offsets.numel() else 0


__all__ = ["bounds", "covered_rows", "reference"]
