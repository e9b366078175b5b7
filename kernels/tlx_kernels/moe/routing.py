"""Token counts per expert (routing) and the problem shapes of the grouped GEMM's tests and benchmark.

A shape is an MoE layer's expert GEMM on one GPU: ``E`` local experts, ``K`` in, ``N`` out, ``T`` routed tokens
(tokens x top-k, after dispatch). The benchmark's set follows two model families (issue 27):

- DeepSeek-V3-like: hidden 7168, expert intermediate 2048, 256 routed experts; up (gate and up fused, K 7168,
  N 4096) and down (K 2048, N 7168) with 32 local experts (expert parallel over 8 GPUs), and all 256 experts on
  one GPU (K 7168, N 2048: tiny groups);
- Mixtral-like: 8 experts, hidden 4096, intermediate 14336 split over 4 GPUs (3584): up (K 4096, N 7168) and
  down (K 3584, N 4096);

at 4k, 16k and 64k tokens, with uniform and skewed routing. Skewed: Zipf-like counts (the ``r``-th most loaded
expert gets a share proportional to ``1 / r^1.2``) in a shuffled expert order: the largest expert holds 43% of
the tokens with 8 experts, 32% with 32 and 26% with 256, where the smallest get 5 tokens of 16k.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

ROUTINGS = ("uniform", "skewed")
SKEW_ALPHA = 1.2


def counts(T: int, E: int, routing: str = "uniform", seed: int = 0) -> list[int]:
    """Tokens per expert, summing to ``T``: equal shares (the remainder to the first experts), or Zipf-like
    shares in a shuffled order (``skewed``)."""
    if routing == "uniform":
        base, extra = divmod(T, E)
        return [base + (e < extra) for e in range(E)]
    if routing != "skewed":
        raise ValueError(f"routing must be one of {ROUTINGS}, got {routing!r}")
    weights = [1.0 / (r + 1) ** SKEW_ALPHA for r in range(E)]
    total = sum(weights)
    out = [int(T * w / total) for w in weights]
    out[0] += T - sum(out)
    random.Random(seed).shuffle(out)
    return out


def offsets_of(per_expert: list[int], device="cpu"):
    """The cumulative counts as the kernels take them: int32, one entry per expert."""
    import torch

    return torch.tensor(per_expert, dtype=torch.int64, device=device).cumsum(0).to(torch.int32)


@dataclass(frozen=True)
class Shape:
    name: str
    E: int
    K: int
    N: int
    T: int
    routing: str = "uniform"

    @property
    def label(self) -> str:
        return f"{self.name} E{self.E} K{self.K} N{self.N} T{self.T} {self.routing}"

    def counts(self, seed: int = 0) -> list[int]:
        return counts(self.T, self.E, self.routing, seed)

    def flops(self) -> float:
        """Useful FLOPs of the forward (and of each backward product): 2 T K N."""
        return 2.0 * self.T * self.K * self.N


_LAYERS = [("dsv3-up", 32, 7168, 4096), ("dsv3-down", 32, 2048, 7168), ("dsv3-256", 256, 7168, 2048),
           ("mixtral-up", 8, 4096, 7168), ("mixtral-down", 8, 3584, 4096)]
BENCH_SHAPES: list[Shape] = [Shape(n, E, K, N, T, r) for n, E, K, N in _LAYERS for T in (4096, 16384, 65536)
                             for r in ROUTINGS]
QUICK_SHAPES: list[Shape] = [Shape("dsv3-up", 32, 7168, 4096, 16384, r) for r in ROUTINGS] + [
    Shape("mixtral-up", 8, 4096, 7168, 16384, "skewed"), Shape("dsv3-256", 256, 7168, 2048, 16384, "uniform")]


def parse_shape(text: str) -> Shape:
    """``E x K x N x T[:routing]``, e.g. ``32x7168x4096x16384:skewed``."""
    dims, _, routing = text.partition(":")
    E, K, N, T = (int(v) for v in dims.lower().split("x"))
    return Shape("custom", E, K, N, T, routing or "uniform")


__all__ = ["BENCH_SHAPES", "QUICK_SHAPES", "ROUTINGS", "Shape", "counts", "offsets_of", "parse_shape"]
