"""A small reader for the TTGIR text of a kernel: ops with results, operands, regions and locations.

Only what the orchestration model needs: the op tree of the kernel function (``scf.for``/``while``/
``if``, ``ttg.warp_specialize`` with its ``default`` and ``partitionN`` regions, and the straight
line ops in between), each op's SSA results and operands, its attribute text and type text, its
TTGIR line and the user's source location(s) (through :class:`workbench.analyse.mlir_loc.LocTable`).
It reads the printed form Triton 3.8 emits (one op per line; a region opens at a trailing ``{`` and
closes at a line starting with ``}``); anything else is kept as an op with a name and operands.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from workbench.analyse.mlir_loc import LocTable, trailing_loc
from workbench.analyse.types import Loc

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


@dataclass
class Op:
    name: str
    results: list[str]
    body: str  # the text after the op name, without the trailing loc (operands, attributes, types)
    ttgir_line: int
    regions: list[Region] = field(default_factory=list)
    locs: list[Loc] = field(default_factory=list)
    value_name: str | None = None  # the NameLoc: the user's variable
    closing: str = ""  # text of the closing line of a region op (types, attributes)
    sync: Any = field(default=None, repr=False)  # the orchestration model's SyncOp for this op

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


def _strip_loc(line: str) -> tuple[str, str | None]:
    expr = trailing_loc(line)
    if expr is None:
        return line.rstrip(), None
    s = line.rstrip()
    return s[: len(s) - len(expr) - len("loc()")].rstrip(), expr


def _parse_op(text: str, ttgir_line: int) -> Op:
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
    return Op(name=name, results=results, body=rest.strip(), ttgir_line=ttgir_line)


class _Reader:
    def __init__(self, text: str) -> None:
        self.table = LocTable(text)
        self.root = Op(name="builtin.module", results=[], body="", ttgir_line=0, regions=[Region()])
        self.stack: list[tuple[Op, Region]] = [(self.root, self.root.regions[0])]

    def _locate(self, op: Op, expr: str | None) -> None:
        if expr is not None:
            op.locs, op.value_name = self.table.resolve(expr)

    def feed(self, raw: str, n: int) -> None:
        s = raw.strip()
        if not s or s.startswith("#") or s.startswith("//"):
            return
        if s.startswith("}"):
            self._close(s, n)
            return
        text, expr = _strip_loc(s)
        if text.startswith("^bb"):
            self.stack[-1][1].args = _BLOCK_ARG.findall(text)
            return
        owner, region = self.stack[-1]
        if text == "default {" or _PARTITION.match(text):
            ws = region.ops[-1]  # the warp_specialize op these regions belong to
            new = Region(label="default")
            if pm := _PARTITION.match(text):
                new = Region(label=f"partition{pm.group(1)}", args=_BLOCK_ARG.findall(pm.group(2)),
                             num_warps=int(pm.group(3)))
            ws.regions.append(new)
            self.stack.append((ws, new))
            return
        op = _parse_op(text.rstrip("{").rstrip("(").rstrip(), n)
        self._locate(op, expr)
        region.ops.append(op)
        if text.endswith("{"):
            new = Region()
            op.regions.append(new)
            self.stack.append((op, new))

    def _close(self, s: str, n: int) -> None:
        op, _ = self.stack.pop()
        rest = s.lstrip("})").strip()
        if rest.endswith("{"):  # '} else {', '} do {'
            new = Region(label=rest.rstrip("{").strip())
            op.regions.append(new)
            self.stack.append((op, new))
            return
        text, expr = _strip_loc(rest)
        if op.name == "ttg.warp_specialize" and not text.startswith(":"):
            return  # the end of one partition region; the op continues
        op.closing = text
        if expr is not None and not op.locs:
            self._locate(op, expr)


def parse_ttgir(text: str) -> Op:
    """The module as an op tree (``builtin.module`` with one region)."""
    reader = _Reader(text)
    for n, line in enumerate(text.splitlines(), start=1):
        reader.feed(line, n)
    return reader.root


def walk(region: Region):
    """Every op of ``region`` and of the regions nested in it, in textual order."""
    for op in region.ops:
        yield op
        for r in op.regions:
            yield from walk(r)


def kernel_function(module: Op) -> Op | None:
    """The public ``tt.func`` (the kernel); None if there is none."""
    funcs = [op for op in walk(module.regions[0]) if op.name == "tt.func"]
    public = [f for f in funcs if f.body.startswith("public")]
    return (public or funcs or [None])[0]


def function_args(func: Op) -> list[str]:
    """The kernel's argument names, as in TTGIR (``%a_desc``, ``%a_desc.shape.0``, ``%M``...)."""
    head = func.body.split("(", 1)[1] if "(" in func.body else ""
    return re.findall(r"(%[\w.$-]+)\s*:", head)


_MEMDESC = re.compile(r"!ttg\.memdesc<((?:\d+x)*)([a-z][a-z0-9]*)\s*,([^>]*)>")
_DTYPE_BITS = {"i1": 8, "i8": 8, "i16": 16, "i32": 32, "i64": 64, "f16": 16, "bf16": 16, "f32": 32, "f64": 64}


def memdesc_type(text: str) -> tuple[list[int], str, str] | None:
    """(shape, element type, attributes text) of the first ``!ttg.memdesc<...>`` in ``text``."""
    m = _MEMDESC.search(text)
    if not m:
        return None
    dims = [int(d) for d in m.group(1).split("x") if d]
    return dims, m.group(2), m.group(3)


def element_bytes(dtype: str) -> int:
    if dtype in _DTYPE_BITS:
        return _DTYPE_BITS[dtype] // 8
    if dtype.startswith("f8") or dtype.startswith("f4") or dtype.startswith("f6"):
        return 1  # fp8 (and packed sub-byte types, counted per byte of storage)
    m = re.match(r"[a-z]+(\d+)", dtype)
    return max(1, int(m.group(1)) // 8) if m else 1
