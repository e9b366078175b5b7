"""Broadcast fusion for ranking models: a linear layer over (user features ++ candidate features), fused in TLX.

The op
------
A ranking request scores ``C`` candidate items for one user. The layer's input for candidate ``c``
of user ``b`` is the user's features followed by the candidate's::

    U : (B, D_u)        user features, one row per user (request)
    X : (B, C, D_x)     candidate features, C per user
    W : (D_u + D_x, N)  the layer's weight (input-major: rows 0..D_u-1 meet U, the rest meet X)
    bias : (N,) or None,  act in {"none", "relu", "silu"}

    Y[b, c, :] = act(concat(U[b], X[b, c]) @ W + bias)          Y : (B, C, N), dtype of the inputs

bf16 or fp16 in and out, fp32 accumulation. Every candidate of a user has the same ``C`` (ragged
candidate lists, e.g. padded to ``C`` or split by offsets, are not supported here).

Three ways to compute it
------------------------
- :func:`materialized` (the naive path, torch + cuBLAS): ``repeat_interleave`` each user's row ``C``
  times, ``cat`` with ``X`` and multiply the ``B*C x (D_u + D_x)`` result by ``W`` in one GEMM.
- :func:`decomposed` (torch + cuBLAS, nothing repeated): by linearity ``concat(u, x) @ W =
  u @ W[:D_u] + x @ W[D_u:]``, so ``Y = act(X @ W_x + (U @ W_u + bias)[:, None])``: a small GEMM over
  the ``B`` users, a GEMM over the ``B*C`` candidate rows, and a pass over ``Y`` for the broadcast add.
- :func:`broadcast_linear` (the fused TLX kernel, :mod:`.kernel`): one persistent warp-specialized
  kernel. Per work unit (user ``b``, a run of its candidate tiles, a column tile) a producer warp
  TMA-loads user ``b``'s features and ``W_u`` once, then the candidate tiles and ``W_x``, through an
  mbarrier-guarded ring; two consumer warpgroups (one column half each) compute ``U[b] @ W_u + bias``
  with wgmma, start every candidate tile's fp32 accumulator from that row broadcast to all its rows,
  accumulate ``X_tile @ W_x`` with async wgmma, apply the activation and TMA-store the tile.

Where the fused kernel saves
----------------------------
1. Bytes: nothing the size of ``B*C x D_u`` exists. The materialized path writes the repeated user rows,
   reads them back with ``X`` to write the concatenation, and the GEMM reads that again:
   ``B*C*(4*D_u + 2*D_x)`` elements of extra memory traffic (:func:`shapes.materialized_extra_bytes`).
2. FLOPs: the user part is multiplied once per (user, column tile, candidate chunk), not once per
   candidate: ``2*N*(B*C*D_x + B*D_u)`` useful FLOPs instead of ``2*N*B*C*(D_u + D_x)``. The kernel pays
   a 64-row wgmma for each user row (the smallest wgmma M; 63 rows computed and dropped), which is
   ``64 / (rows in the unit's candidate tiles)`` of the candidate work when ``D_u = D_x``.
3. Against the decomposed path: one kernel instead of three, and no write-then-reread of ``Y`` for the
   broadcast add (the add is the accumulator's initial value).

Module contents: :data:`CONFIGS`/:data:`DEFAULT`, :func:`prepare` (launch arguments; CPU tensors work,
for compile-only inspection), :func:`launch`, :func:`broadcast_linear` (tunes on first use),
:func:`reference` (fp32), :func:`materialized`, :func:`decomposed`, :data:`BENCH_SHAPES` and the
tutorial's main shape :data:`MAIN`.
"""

from __future__ import annotations

from tlx_kernels.broadcast.host import (
    BMU,
    CONFIGS,
    DEFAULT,
    SMEM_LIMIT,
    broadcast_linear,
    config_name,
    empty_out,
    launch,
    num_sms,
    prepare,
    schedule,
    smem_bytes,
    sweep_configs,
)
from tlx_kernels.broadcast.kernel import ACT_CODES, broadcast_linear_kernel
from tlx_kernels.broadcast.shapes import (
    BENCH_SHAPES,
    MAIN,
    TEST_SHAPES,
    Shape,
    materialized_extra_bytes,
    materialized_flops,
    op_flops,
)
from tlx_kernels.broadcast.torch_ops import decomposed, make_inputs, materialized, reference, rel_err

KERNEL = broadcast_linear_kernel

__all__ = [
    "ACT_CODES",
    "BENCH_SHAPES",
    "BMU",
    "CONFIGS",
    "DEFAULT",
    "KERNEL",
    "MAIN",
    "SMEM_LIMIT",
    "TEST_SHAPES",
    "Shape",
    "broadcast_linear",
    "broadcast_linear_kernel",
    "config_name",
    "decomposed",
    "empty_out",
    "launch",
    "make_inputs",
    "materialized",
    "materialized_extra_bytes",
    "materialized_flops",
    "num_sms",
    "op_flops",
    "prepare",
    "reference",
    "rel_err",
    "schedule",
    "smem_bytes",
    "sweep_configs",
]
