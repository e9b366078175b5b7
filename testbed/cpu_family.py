"""A kernel family of CPU callables, for the tests of the benchmark runner (``workbench.measure.family``): the
same runner the GEMM and attention benches use on the GPU, here on torch's CPU operators in CPU workers.

Ours: ``blocked``, a matrix product computed block of K by block of K (config ``BK``); its config ``SKIP_TAIL``
forgets the last partial block, so it is right at a K that ``BK`` divides and wrong elsewhere (the preflight's odd
shape finds it). ``hangs`` sleeps for ever in its public call when its config says so. Baselines: ``torch``
(``torch.matmul``) and ``slow`` (two candidates: the runner keeps the faster).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def _blocked(a: Any, b: Any, cfg: dict) -> Any:
    import torch

    K = a.shape[1]
    out = torch.zeros(a.shape[0], b.shape[1], dtype=torch.float32)
    stop = K - K % cfg["BK"] if cfg.get("SKIP_TAIL") else K
    for k in range(0, stop, cfg["BK"]):
        out += a[:, k:k + cfg["BK"]].float() @ b[k:k + cfg["BK"]].float()
    return out


class CpuFamily:
    ref = "cpu_family:CPU"
    name = "cpu-matmul"
    kernels = ("blocked", "hangs")
    baselines = ("torch", "slow")
    shapes = {"bench": [(64, 64, 256), (96, 32, 128)], "quick": [(64, 64, 256)], "sweep": [(64, 64, 256)]}
    CONFIGS = {"blocked": [{"BK": 32}, {"BK": 64}, {"BK": 16, "SKIP_TAIL": True}],
               "hangs": [{"BK": 64, "HANG": True}]}

    def __init__(self) -> None:
        self._tuned: dict[tuple, dict] = {}

    def case(self, shape: tuple) -> str:
        return "all"

    def checks(self, shape: tuple) -> list[tuple]:
        return [(32, 32, 64), (33, 17, 100)]

    def shape_name(self, shape: tuple) -> str:
        return "x".join(map(str, shape))

    def parse_shape(self, text: str) -> tuple:
        return tuple(int(x) for x in text.split("x"))

    def flops(self, shape: tuple) -> float:
        M, N, K = shape
        return 2.0 * M * N * K

    def inputs(self, shape: tuple, dtype: str, device: str) -> dict[str, Any]:
        import torch

        M, N, K = shape
        g = torch.Generator().manual_seed(0)
        return dict(a=torch.randn(M, K, generator=g), b=torch.randn(K, N, generator=g))

    def reference(self, inputs: dict[str, Any]) -> Any:
        return inputs["a"].double() @ inputs["b"].double()

    def tolerance(self, dtype: str) -> float:
        return 1e-5

    def error(self, out: Any, ref: Any) -> float:
        import torch

        o = out.double()
        if not torch.isfinite(o).all():
            return float("inf")
        return float((o - ref).abs().max() / ref.abs().max())

    def configs(self, kernel: str, space: str, shape: tuple | None = None) -> list[dict]:
        return [dict(c) for c in self.CONFIGS[kernel]]

    def config_name(self, cfg: dict) -> str:
        return "_".join(f"{k}{v}" for k, v in cfg.items())

    def launch(self, kernel: str, cfg: dict, inputs: dict[str, Any]) -> tuple[Callable[[], Any], Any]:
        import torch

        a, b = inputs["a"], inputs["b"]
        out = torch.empty(a.shape[0], b.shape[1], dtype=torch.float32)
        return (lambda: out.copy_(_blocked(a, b, cfg))), out

    def call(self, kernel: str, inputs: dict[str, Any], configs: list[dict] | None) -> Callable[..., Any]:
        a, b = inputs["a"], inputs["b"]
        key = (kernel, tuple(a.shape), tuple(b.shape))

        def matmul(out: Any = None) -> Any:
            if key not in self._tuned:  # a user's first call tunes: the fastest config
                space = self.CONFIGS[kernel] if configs is None else configs
                self._tuned[key] = min(space, key=lambda c: _clock(lambda: _blocked(a, b, c)))
            if self._tuned[key].get("HANG"):
                time.sleep(3600)
            got = _blocked(a, b, self._tuned[key])
            return got if out is None else out.copy_(got)

        return matmul

    def tuned(self, kernel: str, inputs: dict[str, Any]) -> dict | None:
        return self._tuned.get((kernel, tuple(inputs["a"].shape), tuple(inputs["b"].shape)))

    def baseline(self, name: str, inputs: dict[str, Any], limit: int) -> dict[str, Callable[[], Any]]:
        import torch

        a, b = inputs["a"], inputs["b"]
        if name == "torch":
            return {"torch.matmul": lambda: torch.matmul(a.double(), b.double())}
        if a.shape[0] != 64:
            return {}  # not run at this shape
        return {"sleep 20 ms": lambda: (time.sleep(0.02), a.double() @ b.double())[1],
                "sleep 2 ms": lambda: (time.sleep(0.002), a.double() @ b.double())[1]}

    def targets(self, shape: tuple) -> dict[str, float]:
        return {"slow": 1.0} if shape[0] == 64 else {}


def _clock(fn: Callable[[], Any]) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


CPU = CpuFamily()
