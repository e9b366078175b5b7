"""Analysis of an Artifact: line-info parsers and source maps, stage diffs, TTGIR layouts.

The orchestration model of a TLX kernel (tasks, buffers, barriers) lives here too; the checks on it
are in :mod:`workbench.check`.
"""

from workbench.analyse.diff import StageDiff, diff
from workbench.analyse.layouts import parse_layouts, parse_params
from workbench.analyse.srcmap import Loc, stage_locations

__all__ = ["Loc", "StageDiff", "diff", "parse_layouts", "parse_params", "stage_locations"]
