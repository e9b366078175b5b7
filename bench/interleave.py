"""The benches' name for ``workbench.measure.interleave`` (interleaved timing rounds; the search uses it too)."""

from workbench.measure.interleave import ratio, rounds

__all__ = ["ratio", "rounds"]
