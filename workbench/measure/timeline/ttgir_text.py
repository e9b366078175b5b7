"""A kernel's TTGIR as the scope insertion edits it: its text lines (0-based, with their indents) and the role regions.

The structure comes from the one MLIR reader (:mod:`workbench.ir.mlir`): the regions of the ``ttg.warp_specialize``
(``default`` and ``partitionN``, with their block arguments and warps) or, without one, the kernel function's body;
SSA definitions visible at a line. This module only turns them into the line indices the insertion works with.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from workbench.ir.mlir import Op, find, kernel_function, parse_ttgir
from workbench.ir.mlir import Region as IrRegion

_TERMINATORS = ("ttg.warp_yield", "ttg.warp_return", "tt.return")


def indent_of(line: str) -> int:
    return len(line) - len(line.lstrip())


@dataclass
class Region:
    """The body of one role: ``default`` / ``partitionN`` of ``ttg.warp_specialize``, or the whole kernel."""

    kind: str  #: "default" | "partition" | "kernel"
    index: int | None  #: partition number (None for default/kernel)
    header: int  #: line index of the opener
    end: int  #: line index of the closing brace
    indent: int
    num_warps: int | None
    args: list[str] = field(default_factory=list)  #: block arguments (partitions)
    terminators: list[int] = field(default_factory=list)  #: warp_yield / warp_return / tt.return lines

    def body(self) -> range:
        return range(self.header + 1, self.end)


class TTGIR:
    """Lines of one TTGIR module with the helpers the scope insertion needs (line indices are 0-based)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = text.splitlines()
        self.indents = [indent_of(ln) if ln.strip() else 10**6 for ln in self.lines]
        self.module = parse_ttgir(text)
        ws = find(self.module.regions[0], "ttg.warp_specialize")
        self.ws_line = ws.line - 1 if ws is not None else None
        self.ws_captures = [v.split("#")[0] for v in ws.operands] if ws is not None else []
        self.num_warps = self.module.num_warps
        self.regions = self._regions(ws)

    def _regions(self, ws: Op | None) -> list[Region]:
        if ws is not None:
            return [self._region(r) for r in ws.regions]
        func = kernel_function(self.module, public=True)
        return [self._region(func.regions[0], func.line)] if func is not None and func.regions else []

    def _region(self, r: IrRegion, opener: int | None = None) -> Region:
        header = (opener or r.line) - 1
        end = r.end - 1 if r.end else len(self.lines)
        terms = [op.line - 1 for op in r.ops if op.name in _TERMINATORS]
        if r.label.startswith("partition"):
            return Region("partition", int(r.label[len("partition"):]), header, end, self.indents[header],
                          r.num_warps, list(r.args), terms)
        return Region("default" if r.label == "default" else "kernel", None, header, end, self.indents[header],
                      self.num_warps, [], terms)

    def region_of(self, line: int) -> Region | None:
        return next((r for r in self.regions if r.header < line < r.end), None)

    def definition(self, name: str, used_at: int) -> int | None:
        """The line defining ``name`` that is visible at line ``used_at`` (nearest enclosing scope); for a
        partition's block argument, the partition's header."""
        op = self.module.definition(name, used_at + 1)
        if op is not None:
            return op.line - 1
        name = name.split("#")[0]
        return next((r.header for r in self.regions if r.header < used_at < r.end and name in r.args), None)

    def capture_of(self, region: Region, arg: str) -> str | None:
        """The ``warp_specialize`` operand a partition's block argument stands for."""
        if arg in region.args and region.args.index(arg) < len(self.ws_captures):
            return self.ws_captures[region.args.index(arg)]
        return None

    def iter_init(self, line: int, name: str) -> str | None:
        """For a loop-carried value defined by ``scf.for ... iter_args(%x = %init)``, the ``%init``."""
        op = self.module.at(line + 1)
        return next((init for a, init in op.iter_args() if a == name), None) if op is not None else None
