"""Layouts: parsed from TTGIR (declared attributes and the values that use them)."""

from workbench.layouts.ttgir import parse_layouts, parse_params

__all__ = ["parse_layouts", "parse_params"]
