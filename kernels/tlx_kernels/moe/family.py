"""The grouped-GEMM (mixture of experts) family as the workbench's benchmark runner takes it
(``workbench.measure.family``; ``bench/moe.py``): a shape is ``(E, K, N, T, routing, kind, layer)``: E local
experts, x ``[T, K]`` (tokens sorted by expert, routed ``uniform`` or ``skewed``: :mod:`.routing`), w ``[E, K, N]``,
bf16, and the product (``fwd``: x @ w[e]; ``dx``: dy @ w[e]^T; ``dw``: x_e^T @ dy_e). Ours: the public call
``grouped_mm`` (tuned over both variants on its first call) and the same call held to each variant; baselines:
``torch._grouped_mm`` (cuBLAS/CUTLASS grouped) and a loop of ``torch.matmul`` over the non-empty experts (their
token ranges known on the host beforehand). The reference: a loop of fp32 products. A sweep's kernel is
``candidate``: every config and trial of both variants with GROUP_M 1, 8, 16 and 64 as single launches.

Nothing here imports the workbench (the runner duck-types :class:`MoeFamily`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tlx_kernels.moe import calls, routing
from tlx_kernels.moe.reference import bounds, covered_rows, reference

KINDS = ("fwd", "dx", "dw")
PUBLIC = {"fwd": calls.grouped_mm, "dx": calls.grouped_mm_dx, "dw": calls.grouped_mm_dw}
TARGETS = {"skewed": 1.10, "uniform": 1.00}  # issue 27: the best of ours vs torch._grouped_mm, fwd
SWEPT = "candidate"  # a sweep's kernel: every candidate config as one launch


class MoeFamily:
    ref = "tlx_kernels.moe.family:MOE"
    name = "moe"
    kernels = ("grouped_mm", *calls.VARIANTS)
    baselines = ("torch_grouped_mm", "matmul_loop")

    @property
    def shapes(self) -> dict[str, list[tuple]]:
        return {"bench": self.crossed(routing.BENCH_SHAPES, ["fwd"]),
                "quick": self.crossed(routing.QUICK_SHAPES, ["fwd"]),
                "sweep": self.crossed(routing.QUICK_SHAPES[:1], ["fwd"])}

    def crossed(self, shapes: list[routing.Shape], kinds: list[str]) -> list[tuple]:
        """The family's shapes of routing shapes x products."""
        return [(s.E, s.K, s.N, s.T, s.routing, kind, s.name) for s in shapes for kind in kinds]

    def case(self, shape: tuple) -> str:
        return shape[5]  # a product's candidates are compiled and ranked apart

    def checks(self, shape: tuple) -> list[tuple]:
        return [(4, 256, 512, 600, "skewed", shape[5], "check")]  # empty and partial experts, tails

    def shape_name(self, shape: tuple) -> str:
        E, K, N, T, rt, kind, layer = shape
        return f"{layer} E{E} K{K} N{N} T{T} {rt} {kind}"

    def parse_shape(self, text: str) -> tuple:
        """``E x K x N x T[:routing]`` (the forward product), e.g. ``32x7168x4096x16384:skewed``; K and N must
        be multiples of 8 (TMA's 16-byte rows)."""
        s = routing.parse_shape(text)
        if s.routing not in routing.ROUTINGS or s.K % 8 or s.N % 8:
            raise ValueError(f"{s.label}: routing uniform or skewed, K and N multiples of 8")
        return self.crossed([s], ["fwd"])[0]

    def flops(self, shape: tuple) -> float:
        E, K, N, T = shape[:4]
        return 2.0 * T * K * N  # each product

    def inputs(self, shape: tuple, dtype: str, device: str, seed: int = 0) -> dict[str, Any]:
        """Random bf16 operands of the product on ``device``, the offsets, each expert's token range (host)."""
        import torch

        E, K, N, T, rt, kind, _layer = shape
        g = torch.Generator(device=device).manual_seed(seed)
        x = torch.randn(T, K, device=device, dtype=torch.bfloat16, generator=g)
        w = torch.randn(E, K, N, device=device, dtype=torch.bfloat16, generator=g) / K ** 0.5
        dy = torch.randn(T, N, device=device, dtype=torch.bfloat16, generator=g)
        offsets = routing.offsets_of(routing.counts(T, E, rt, seed), device)
        a, b = {"fwd": (x, w), "dx": (dy, w), "dw": (x, dy)}[kind]
        return dict(a=a, b=b, offsets=offsets, bounds=bounds(offsets), kind=kind)

    def reference(self, inputs: dict[str, Any]) -> tuple[Any, int | None]:
        """The fp32 loop's answer and the rows the experts cover (all of dw's)."""
        rows = None if inputs["kind"] == "dw" else covered_rows(inputs["offsets"])
        return reference(inputs["kind"], inputs["a"], inputs["b"], inputs["offsets"]), rows

    def tolerance(self, dtype: str) -> float:
        import torch

        from tlx_kernels.gemm.common import fp32_tolerance

        return fp32_tolerance(torch.bfloat16)

    def error(self, out: Any, ref: tuple[Any, int | None]) -> float:
        from tlx_kernels.accuracy import rel_err

        answer, rows = ref
        return rel_err(out[:rows], answer[:rows])

    def configs(self, kernel: str, space: str, shape: tuple) -> list[dict] | None:
        """Ours tune over their own space (None); a sweep's ``candidate``: ``calls.sweep_candidates()``."""
        return calls.sweep_candidates() if kernel == SWEPT else None

    def config_name(self, cfg: dict) -> str:
        return calls.candidate_name(cfg)

    def output(self, inputs: dict[str, Any], fill: float | None = None) -> Any:
        """A new output of the product (the problem's own, ``moe.problem``), filled with ``fill`` if given."""
        from tlx_kernels.moe import problem

        out = problem.problem(inputs["kind"], inputs["a"], inputs["b"], inputs["offsets"]).c
        return out if fill is None else out.fill_(fill)

    def launch(self, kernel: str, cfg: dict, inputs: dict[str, Any]) -> tuple[Callable[[], Any], Any]:
        out = self.output(inputs, float("nan"))
        a, b, offsets, kind = inputs["a"], inputs["b"], inputs["offsets"], inputs["kind"]
        return (lambda: calls.launch(kind, a, b, offsets, cfg["VARIANT"], cfg, out)), out

    def prepare(self, kernel: str, cfg: dict, inputs: dict[str, Any]) -> tuple[Any, tuple, dict, tuple]:
        """``(jit kernel, args, kwargs, grid)`` of one launch, for a compile without a GPU."""
        from tlx_kernels.moe import problem

        p = problem.problem(inputs["kind"], inputs["a"], inputs["b"], inputs["offsets"])
        return calls.prepare(p, cfg["VARIANT"], cfg)

    def variants(self) -> dict[str, list[dict]]:
        """Every variant's configs (what a compile-only run compiles), as candidates."""
        return {v: [dict(c, VARIANT=v) for c in mod.CONFIGS] for v, mod in calls.VARIANTS.items()}

    def call(self, kernel: str, inputs: dict[str, Any], configs: list[dict] | None) -> Callable[..., Any]:
        a, b, offsets, public = inputs["a"], inputs["b"], inputs["offsets"], PUBLIC[inputs["kind"]]
        variant = None if kernel == "grouped_mm" else kernel
        return lambda out=None: public(a, b, offsets, variant=variant, out=out)

    def tuned(self, kernel: str, inputs: dict[str, Any]) -> dict | None:
        return calls.tuned(inputs["kind"], inputs["a"], inputs["b"], inputs["offsets"],
                           None if kernel == "grouped_mm" else kernel)

    def baseline(self, name: str, inputs: dict[str, Any], limit: int) -> dict[str, Callable[[], Any]]:
        import torch

        a, b, offsets, kind = inputs["a"], inputs["b"], inputs["offsets"], inputs["kind"]
        if name == "torch_grouped_mm":
            operands = {"fwd": (a, b), "dx": (a, b.transpose(1, 2)), "dw": (a.t(), b)}[kind]
            return {"torch._grouped_mm": lambda: torch._grouped_mm(*operands, offs=offsets)}
        out = self.output(inputs)
        return {"torch.matmul per expert": lambda: _loop(kind, a, b, inputs["bounds"], out)}

    def targets(self, shape: tuple) -> dict[str, float]:
        rt, kind = shape[4], shape[5]
        return {"torch_grouped_mm": TARGETS[rt]} if kind == "fwd" and rt in TARGETS else {}


def _loop(kind: str, a: Any, b: Any, spans: list[tuple[int, int]], out: Any) -> Any:
    """One torch.matmul per expert with tokens (an empty expert's dw is zeroed)."""
    import torch

    for e, (s, t) in enumerate(spans):
        if kind == "dw" and t == s:
            out[e].zero_()
        elif kind == "dw":
            torch.matmul(a[s:t].T, b[s:t], out=out[e])
        elif t > s:
            torch.matmul(a[s:t], b[e] if kind == "fwd" else b[e].T, out=out[s:t])
    return out


MOE = MoeFamily()

__all__ = ["KINDS", "MOE", "SWEPT", "MoeFamily"]
