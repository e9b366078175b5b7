"""Integer arithmetic of TTGIR scalars (``arith`` dialect), for the orchestration simulator.

Values are Python ints (``i1`` as 0/1); ``None`` is a value the simulator does not know (tensor
contents, floats, pointers). Any op over an unknown operand gives an unknown result.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from workbench.ir.mlir import Op

_UNSET = object()
_CONST = re.compile(r"^(-?\d+|true|false)\s*(?::\s*(i\d+|index))?\s*$")


def _div(a: int, b: int) -> int | None:
    if b == 0:
        return None
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _rem(a: int, b: int) -> int | None:
    if b == 0:
        return None
    r = abs(a) % abs(b)
    return r if a >= 0 else -r


def _floordiv(a: int, b: int) -> int | None:
    return None if b == 0 else a // b


def _ceildiv(a: int, b: int) -> int | None:
    return None if b == 0 else -((-a) // b)


_BINARY: dict[str, Callable[[int, int], int | None]] = {
    "arith.addi": lambda a, b: a + b,
    "arith.subi": lambda a, b: a - b,
    "arith.muli": lambda a, b: a * b,
    "arith.divsi": _div,
    "arith.divui": _floordiv,
    "arith.remsi": _rem,
    "arith.remui": lambda a, b: None if b == 0 else a % b,
    "arith.floordivsi": _floordiv,
    "arith.ceildivsi": _ceildiv,
    "arith.ceildivui": _ceildiv,
    "arith.andi": lambda a, b: a & b,
    "arith.ori": lambda a, b: a | b,
    "arith.xori": lambda a, b: a ^ b,
    "arith.maxsi": max,
    "arith.minsi": min,
    "arith.maxui": max,
    "arith.minui": min,
    "arith.shli": lambda a, b: a << b,
    "arith.shrsi": lambda a, b: a >> b,
    "arith.shrui": lambda a, b: a >> b,
}

_CMP: dict[str, Callable[[int, int], bool]] = {
    "eq": lambda a, b: a == b, "ne": lambda a, b: a != b,
    "slt": lambda a, b: a < b, "sle": lambda a, b: a <= b, "sgt": lambda a, b: a > b, "sge": lambda a, b: a >= b,
    "ult": lambda a, b: a < b, "ule": lambda a, b: a <= b, "ugt": lambda a, b: a > b, "uge": lambda a, b: a >= b,
}

_PASS = {"arith.extui", "arith.extsi", "arith.trunci", "arith.index_cast", "arith.index_castui", "arith.bitcast"}

ARITH_OPS = set(_BINARY) | _PASS | {"arith.constant", "arith.cmpi", "arith.select"}


def evaluate(op: Op, get) -> int | None:
    """The value of scalar op ``op``; ``get(name)`` gives an operand's value (None: unknown)."""
    name = op.name
    if name == "arith.constant":
        cached = op.__dict__.get("_constant", _UNSET)
        if cached is _UNSET:
            m = _CONST.match(op.body)
            text = m.group(1) if m else None
            cached = None if text is None else 1 if text == "true" else 0 if text == "false" else int(text)
            op.__dict__["_constant"] = cached
        return cached
    args = [get(v) for v in op.operands]
    if any(a is None or not isinstance(a, int) for a in args):
        return None
    if name in _BINARY and len(args) == 2:
        return _BINARY[name](args[0], args[1])
    if name in _PASS and args:
        if name == "arith.trunci" and op.body.rstrip().endswith("to i1"):
            return args[0] & 1
        return args[0]
    if name == "arith.cmpi" and len(args) == 2:
        pred = op.body.split(",", 1)[0].strip()
        fn = _CMP.get(pred)
        return None if fn is None else int(fn(args[0], args[1]))
    if name == "arith.select" and len(args) == 3:
        return args[1] if args[0] else args[2]
    return None
