"""Parse the layout attributes a TTGIR module declares, find the values that use them, and gather their
linear layouts (the data the viewer draws)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from workbench.ir.artifact import DeclaredLayout, Layouts, ValueUse
from workbench.ir.mlir import element_bytes
from workbench.ir.mlir_loc import LocTable, trailing_loc

_DECL = re.compile(r"^(#[A-Za-z_][\w]*)\s*=\s*#(ttg|ttng|ttag|amdgpu)\.(\w+)<(.*)>\s*$")
_SHARED_KINDS = {"nvmma_shared", "swizzled_shared", "shared_memory", "padded_shared", "shared_linear"}
_TYPE = re.compile(r"(tensor|!ttg\.memdesc)<([^<>]*(?:<[^<>]*>[^<>]*)*)>")
_RESULT = re.compile(r"^\s*%([\w.$-]+)(?::\d+)?(?:\s*,\s*%[\w.$-]+)*\s*=")
_OP = re.compile(r"=\s*\"?[a-z_]+\.([\w.]+)")  # the op after '=': tt.reshape -> reshape


def _parse_value(v: str):
    v = v.strip()
    if v.startswith("[") and v.endswith("]"):
        inner = v[1:-1].strip()
        return [_parse_value(x) for x in _split(inner)] if inner else []
    if v in ("true", "false"):
        return v == "true"
    m = re.fullmatch(r"(-?\d+)(?:\s*:\s*\w+)?", v)
    if m:
        return int(m.group(1))
    return v.strip('"')


def _split(s: str) -> list[str]:
    parts, depth, cur = [], 0, []
    for c in s:
        if c in "[<{(":
            depth += 1
        elif c in "]>})":
            depth -= 1
        if c == "," and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    if "".join(cur).strip():
        parts.append("".join(cur))
    return parts


def parse_params(body: str) -> dict:
    """`{sizePerThread = [1, 8], order = [1, 0]}` -> dict. Non-dict bodies go under 'value'."""
    body = body.strip()
    if body.startswith("{") and body.endswith("}"):
        out = {}
        for part in _split(body[1:-1]):
            k, _, v = part.partition("=")
            out[k.strip()] = _parse_value(v)
        return out
    # e.g. slice: {dim = 0, parent = #blocked}; dot_op: {opIdx = 0, parent = #mma, kWidth = 2}
    return {"value": body} if body else {}


def _type_shape(body: str) -> tuple[list[int], str, list[str]]:
    """`128x64xf16, #blocked` -> ([128, 64], 'f16', ['#blocked'])."""
    parts = [p.strip() for p in _split(body)]
    dims = parts[0].split("x") if parts else []
    shape, dtype = [], ""
    for d in dims:
        if d.isdigit():
            shape.append(int(d))
        else:
            dtype = d if not dtype else dtype + "x" + d
    aliases = [p for p in parts[1:] if p.startswith("#")]
    return shape, dtype, aliases


def parse_layouts(ttgir: str, user_line_of=None) -> Layouts:
    """Declared layouts of a TTGIR module, each with the values (SSA results) that carry it.

    ``user_line_of(file, line) -> int | None`` maps a location to the user's line.
    """
    lines = ttgir.splitlines()
    declared: dict[str, DeclaredLayout] = {}
    for line in lines:
        m = _DECL.match(line.strip())
        if m:
            alias, _dialect, kind, body = m.groups()
            declared[alias] = DeclaredLayout(
                alias=alias,
                kind=kind,
                attr=f"#{_dialect}.{kind}<{body}>",
                params=parse_params(body),
                shared=kind in _SHARED_KINDS,
            )
    if not declared:
        return Layouts()
    table = LocTable(ttgir)
    for i, line in enumerate(lines, start=1):
        rm = _RESULT.match(line)
        if not rm:
            continue
        # result type: after the last ' : ' or '->'
        head = line
        expr = trailing_loc(line)
        if expr is not None:
            head = line.rstrip()[: -len(expr) - 5]
        tail = head.rsplit("->", 1)[-1] if "->" in head else head.rsplit(" : ", 1)[-1]
        matches = list(_TYPE.finditer(tail))
        if not matches:
            continue
        tm = matches[-1]
        if tm is None:
            continue
        shape, dtype, aliases = _type_shape(tm.group(2))
        user_line = None
        name = _unnamed(rm.group(1), line)
        if expr is not None:
            locs, loc_name = table.resolve(expr)
            name = loc_name or name
            for loc in locs:
                if user_line_of is not None:
                    user_line = user_line_of(loc.file, loc.line)
                else:
                    user_line = loc.line
                if user_line is not None:
                    break
        for alias in aliases:
            if alias in declared and alias != "#smem":
                declared[alias].uses.append(
                    ValueUse(name, i, user_line, f"{tm.group(1)}<{tm.group(2)}>", shape, dtype)
                )
                break
    return Layouts(declared=list(declared.values()))


def _unnamed(ssa: str, line: str) -> str:
    """A value without the user's name (Triton numbers it: %7) named by its op and number ("reshape %7"), so that a
    table of values does not read "7", "8", "8" (each partition of a warp-specialized kernel numbers its own)."""
    if not ssa.isdigit():
        return ssa
    op = _OP.search(line)
    return f"{op.group(1)} %{ssa}" if op else f"%{ssa}"


# (declarations, [(type text, shape)]) -> one linear layout (or {"reason"}) per type: compile's reach into
# Triton's C++ (workbench.compile.triton_reach.linear_layouts with the target bound)
LinearOf = Callable[[str, list[tuple[str, list[int]]]], list[dict[str, Any]]]


_ALIAS_LINE = re.compile(r"^#[A-Za-z_][\w]*\s*=\s*#\w+\.")


def linear_layouts(ttgir: str, layouts: Layouts, linear_of: LinearOf) -> list[dict[str, Any]]:
    """Triton's linear layout of every (layout, shape, dtype) a value of ``ttgir`` carries (``layouts``:
    what ``parse_layouts`` found in it), each entry keyed by ``alias``, ``value_shape`` and ``dtype``; shared
    layouts also say their ``element_bits`` (banks)."""
    keys: dict[tuple[str, tuple[int, ...], str], str] = {}
    shared = {d.alias for d in layouts.declared if d.shared}
    for d in layouts.declared:
        for u in d.uses:
            keys.setdefault((d.alias, tuple(u.shape), u.dtype), u.type)
    if not keys:
        return []
    declarations = "\n".join(line for line in ttgir.splitlines() if _ALIAS_LINE.match(line))
    found = linear_of(declarations, [(t, list(k[1])) for k, t in keys.items()])
    out = []
    for (alias, shape, dtype), data in zip(keys, found, strict=True):
        entry = {"alias": alias, "value_shape": list(shape), "dtype": dtype, **data}
        if alias in shared and "reason" not in data:
            entry["element_bits"] = 8 * element_bytes(dtype)
        out.append(entry)
    return out
