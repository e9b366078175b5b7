"""Problem shapes of the broadcast-linear op: benchmark set, the tutorial's main shape, test shapes, work counts."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Shape:
    """``B`` users with ``C`` candidates each; user features ``D_u``, candidate features ``D_x``, ``N`` outputs."""

    B: int
    C: int
    DU: int
    DX: int
    N: int
    act: str = "none"
    bias: bool = True
    name: str = ""

    @property
    def rows(self) -> int:
        """Candidate rows in all (``B * C``): the M of the materialized GEMM."""
        return self.B * self.C

    def label(self) -> str:
        core = f"B{self.B}xC{self.C} Du{self.DU} Dx{self.DX} N{self.N}"
        extras = ([self.act] if self.act != "none" else []) + (["bias"] if self.bias else [])
        return " ".join([core, *extras])

    def as_dict(self) -> dict:
        return dict(
            B=self.B,
            C=self.C,
            DU=self.DU,
            DX=self.DX,
            N=self.N,
            act=self.act,
            bias=self.bias,
            name=self.name or self.label(),
        )


def op_flops(s: Shape) -> float:
    """FLOPs the op needs: the candidate part for every row plus the user part once per user."""
    return 2.0 * s.N * (s.rows * s.DX + s.B * s.DU)


def materialized_flops(s: Shape) -> float:
    """FLOPs of the materialized GEMM: the user part once per candidate row."""
    return 2.0 * s.N * s.rows * (s.DU + s.DX)


def materialized_extra_bytes(s: Shape, elem: int = 2) -> int:
    """Bytes the materialized path moves that the fused kernel does not (repeat, concat, re-read by the GEMM).

    ``repeat_interleave`` writes ``B*C x D_u``; ``cat`` reads that and ``X`` and writes ``B*C x (D_u + D_x)``;
    the GEMM reads the concatenation instead of ``X`` alone.
    """
    repeated = s.rows * s.DU * elem
    concat = s.rows * (s.DU + s.DX) * elem
    x = s.rows * s.DX * elem
    return repeated + (repeated + x + concat) + (concat - x)


# The tutorial's main shape: 256 requests x 500 candidates, 512-wide user and candidate features, a
# 512-wide linear layer with bias (the "linear compression" layer of a ranking model).
MAIN = Shape(256, 500, 512, 512, 512, name="main")

BENCH_SHAPES: list[Shape] = [
    MAIN,
    Shape(64, 1000, 1024, 256, 512, act="relu", name="wide-user"),
    Shape(512, 100, 256, 256, 256, name="few-candidates"),
    Shape(128, 1000, 1024, 1024, 1024, act="silu", name="large"),
    Shape(512, 200, 768, 512, 768, name="mid"),
    Shape(64, 100, 256, 256, 256, name="small"),
]

# Correctness shapes: odd candidate counts, dimensions that are no multiple of any tile (and one that
# needs padded copies for TMA), a column tile whose second half lies wholly past N.
TEST_SHAPES: list[Shape] = [
    Shape(3, 77, 40, 24, 96, act="relu", name="odd-small"),
    Shape(5, 131, 200, 136, 328, act="silu", name="odd"),
    Shape(7, 61, 37, 45, 70, name="unaligned"),
    Shape(17, 300, 512, 256, 384, bias=False, name="no-bias"),
    Shape(64, 257, 512, 512, 512, name="realistic"),
]

__all__ = ["BENCH_SHAPES", "MAIN", "TEST_SHAPES", "Shape", "materialized_extra_bytes", "materialized_flops", "op_flops"]
