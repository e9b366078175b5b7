"""The op in plain PyTorch: the fp32 reference, the materialized baseline and the decomposed baseline (and the
library's relative error, :func:`rel_err`, to compare them)."""

from __future__ import annotations

from typing import Any

from tlx_kernels.accuracy import rel_err


def _act(y, act: str):
    import torch

    if act == "relu":
        return torch.relu_(y)
    if act == "silu":
        return torch.nn.functional.silu(y, inplace=True)
    if act != "none":
        raise ValueError(f"unknown activation {act!r}")
    return y


def reference(U, X, W, bias=None, act: str = "none"):
    """The definition, in fp32: ``act(concat(U[b], X[b, c]) @ W + bias)`` for every user ``b`` and candidate ``c``.

    Returns fp32 ``(B, C, N)``. Builds the concatenation (``B*C x (D_u + D_x)`` fp32): for test sizes.
    """
    import torch

    B, C, DX = X.shape
    Z = torch.cat([U.float()[:, None, :].expand(B, C, U.shape[1]), X.float()], dim=2)
    Y = Z.reshape(B * C, -1) @ W.float()
    if bias is not None:
        Y += bias.float()
    return _act(Y, act).reshape(B, C, -1)


def materialized(U, X, W, bias=None, act: str = "none"):
    """The naive path: repeat each user's row once per candidate, concatenate, one cuBLAS GEMM (+ bias, act).

    ``repeat_interleave`` then ``cat`` write ``B*C x D_u`` and ``B*C x (D_u + D_x)`` to memory; the GEMM
    reads the concatenation (``torch.addmm``: bias in cuBLAS's epilogue; ReLU fused through
    ``torch._addmm_activation`` where torch has it, else one more pass, as is SiLU).
    """
    import torch

    B, C, DX = X.shape
    Z = torch.cat([U.repeat_interleave(C, dim=0), X.reshape(B * C, DX)], dim=1)
    if bias is not None and act == "relu" and hasattr(torch, "_addmm_activation"):
        return torch._addmm_activation(bias, Z, W).reshape(B, C, -1)
    Y = torch.addmm(bias, Z, W) if bias is not None else Z @ W
    return _act(Y, act).reshape(B, C, -1)


def decomposed(U, X, W, bias=None, act: str = "none"):
    """Unfused but not materialized: the user part once per user, broadcast in the add.

    ``Y = act(X @ W_x + (U @ W_u + bias)[:, None, :])``: two cuBLAS GEMMs and an elementwise pass over
    ``Y`` (the user projection is rounded to the input dtype before the add, unlike the fused kernel).
    """
    import torch

    B, C, DX = X.shape
    DU = U.shape[1]
    UW = torch.addmm(bias, U, W[:DU]) if bias is not None else U @ W[:DU]
    Y = (X.reshape(B * C, DX) @ W[DU:]).reshape(B, C, -1)
    Y += UW[:, None, :]
    return _act(Y, act)


def make_inputs(
    B: int, C: int, DU: int, DX: int, N: int, dtype: Any = None, device: Any = "cuda", bias: bool = True, seed: int = 0
):
    """Random (U, X, W, bias) with unit-variance outputs (features ~ N(0, 1), W scaled by 1/sqrt(D_u + D_x))."""
    import torch

    dtype = dtype or torch.bfloat16
    g = torch.Generator(device=device).manual_seed(seed)
    U = torch.randn(B, DU, device=device, generator=g).to(dtype)
    X = torch.randn(B, C, DX, device=device, generator=g).to(dtype)
    W = (torch.randn(DU + DX, N, device=device, generator=g) / (DU + DX) ** 0.5).to(dtype)
    b = torch.randn(N, device=device, generator=g).to(dtype) if bias else None
    return U, X, W, b


__all__ = ["decomposed", "make_inputs", "materialized", "reference", "rel_err"]
