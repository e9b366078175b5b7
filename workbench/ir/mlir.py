"""The one reader of MLIR text as Triton 3.8 prints it (TTIR, TTGIR): an op tree with regions, partitions, locations
and the memdesc types the orchestration model sizes buffers by.

What the printer gives, and everything above relies on (``tests/ir`` pins it on real kernels):

- one op per line; a region opens at a trailing ``{`` and closes at a line starting with ``}`` (``} else {`` and
  ``} do {`` close one region and open the next); nested regions are indented by two more spaces;
- ``ttg.warp_specialize(%a, %b, ...)`` followed by ``default {`` (the default task's body, ending in
  ``ttg.warp_yield``) and ``partitionN(%argK: type loc(..), ...) num_warps(W) {`` regions (one per other task and
  replica, ending in ``ttg.warp_return``); a partition is isolated from above, its block arguments are the
  ``warp_specialize`` operands in the same order;
- values named from the source (``full = tlx.alloc_barriers(...)`` prints ``%full``, a second value of the same
  name ``%full_3``); unnamed values are numbers (``%12``, ``%arg26``); ``%0:2`` is a pack of two results, used as
  ``%0#0`` and ``%0#1``;
- an op's location is its line's trailing ``loc(...)`` (a region op's is on its closing line), resolved through
  the module's ``#loc`` table (:class:`workbench.ir.mlir_loc.LocTable`).

Anything else is kept as an op with a name and operands.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from workbench.ir.loc import Loc
from workbench.ir.mlir_loc import LocTable, strip_loc

_RESULTS = re.compile(r"^((?:%[\w.$-]+(?::\d+)?)(?:\s*,\s*%[\w.$-]+(?::\d+)?)*)\s*=\s*")
_VALUE = re.compile(r"%[\w.$-]+(?:#\d+)?")
_PARTITION = re.compile(r"^partition(\d+)\((.*)\)\s*num_warps\((\d+)\)\s*\{$")
_BLOCK_ARG = re.compile(r"(%[\w.$-]+)\s*:")


@dataclass
class Region:
    ops: list[Op] = field(default_factory=list)
    args: list[str] = field(default_factory=list)  # block arguments (``^bb0(...)``, partition args)
    label: str = ""  # 'default', 'partition0', 'do', 'else', ...
    num_warps: int | None = None  # partition regions
    line: int = 0  # 1-based line that opens it: its op's line, 'default {', 'partitionN(...) {', '} else {'
    end: int = 0  # 1-based line of its closing '}' (0: not closed, the module's own region)
    owner: Op | None = field(default=None, repr=False, compare=False)

    def holds(self, line: int) -> bool:
        """Whether 1-based ``line`` lies inside this region (between its opening and closing lines)."""
        return self.line < line and (self.end == 0 or line < self.end)


_ITER_ARG = re.compile(r"(%[\w.$-]+)\s*=\s*(%[\w.$-]+(?:#\d+)?)")  # 'iter_args(%x = %init, ...)'
_FOR = re.compile(r"^(%[\w.$-]+) = (%[\w.$#-]+) to (%[\w.$#-]+) step (%[\w.$#-]+)")


@dataclass(frozen=True)
class ForLoop:
    """An ``scf.for`` header: induction variable, bounds and step (SSA names) and the loop-carried values."""

    iv: str
    lower: str
    upper: str
    step: str
    iter_args: list[tuple[str, str]]  # (loop-carried value, its initial value)


@dataclass
class Op:
    name: str
    results: list[str]
    body: str  # the text after the op name, without the trailing loc (operands, attributes, types)
    line: int  # 1-based line of the op in the module's text
    regions: list[Region] = field(default_factory=list)
    locs: list[Loc] = field(default_factory=list)
    value_name: str | None = None  # the NameLoc: the user's variable
    closing: str = ""  # text of the closing line of a region op (types, attributes)
    loc: str | None = None  # the location expression as printed (``#loc12``), from the op's line or closing line
    parent: Region | None = field(default=None, repr=False, compare=False)
    sync: Any = field(default=None, repr=False)  # set by the orchestration model (workbench.analyse): its SyncOp

    @cached_property
    def operands(self) -> list[str]:
        """SSA values named in the op's body, in order (types never name values)."""
        head = self.body.split(" : ", 1)[0] if self.name != "scf.for" else self.body
        return _VALUE.findall(head)

    def attr_int(self, key: str) -> int | None:
        m = re.search(rf"\b{re.escape(key)}\s*=\s*(-?\d+)", self.body + " " + self.closing)
        return int(m.group(1)) if m else None

    def result_type(self) -> str:
        """The type text after the last ``->`` (or after `` : `` when there is no arrow)."""
        if "->" in self.body:
            return self.body.rsplit("->", 1)[1].strip()
        return self.body.split(" : ", 1)[1].strip() if " : " in self.body else ""

    def iter_args(self) -> list[tuple[str, str]]:
        """(loop-carried value, its initial value) of an ``scf.for ... iter_args(%x = %init, ...)``."""
        if self.name != "scf.for" or "iter_args" not in self.body:
            return []
        return _ITER_ARG.findall(self.body.split("iter_args", 1)[1])

    def for_loop(self) -> ForLoop | None:
        """The header of an ``scf.for %iv = %lb to %ub step %st iter_args(...)``; None for another op (or a header
        this reader does not know)."""
        m = _FOR.match(self.body) if self.name == "scf.for" else None
        return ForLoop(*m.groups(), self.iter_args()) if m else None

    def while_args(self) -> list[tuple[str, str]]:
        """(block argument of the ``before`` region, its initial value) of an ``scf.while (%a = %init, ...)``."""
        return _ITER_ARG.findall(self.body.split(":", 1)[0]) if self.name == "scf.while" else []

    def value_type(self) -> ValueType | None:
        """The type of the op's (first) result: shape and element type of a tensor or memdesc, or a scalar."""
        return read_type(self.result_type())

    def defines(self) -> list[str]:
        """The SSA names this op defines for the ops after it (a result pack ``%0:2`` by its name ``%0``), with an
        ``scf.for``'s loop-carried values."""
        return list(dict.fromkeys([r.split("#")[0] for r in self.results] + [a for a, _ in self.iter_args()]))




@dataclass
class Module(Op):
    """The parsed text: ``builtin.module`` with one region (holding the printed ``module`` op), with lookups."""

    @cached_property
    def _by_line(self) -> dict[int, Op]:
        return {op.line: op for op in walk(self.regions[0])}

    @cached_property
    def _definitions(self) -> dict[str, list[Op]]:
        out: dict[str, list[Op]] = {}
        for op in walk(self.regions[0]):
            for name in op.defines():
                out.setdefault(name, []).append(op)
        return out

    def at(self, line: int) -> Op | None:
        """The op printed on 1-based ``line`` (a region op: its opening line)."""
        return self._by_line.get(line)

    def definition(self, name: str, line: int) -> Op | None:
        """The op defining ``name`` (``%x``; ``%0#1`` is defined as ``%0``) that is visible at 1-based ``line``: the
        last one above it whose region holds the line. Block arguments are not ops: see :attr:`Region.args`."""
        for op in reversed(self._definitions.get(name.split("#")[0], [])):
            if op.line < line and (op.parent is None or op.parent.holds(line)):
                return op
        return None

    def attribute(self, key: str) -> int | None:
        """An integer attribute of the printed ``module`` op (``ttg.num-warps``, ``ttg.maxnreg``), None where it has
        none."""
        head = next((op.body for op in self.regions[0].ops if op.name == "module"), "")
        m = re.search(rf'"?{re.escape(key)}"?\s*=\s*(\d+)', head)
        return int(m.group(1)) if m else None

    @property
    def num_warps(self) -> int | None:
        """The module's ``"ttg.num-warps"`` (TTGIR), None where it has none."""
        return self.attribute("ttg.num-warps")


def _split_results(text: str) -> list[str]:
    out = []
    for part in text.split(","):
        part = part.strip()
        if ":" in part:
            base, n = part.split(":")
            out.extend(f"{base}#{i}" for i in range(int(n)))
        else:
            out.append(part)
    return out


def _parse_op(text: str, line: int) -> Op:
    results: list[str] = []
    m = _RESULTS.match(text)
    if m:
        results = _split_results(m.group(1))
        text = text[m.end():]
    if text.startswith('"'):
        name, _, rest = text[1:].partition('"')
    else:
        name, _, rest = text.partition(" ")
        if "(" in name:  # 'ttg.warp_specialize(%a, %b)' or 'scf.condition(%c)'
            name, paren, tail = name.partition("(")
            rest = paren + tail + (" " + rest if rest else "")
    return Op(name=name, results=results, body=rest.strip(), line=line)


_NO_OP = ("#", "//", "}", "^")  # alias definitions, comments, region ends, block labels


def read_op_line(line: str, number: int = 0) -> Op | None:
    """The op one printed line holds (name, results, body, location expression; no regions), None for a line that
    holds none (blank, ``#alias = ...``, a comment, ``}``, a block label, a ``default``/``partitionN`` header)."""
    s = line.strip()
    if not s or s.startswith(_NO_OP):
        return None
    text, expr = strip_loc(s)
    if text == "default {" or _PARTITION.match(text):
        return None
    op = _parse_op(text.rstrip("{").rstrip("(").rstrip(), number)
    op.loc = expr
    return op


def op_name(line: str) -> str | None:
    """The dialect op a line prints (``ttng.wait_barrier``), None for other lines (braces, headers, locs)."""
    op = read_op_line(line)
    return op.name if op is not None and "." in op.name else None


def op_operands(line: str) -> list[str]:
    """SSA values an op line uses, in order, without result-number suffixes (``%0#1`` -> ``%0``)."""
    op = read_op_line(line)
    return [v.split("#")[0] for v in op.operands] if op is not None else []


def opens_region(line: str) -> bool:
    return line.rstrip().endswith("{")


def closes_region(line: str) -> bool:
    return line.lstrip().startswith("}")


class _Reader:
    def __init__(self, text: str) -> None:
        self.table = LocTable(text)
        self.root = Module(name="builtin.module", results=[], body="", line=0)
        self.root.regions.append(Region(owner=self.root))
        self.stack: list[Region] = [self.root.regions[0]]

    def _locate(self, op: Op, expr: str | None) -> None:
        if expr is not None:
            op.loc = expr
            op.locs, op.value_name = self.table.resolve(expr)

    def _open(self, op: Op, region: Region) -> None:
        region.owner = op
        op.regions.append(region)
        self.stack.append(region)

    def feed(self, raw: str, n: int) -> None:
        s = raw.strip()
        if closes_region(s):
            self._close(s, n)
        elif s.startswith("^bb"):
            self.stack[-1].args = _BLOCK_ARG.findall(s)
        elif s == "default {" or _PARTITION.match(s):
            pm = _PARTITION.match(s)
            new = Region(label="default", line=n)
            if pm:
                new = Region(label=f"partition{pm.group(1)}", args=_BLOCK_ARG.findall(pm.group(2)),
                             num_warps=int(pm.group(3)), line=n)
            self._open(self.stack[-1].ops[-1], new)  # the warp_specialize op these regions belong to
        elif (op := read_op_line(s, n)) is not None:
            region = self.stack[-1]
            op.parent = region
            self._locate(op, op.loc)
            region.ops.append(op)
            if opens_region(s):
                self._open(op, Region(line=n))

    def _close(self, s: str, n: int) -> None:
        if len(self.stack) == 1:
            return  # a stray '}': the module's own region never closes
        region = self.stack.pop()
        region.end = n
        op = region.owner
        rest = s.lstrip("})").strip()
        if rest.endswith("{"):  # '} else {', '} do {'
            self._open(op, Region(label=rest.rstrip("{").strip(), line=n))
            return
        text, expr = strip_loc(rest)
        if op.name == "ttg.warp_specialize" and not text.startswith(":"):
            return  # the end of one partition region; the op continues
        op.closing = text
        if expr is not None and not op.locs:
            self._locate(op, expr)


def parse_ttgir(text: str) -> Module:
    """The module as an op tree (``builtin.module`` with one region)."""
    reader = _Reader(text)
    for n, line in enumerate(text.splitlines(), start=1):
        reader.feed(line, n)
    return reader.root


def walk(region: Region) -> Iterator[Op]:
    """Every op of ``region`` and of the regions nested in it, in textual order."""
    for op in region.ops:
        yield op
        for r in op.regions:
            yield from walk(r)


def find(region: Region, name: str) -> Op | None:
    """The first op called ``name`` in ``region`` and the regions nested in it."""
    return next((op for op in walk(region) if op.name == name), None)


def kernel_function(module: Op, public: bool = False) -> Op | None:
    """The public ``tt.func`` (the kernel); else, unless ``public``, the first one; None if there is none."""
    funcs = [op for op in walk(module.regions[0]) if op.name == "tt.func"]
    found = [f for f in funcs if f.body.startswith("public")]
    return (found or ([] if public else funcs) or [None])[0]


_SHAPED = re.compile(r"(!ttg\.memdesc|tensor)<((?:\d+x)*)([a-z][a-zA-Z0-9]*)\s*(?:,([^>]*))?>")
_DTYPE_BITS = {"i1": 8, "i8": 8, "i16": 16, "i32": 32, "i64": 64, "f16": 16, "bf16": 16, "f32": 32, "f64": 64}


@dataclass(frozen=True)
class ValueType:
    """A value's type: ``kind`` 'memdesc' (shared/tensor memory), 'tensor' or 'scalar' (any other type); ``shape``
    (empty for a scalar), element type (``bf16``, ``f8E4M3FN``, ``i32``) and the rest of the type's text
    (``#shared, #smem, mutable``; encodings of a tensor)."""

    kind: str
    shape: list[int]
    dtype: str
    attrs: str = ""

    @property
    def alloc_shape(self) -> list[int]:
        """The shape of the allocation a memdesc views (``!ttg.memdesc<16x64xbf16, #shared, #smem, 32x64>``: a
        16x64 subview of a 32x64 buffer); its own shape when it names none. A shared layout is defined over it."""
        last = self.attrs.rsplit(",", 1)[-1].strip() if self.kind == "memdesc" else ""
        return [int(d) for d in last.split("x")] if re.fullmatch(r"\d+(x\d+)*", last) else list(self.shape)

    @property
    def nbytes(self) -> int:
        """Bytes of storage of the whole value."""
        return math.prod(self.shape) * element_bytes(self.dtype)


def read_type(text: str) -> ValueType | None:
    """``text`` (one type) read as a memdesc or tensor type, else as a scalar or other type (``i32``,
    ``!tt.ptr<f16>``, ``!tt.tensordesc<...>``: kind 'scalar', the text as its dtype); None for no text."""
    text = text.strip()
    m = _SHAPED.match(text)
    if m:
        kind = "memdesc" if m.group(1) != "tensor" else "tensor"
        return ValueType(kind, [int(d) for d in m.group(2).split("x") if d], m.group(3), (m.group(4) or "").strip())
    return ValueType("scalar", [], text) if text else None


def memdesc_type(text: str) -> tuple[list[int], str, str] | None:
    """(shape, element type, attributes text) of the first ``!ttg.memdesc<...>`` in ``text``."""
    m = next((m for m in _SHAPED.finditer(text) if m.group(1) != "tensor"), None)
    if not m:
        return None
    return [int(d) for d in m.group(2).split("x") if d], m.group(3), m.group(4) or ""


def element_bytes(dtype: str) -> int:
    """Bytes of storage per element of an MLIR element type (``bf16`` 2, ``f8E4M3FN`` 1, ``i64`` 8)."""
    if dtype in _DTYPE_BITS:
        return _DTYPE_BITS[dtype] // 8
    if dtype.startswith("f8") or dtype.startswith("f4") or dtype.startswith("f6"):
        return 1  # fp8 (and packed sub-byte types, counted per byte of storage)
    m = re.match(r"[a-z]+(\d+)", dtype)
    return max(1, int(m.group(1)) // 8) if m else 1


_DOT_PRECISION = re.compile(r"\binputPrecision\s*=\s*(\w+)")


def dot_precisions(text: str) -> set[str]:
    """The input precisions of the dots in a TTIR or TTGIR module (``{"tf32"}`` for fp32 operands rounded to tf32;
    ``ieee``, ``tf32x3``, ...); empty for a module without fp32 dots."""
    return {m.group(1) for m in _DOT_PRECISION.finditer(text)}
