"""Unmasked global loads and stores that the launch's sizes prove leave their tensor.

For each ``tt.load``/``tt.store`` without a mask whose pointer is a kernel argument plus offsets, the offsets'
range is computed from the TTGIR (constants, ``tl.program_id`` over the launch's grid, ``tl.arange``, integer
arguments, and ``+ - *`` of those, splats, broadcasts and casts) and compared with the elements the tensor
argument has from its pointer. An access whose range leaves ``[0, extent)`` is reported at its line: an error
when the range is exact (each variable enters once), a warning when interval arithmetic may overstate it.
Offsets the reader cannot bound (loop-carried values, loads) say nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from workbench.check.context import Context
from workbench.check.findings import Finding
from workbench.ir.mlir import walk

_INT = re.compile(r"^(?:dense<)?(-?\d+)>?\s*:")
_RANGE = re.compile(r"end\s*=\s*(-?\d+)\s*:\s*i32,\s*start\s*=\s*(-?\d+)")
_PID = re.compile(r"^([xyz])\b")
_PASS = {"tt.splat", "tt.broadcast", "tt.expand_dims", "arith.extsi", "arith.extui", "arith.trunci",
         "arith.index_cast", "ttg.convert_layout", "tt.reshape"}


@dataclass(frozen=True)
class Span:
    lo: int
    hi: int
    leaves: frozenset[str]  # the variables it is made of (exact while each enters once)
    exact: bool = True


def _combine(op: str, a: Span, b: Span) -> Span:
    exact = a.exact and b.exact and not (a.leaves & b.leaves)
    if op == "arith.addi":
        lo, hi = a.lo + b.lo, a.hi + b.hi
    elif op == "arith.subi":
        lo, hi = a.lo - b.hi, a.hi - b.lo
    else:
        products = (a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi)
        lo, hi = min(products), max(products)
        exact = exact and (a.lo == a.hi or b.lo == b.hi)  # a constant factor keeps the range exact
    return Span(lo, hi, a.leaves | b.leaves, exact)


class _Ranges:
    def __init__(self, values: dict[str, int], grid: tuple[int, ...], pointers: set[str]) -> None:
        self.values, self.grid, self.pointers = values, grid, pointers
        self.spans: dict[str, Span] = {}
        self.ptrs: dict[str, tuple[str, Span]] = {}  # pointer SSA value -> (argument, offsets)

    def feed(self, op) -> None:
        res = op.results[0] if op.results else None
        if res is None:
            return
        span = self._span(op)
        if span is not None:
            self.spans[res] = span
            return
        ops = op.operands
        if op.name == "tt.splat" and ops and ops[0].lstrip("%") in self.pointers:
            self.ptrs[res] = (ops[0].lstrip("%"), Span(0, 0, frozenset()))
        elif op.name == "tt.addptr" and len(ops) >= 2 and ops[0] in self.ptrs and self._of(ops[1]) is not None:
            base, off = self.ptrs[ops[0]]
            self.ptrs[res] = (base, _combine("arith.addi", off, self._of(ops[1])))
        elif op.name in _PASS and ops and ops[0] in self.ptrs:
            self.ptrs[res] = self.ptrs[ops[0]]

    def _of(self, name: str) -> Span | None:
        if name in self.spans:
            return self.spans[name]
        v = self.values.get(name.lstrip("%"))
        return Span(v, v, frozenset()) if isinstance(v, int) else None

    def _span(self, op) -> Span | None:
        body, ops = op.body.strip(), op.operands
        if op.name == "arith.constant" and (m := _INT.match(body)):
            return Span(int(m.group(1)), int(m.group(1)), frozenset())
        if op.name == "tt.make_range" and (m := _RANGE.search(body)):
            return Span(int(m.group(2)), int(m.group(1)) - 1, frozenset({op.results[0]}))
        if op.name == "tt.get_program_id" and (m := _PID.match(body)):
            axis = "xyz".index(m.group(1))
            n = self.grid[axis] if axis < len(self.grid) else 1
            return Span(0, max(n - 1, 0), frozenset({f"pid.{axis}"}))
        if op.name in ("arith.addi", "arith.subi", "arith.muli") and len(ops) == 2:
            a, b = self._of(ops[0]), self._of(ops[1])
            return _combine(op.name, a, b) if a is not None and b is not None else None
        if op.name in _PASS and ops and ops[0] not in self.ptrs:
            return self._of(ops[0])
        return None


def _unmasked_access(op) -> str | None:
    n = len(op.operands)
    if op.name == "tt.load" and n == 1:
        return "tl.load"
    if op.name == "tt.store" and n == 2:
        return "tl.store"
    return None


def global_out_of_bounds(ctx: Context, values: dict[str, int] | None, grid: tuple[int, ...] | None) -> None:
    """Needs the launch's grid and tensors (``values``' ``.extent``s): without them nothing is proven."""
    model = ctx.model
    if model.func is None or not values or not grid:
        return
    extents = {k[: -len(".extent")]: v for k, v in values.items() if k.endswith(".extent")}
    if not extents:
        return
    ranges = _Ranges(values, grid, set(extents))
    for op in walk(model.func.regions[0]):
        what = _unmasked_access(op)
        if what is None:
            ranges.feed(op)
            continue
        found = ranges.ptrs.get(op.operands[0])
        if found is None:
            continue
        arg, span = found
        extent = extents[arg]
        if span.lo >= 0 and span.hi < extent:
            continue
        ctx.add(_finding(what, arg, span, extent, grid, model.to_line(op) if model.to_line else None))


def _finding(what: str, arg: str, span: Span, extent: int, grid: tuple[int, ...], line: int | None) -> Finding:
    out = []
    if span.hi >= extent:
        out.append(f"{span.hi - extent + 1} past its end")
    if span.lo < 0:
        out.append(f"{-span.lo} before its start")
    certain = "reaches" if span.exact else "may reach (a bound from interval arithmetic)"
    return Finding(
        "global-out-of-bounds", "error" if span.exact else "warning", line,
        f"This {what} has no mask and, with this launch (grid {tuple(grid)}), {certain} elements {span.lo}..{span.hi} "
        f"of `{arg}`, which has {extent} elements from its pointer ({', '.join(out)}). On a GPU it reads garbage "
        f"or faults; on a CPU the interpreter stops at it.", [],
        "mask the access with the bound it must stay under (e.g. mask=offs < n), or launch fewer programs")
