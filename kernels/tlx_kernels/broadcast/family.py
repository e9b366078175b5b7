"""The broadcast-fusion family as the workbench's benchmark runner takes it (``workbench.measure.family``;
``bench/broadcast.py``): ``Y[b, c] = act(concat(U[b], X[b, c]) @ W + bias)`` at the shapes of :data:`BENCH_SHAPES`
(a shape is the fields of :class:`~tlx_kernels.broadcast.shapes.Shape` as a tuple), the fp32 reference, our fused
kernel's configs and public call ``broadcast_linear`` (tuned over its configs on first use), and the baselines,
measured in the same run: ``materialized`` (repeat_interleave + cat + one cuBLAS GEMM, the repeat included) and
``decomposed`` (``U @ W_u`` once per user, ``X @ W_x``, a broadcast add: nothing repeated, not fused). FLOPs are
the op's own (``2*N*(B*C*D_x + B*D_u)``, the user part once per user), so TFLOP/s compare times, not hardware
rates. Configs are checked on the odd and the realistic test shapes first.

Nothing here imports the workbench (the runner duck-types :class:`BroadcastFamily`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from tlx_kernels.broadcast import host
from tlx_kernels.broadcast.shapes import BENCH_SHAPES, MAIN, TEST_SHAPES, Shape, op_flops
from tlx_kernels.broadcast.torch_ops import decomposed, make_inputs, materialized, reference, rel_err

OURS = "tlx_broadcast"


def as_tuple(s: Shape) -> tuple:
    return dataclasses.astuple(s)


class BroadcastFamily:
    ref = "tlx_kernels.broadcast.family:BROADCAST"
    name = "broadcast"
    kernels = (OURS,)
    baselines = ("materialized", "decomposed")
    shapes = {"bench": [as_tuple(s) for s in BENCH_SHAPES], "quick": [as_tuple(MAIN)],
              "sweep": [as_tuple(s) for s in BENCH_SHAPES]}

    def case(self, shape: tuple) -> str:
        return "all"

    def checks(self, shape: tuple) -> list[tuple]:
        return [as_tuple(s) for s in TEST_SHAPES if s.name in ("odd", "realistic")]

    def shape_name(self, shape: tuple) -> str:
        s = Shape(*shape)
        return s.name or s.label()

    def parse_shape(self, text: str) -> tuple:
        """A name of :data:`BENCH_SHAPES`."""
        named = {s.name: s for s in BENCH_SHAPES}
        if text not in named:
            raise ValueError(f"unknown shape {text!r}; choose from {list(named)}")
        return as_tuple(named[text])

    def flops(self, shape: tuple) -> float:
        return op_flops(Shape(*shape))

    def inputs(self, shape: tuple, dtype: str, device: str, seed: int = 1) -> dict[str, Any]:
        s = Shape(*shape)
        U, X, W, b = make_inputs(s.B, s.C, s.DU, s.DX, s.N, device=device, bias=s.bias, seed=seed)
        return dict(U=U, X=X, W=W, b=b, act=s.act)

    def reference(self, inputs: dict[str, Any]) -> Any:
        return reference(inputs["U"], inputs["X"], inputs["W"], inputs["b"], inputs["act"])

    def tolerance(self, dtype: str) -> float:
        return 1e-2

    def error(self, out: Any, ref: Any) -> float:
        return rel_err(out, ref)

    def configs(self, kernel: str, space: str, shape: tuple) -> list[dict]:
        return [dict(c) for c in (host.sweep_configs() if space == "candidates" else host.CONFIGS)]

    def config_name(self, cfg: dict) -> str:
        return host.config_name(cfg)

    def launch(self, kernel: str, cfg: dict, inputs: dict[str, Any]) -> tuple[Callable[[], Any], Any]:
        U, X, W, b, act = inputs["U"], inputs["X"], inputs["W"], inputs["b"], inputs["act"]
        out = host.empty_out(X.shape[0], X.shape[1], W.shape[1], U.dtype, U.device, fill=float("nan"))
        return (lambda: host.launch(U, X, W, b, act, cfg, out)), out

    def call(self, kernel: str, inputs: dict[str, Any], configs: list[dict] | None) -> Callable[..., Any]:
        """A user's ``broadcast_linear(U, X, W, bias, act)``, tuning over ``configs`` on its first call."""
        if configs is not None:
            host.CONFIGS[:] = [dict(c) for c in configs]
        U, X, W, b, act = inputs["U"], inputs["X"], inputs["W"], inputs["b"], inputs["act"]
        return lambda out=None: host.broadcast_linear(U, X, W, b, act, out=out)

    def tuned(self, kernel: str, inputs: dict[str, Any]) -> dict | None:
        U, X, W, b = inputs["U"], inputs["X"], inputs["W"], inputs["b"]
        key = (tuple(U.shape), tuple(X.shape), W.shape[1], str(U.dtype), inputs["act"], b is not None)
        return host._tuner.cache.get(key)

    def baseline(self, name: str, inputs: dict[str, Any], limit: int) -> dict[str, Callable[[], Any]]:
        fn = {"materialized": materialized, "decomposed": decomposed}[name]
        U, X, W, b, act = inputs["U"], inputs["X"], inputs["W"], inputs["b"], inputs["act"]
        return {name: lambda: fn(U, X, W, b, act)}

    def targets(self, shape: tuple) -> dict[str, float]:
        return {"materialized": 2.0} if Shape(*shape).name == MAIN.name else {}  # issue 18


BROADCAST = BroadcastFamily()

__all__ = ["BROADCAST", "OURS", "BroadcastFamily"]
