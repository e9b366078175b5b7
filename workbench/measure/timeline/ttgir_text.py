"""TTGIR as Triton 3.8 prints it, read as text: regions of a warp-specialized kernel and SSA definitions.

What the printer gives (and the scope insertion relies on, checked by the tests on real kernels):

- one op per line, nested regions indented by two spaces, a region's closing ``}`` at its opener's indent;
- ``ttg.warp_specialize(%a, %b, ...)`` followed by ``default {`` (the ``async_task("default")`` body,
  ending in ``ttg.warp_yield``) and ``partitionN(%argK: type loc(..), ...) num_warps(W) {`` regions
  (one per other task and replica, ending in ``ttg.warp_return``); a partition is isolated from
  above, its block arguments are the ``warp_specialize`` operands in the same order;
- values named from the source (``full = tlx.alloc_barriers(...)`` prints ``%full``, a second
  value of the same name ``%full_3``); unnamed values are numbers (``%12``, ``%arg26``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_INDENT = re.compile(r"^(\s*)")
_DEF = re.compile(r"^\s*(%[\w.$-]+(?::\d+)?(?:\s*,\s*%[\w.$-]+(?::\d+)?)*)\s*=\s*\"?([\w.]+)")
_OP = re.compile(r"^\s*(?:%[^=]*=\s*)?\"?([a-z_][\w]*\.[\w.]+)")
_VALUE = re.compile(r"%[\w.$-]+(?:#\d+)?")
_TRAILING_LOC = re.compile(r"\sloc\((#loc\d*|unknown|\"[^\n]*\")\)\s*$")
_DEFAULT = re.compile(r"^\s*default\s*\{\s*$")
_PARTITION = re.compile(r"^\s*partition(\d+)\((.*)\)\s*num_warps\((\d+)\)\s*\{\s*$")
_FUNC = re.compile(r"^\s*tt\.func\b.*\{\s*$")
_ARG = re.compile(r"(%[\w.$-]+)\s*:")
_ITER_ARG = re.compile(r"(%[\w.$-]+)\s*=\s*(%[\w.$-]+(?:#\d+)?)")
_MODULE_WARPS = re.compile(r'"ttg\.num-warps"\s*=\s*(\d+)')


def indent_of(line: str) -> int:
    return len(_INDENT.match(line).group(1))


def op_name(line: str) -> str | None:
    """The op of an op line (``ttng.wait_barrier``), None for other lines (braces, headers, locs)."""
    s = line.strip()
    if not s or s.startswith(("#", "}", "^", "//", "module", "default", "partition")):
        return None
    m = _OP.match(line)
    return m.group(1) if m else None


def operands(line: str) -> list[str]:
    """SSA values used by an op line (after its ``=``), in order, without result-number suffixes."""
    body = line.split("=", 1)[1] if _DEF.match(line) else line
    body = _TRAILING_LOC.sub("", body.split(" : ", 1)[0])
    return [v.split("#")[0] for v in _VALUE.findall(body)]


def trailing_loc(line: str) -> str:
    """The op's location as printed (``#loc12``), or ``unknown``."""
    m = _TRAILING_LOC.search(line)
    return m.group(1) if m else "unknown"


def opens_region(line: str) -> bool:
    return line.rstrip().endswith("{")


def closes_region(line: str) -> bool:
    return line.lstrip().startswith("}")


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
    """Lines of one TTGIR module with the helpers the scope insertion needs."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines = text.splitlines()
        self.indents = [indent_of(ln) if ln.strip() else 10**6 for ln in self.lines]
        self._defs: dict[str, list[int]] = {}
        for i, ln in enumerate(self.lines):
            for name in self._defined(ln):
                self._defs.setdefault(name, []).append(i)
        self.ws_line = next((i for i, ln in enumerate(self.lines) if op_name(ln) == "ttg.warp_specialize"), None)
        self.ws_captures = operands(self.lines[self.ws_line]) if self.ws_line is not None else []
        m = _MODULE_WARPS.search(text)
        self.num_warps = int(m.group(1)) if m else None
        self.regions = self._regions()

    # -- structure -------------------------------------------------------------------------------
    def _close(self, header: int) -> int:
        ind = self.indents[header]
        for j in range(header + 1, len(self.lines)):
            if self.indents[j] <= ind and self.lines[j].strip():
                return j
        return len(self.lines)

    def _regions(self) -> list[Region]:
        out: list[Region] = []
        for i, ln in enumerate(self.lines):
            if self.ws_line is not None and i > self.ws_line:
                if _DEFAULT.match(ln):
                    out.append(self._region("default", None, i, self.num_warps, []))
                elif pm := _PARTITION.match(ln):
                    args = _ARG.findall(pm.group(2))
                    out.append(self._region("partition", int(pm.group(1)), i, int(pm.group(3)), args))
            elif self.ws_line is None and _FUNC.match(ln) and "public" in ln:
                out.append(self._region("kernel", None, i, self.num_warps, []))
        return out

    def _region(self, kind: str, index: int | None, header: int, warps: int | None, args: list[str]) -> Region:
        end = self._close(header)
        ind = self.indents[header]
        terms = [j for j in range(header + 1, end) if self.indents[j] == ind + 2
                 and op_name(self.lines[j]) in ("ttg.warp_yield", "ttg.warp_return", "tt.return")]
        return Region(kind, index, header, end, ind, warps, args, terms)

    def region_of(self, line: int) -> Region | None:
        return next((r for r in self.regions if r.header < line < r.end), None)

    # -- SSA -------------------------------------------------------------------------------------
    @staticmethod
    def _defined(line: str) -> list[str]:
        m = _DEF.match(line)
        names = [n.strip().split(":")[0] for n in m.group(1).split(",")] if m else []
        if op_name(line) == "scf.for":
            names += [a for a, _ in _ITER_ARG.findall(line.split("iter_args", 1)[-1])] if "iter_args" in line else []
        return names

    def definition(self, name: str, used_at: int) -> int | None:
        """The line defining ``name`` that is visible at line ``used_at`` (nearest enclosing scope)."""
        name = name.split("#")[0]
        for d in reversed(self._defs.get(name, [])):
            # visible while its block is open: no line in between is indented less than the definition
            if d < used_at and min(self.indents[d + 1:used_at], default=10**6) >= self.indents[d]:
                return d
        for r in self.regions:
            if r.header < used_at < r.end and name in r.args:
                return r.header
        return None

    def capture_of(self, region: Region, arg: str) -> str | None:
        """The ``warp_specialize`` operand a partition's block argument stands for."""
        if arg in region.args and region.args.index(arg) < len(self.ws_captures):
            return self.ws_captures[region.args.index(arg)]
        return None

    def iter_init(self, line: int, name: str) -> str | None:
        """For a loop-carried value defined by ``scf.for ... iter_args(%x = %init)``, the ``%init``."""
        for a, init in _ITER_ARG.findall(self.lines[line].split("iter_args", 1)[-1]):
            if a == name:
                return init
        return None
