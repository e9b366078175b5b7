"""Analysis of compiler stages: line-info parsers, source maps, and diffs of two artifacts."""

from workbench.ir.diff import StageDiff, diff
from workbench.ir.srcmap import Loc, stage_locations

__all__ = ["Loc", "StageDiff", "diff", "stage_locations"]
