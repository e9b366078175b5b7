"""``grouped_linear``: the grouped GEMM as a differentiable op (``torch.autograd``), for training an MoE layer.

The forward is :func:`.calls.grouped_mm`; the backward calls :func:`.calls.grouped_mm_dx` for ``x``'s gradient and
:func:`.calls.grouped_mm_dw` for ``w``'s, each only when that input needs one. Rows of ``x`` past the last expert
(``offsets[E - 1] <= row``) take part in nothing: their output rows are zeros and so are their gradients (the
kernels leave such rows unwritten, so the outputs here start zeroed: one memset, no host synchronisation to read
``offsets``). An expert with no tokens gets a zero weight gradient.
"""

from __future__ import annotations

from typing import Any

from tlx_kernels.moe.calls import grouped_mm, grouped_mm_dw, grouped_mm_dx


def _zeros(rows: int, cols: int, like) -> Any:
    import torch

    return torch.zeros((rows, cols), dtype=like.dtype, device=like.device)


def _function():
    import torch

    class GroupedLinear(torch.autograd.Function):
        """``out[rows of e] = x[rows of e] @ w[e]`` with its backward (see the module's docstring)."""

        @staticmethod
        def forward(ctx, x, w, offsets, variant):
            ctx.save_for_backward(x, w, offsets)
            ctx.variant = variant
            return grouped_mm(x, w, offsets, variant=variant, out=_zeros(x.shape[0], w.shape[2], x))

        @staticmethod
        def backward(ctx, dy):
            x, w, offsets = ctx.saved_tensors
            dy = dy.contiguous()  # autograd may hand an expanded or transposed gradient: the kernels read rows by TMA
            dx = dw = None
            if ctx.needs_input_grad[0]:
                dx = grouped_mm_dx(dy, w, offsets, variant=ctx.variant, out=_zeros(x.shape[0], x.shape[1], x))
            if ctx.needs_input_grad[1]:
                dw = grouped_mm_dw(x, dy, offsets, variant=ctx.variant)
            return dx, dw, None, None

    return GroupedLinear


_GROUPED_LINEAR: Any = None


def grouped_linear(x, w, offsets, *, variant: str | None = None):
    """``out[rows of e] = x[rows of e] @ w[e]`` (x ``[T, K]`` sorted by expert, w ``[E, K, N]``, offsets int32
    ``[E]`` cumulative token counts), differentiable in ``x`` and ``w``. Rows past ``offsets[E - 1]`` are zeros.
    ``variant`` holds all three products to one kernel (``ws_cooperative`` or ``triton``); by default each product
    is tuned on its first call of a problem size."""
    global _GROUPED_LINEAR
    if _GROUPED_LINEAR is None:
        _GROUPED_LINEAR = _function()
    return _GROUPED_LINEAR.apply(x, w, offsets, variant)


__all__ = ["grouped_linear"]
