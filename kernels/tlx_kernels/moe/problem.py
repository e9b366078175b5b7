"""Host side of the grouped GEMMs: the three products of a mixture-of-experts layer as kernel arguments.

A layer with ``E`` experts routes each token to some experts; the tokens, duplicated per chosen expert and sorted
by expert, form ``x`` (``[T, K]``), and ``offsets`` (int32, ``[E]``) holds the cumulative token counts: expert
``e`` owns rows ``offsets[e - 1] ... offsets[e] - 1`` (``offsets[-1]`` read as 0), so ``offsets[E - 1] <= T``
and any count, 0 included, is allowed. The weights ``w`` are ``[E, K, N]``. Three products, one kernel each:

- ``fwd``: ``out[rows of e] = x[rows of e] @ w[e]`` (``[T, N]``);
- ``dx`` (backward): ``dx[rows of e] = dy[rows of e] @ w[e]^T`` (``[T, K]``);
- ``dw`` (backward): ``dw[e] = x[rows of e]^T @ dy[rows of e]`` (``[E, K, N]``; zeros for an empty expert).

Every kernel here computes ``C_g = A_g @ B_g`` per group in the terms of :mod:`.schedule`: ``fwd`` and ``dx``
have ragged output rows (``dx`` reads ``w[e]`` transposed), ``dw`` has a ragged reduction. Rows past
``offsets[E - 1]`` of ``out`` / ``dx`` are not written. Operands are bf16 or fp16, row-major and contiguous,
with ``K`` and ``N`` multiples of 8 (TMA: 16-byte rows; every model dimension is); accumulation is fp32.
``offsets`` is read on the device only: no host synchronisation (it is not validated: a decreasing or
too-large entry is the caller's error, as for ``torch._grouped_mm``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import triton

from tlx_kernels.hopper import num_sms

KINDS = ("fwd", "dx", "dw")


@dataclass
class Problem:
    """One grouped product as a kernel sees it: ``C_g = A_g @ B_g`` for the ``E`` groups of ``offsets``.

    ``M`` is the output rows of a ``dw`` group (``K`` of the layer; unused for ragged rows), ``N`` the output
    columns, ``K`` the reduction of a ragged-row group (unused for ``dw``), ``T`` the tokens."""

    kind: str
    a: Any
    b: Any
    c: Any
    offsets: Any
    E: int
    T: int
    M: int
    N: int
    K: int

    @property
    def ragged_k(self) -> bool:
        return self.kind == "dw"

    @property
    def b_t(self) -> bool:
        return self.kind == "dx"

    @property
    def empty(self) -> bool:
        """No kernel needed: nothing to write, or nothing to sum (then the output is zeros)."""
        if self.ragged_k:
            return self.E == 0 or self.M == 0 or self.N == 0 or self.T == 0
        return self.E == 0 or self.T == 0 or self.N == 0 or self.K == 0

    def args(self) -> tuple:
        """The kernels' leading arguments."""
        return (self.a, self.b, self.c, self.offsets, self.E, self.M, self.N, self.K)

    def constexprs(self) -> dict[str, bool]:
        return dict(B_T=self.b_t, RAGGED_K=self.ragged_k)

    def max_tiles(self, BM: int, BN: int) -> int:
        """An upper bound of the output tiles, known without reading ``offsets`` (each group adds at most one
        partial row tile)."""
        if self.ragged_k:
            return self.E * triton.cdiv(self.M, BM) * triton.cdiv(self.N, BN)
        return (triton.cdiv(self.T, BM) + self.E) * triton.cdiv(self.N, BN)

    def grid(self, BM: int, BN: int, sms: int | None = None) -> tuple[int]:
        """Persistent: at most one program per SM, never more than the tiles."""
        return (max(1, min(self.max_tiles(BM, BN), sms or num_sms(self.a))),)

    def key(self) -> tuple:
        """What a tuned config is valid for: the kind, sizes and dtype (not the routing)."""
        return (self.kind, self.E, self.T, self.M, self.N, self.K, str(self.a.dtype))


def _need(cond: bool, what: str) -> None:
    if not cond:
        raise ValueError(what)


def _checked(name: str, shapes_ok: bool, expected: str, tensors: dict[str, Any], offsets, kn) -> None:
    """Shapes (``shapes_ok``, else an error naming ``expected``), dtypes, layout, device, and the layer's ``K`` and
    ``N`` (``kn()``, read once the shapes are known good) multiples of 8."""
    import torch

    got = ", ".join(str(tuple(t.shape)) for t in (*tensors.values(), offsets))
    _need(shapes_ok, f"{name}: {expected} expected, got {got}")
    dtypes = {t.dtype for t in tensors.values()}
    if len(dtypes) != 1 or next(iter(dtypes)) not in (torch.bfloat16, torch.float16):
        raise TypeError(f"{name}: {', '.join(tensors)} must all be bf16 or all fp16, got "
                        + ", ".join(str(t.dtype) for t in tensors.values()))
    for n, t in tensors.items():
        _need(t.is_contiguous(), f"{name}: {n} must be contiguous (row-major)")
        _need(t.data_ptr() % 16 == 0, f"{name}: {n} must be 16-byte aligned (TMA)")
        _need(t.device == offsets.device, f"{name}: {n} is on {t.device}, offsets on {offsets.device}")
    _need(offsets.dtype == torch.int32, f"{name}: offsets must be int32 (cumulative token counts), got {offsets.dtype}")
    bad = {k: v for k, v in zip("KN", kn(), strict=True) if v % 8}
    _need(not bad, f"{name}: {', '.join(f'{k}={v}' for k, v in bad.items())} must be a multiple of 8 "
          "(TMA reads 16-byte rows)")


def output(shape: tuple[int, ...], like, out=None, name: str = "grouped_mm"):
    """``out`` checked (shape, dtype, contiguity, alignment), or a new tensor."""
    import torch

    if out is None:
        return torch.empty(shape, dtype=like.dtype, device=like.device)
    _need(tuple(out.shape) == tuple(shape) and out.dtype == like.dtype and out.is_contiguous()
          and out.data_ptr() % 16 == 0 and out.device == like.device,
          f"{name}: out must be a contiguous, 16-byte aligned {like.dtype} tensor of shape {tuple(shape)} "
          f"on {like.device}")
    return out


def forward(x, w, offsets, out=None) -> Problem:
    """``out[rows of e] = x[rows of e] @ w[e]``: x ``[T, K]``, w ``[E, K, N]``."""
    _checked("grouped_mm", x.dim() == 2 and w.dim() == 3 and x.shape[1] == w.shape[1]
             and offsets.shape == (w.shape[0],), "x [T, K], w [E, K, N], offsets [E]", dict(x=x, w=w), offsets,
             lambda: w.shape[1:])
    (T, K), (E, _, N) = x.shape, w.shape
    return Problem("fwd", x, w, output((T, N), x, out), offsets, E, T, 0, N, K)


def backward_dx(dy, w, offsets, out=None) -> Problem:
    """``dx[rows of e] = dy[rows of e] @ w[e]^T``: dy ``[T, N]``, w ``[E, K, N]``."""
    _checked("grouped_mm_dx", dy.dim() == 2 and w.dim() == 3 and dy.shape[1] == w.shape[2]
             and offsets.shape == (w.shape[0],), "dy [T, N], w [E, K, N], offsets [E]", dict(dy=dy, w=w), offsets,
             lambda: w.shape[1:])
    (T, N), (E, K, _) = dy.shape, w.shape
    # the kernel's terms: output columns are the layer's K, the reduction its N; b[g] is read as [K, N] = B^T
    return Problem("dx", dy, w, output((T, K), dy, out, "grouped_mm_dx"), offsets, E, T, 0, K, N)


def backward_dw(x, dy, offsets, out=None) -> Problem:
    """``dw[e] = x[rows of e]^T @ dy[rows of e]``: x ``[T, K]``, dy ``[T, N]``, dw ``[E, K, N]``."""
    _checked("grouped_mm_dw", x.dim() == 2 and dy.dim() == 2 and x.shape[0] == dy.shape[0] and offsets.dim() == 1,
             "x [T, K], dy [T, N], offsets [E]", dict(x=x, dy=dy), offsets, lambda: (x.shape[1], dy.shape[1]))
    (T, K), N, E = x.shape, dy.shape[1], offsets.shape[0]
    return Problem("dw", x, dy, output((E, K, N), x, out, "grouped_mm_dw"), offsets, E, T, K, N, T)


BUILDERS = {"fwd": forward, "dx": backward_dx, "dw": backward_dw}


def problem(kind: str, a, b, offsets, out=None) -> Problem:
    """The :class:`Problem` of ``kind`` (``fwd``: a=x, b=w; ``dx``: a=dy, b=w; ``dw``: a=x, b=dy)."""
    if kind not in BUILDERS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    return BUILDERS[kind](a, b, offsets, out)


def finish_empty(p: Problem):
    """The output of a problem with nothing to compute: zeros where a sum over nothing is due."""
    if p.ragged_k or p.K == 0:
        p.c.zero_()
    return p.c


__all__ = ["BUILDERS", "KINDS", "Problem", "backward_dw", "backward_dx", "finish_empty", "forward", "output",
           "problem"]
