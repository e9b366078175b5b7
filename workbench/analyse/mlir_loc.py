"""MLIR location parsing: `#locN = loc(...)` aliases, name/callsite/fused locations, op lines."""

from __future__ import annotations

import re

from workbench.analyse.types import Loc

_ALIAS_DEF = re.compile(r"^(#loc\d*)\s*=\s*loc\((.*)\)\s*$")
# The trailing `loc(...)` of an op line (balanced parentheses are handled by _trailing_loc).
_FILE_LOC = re.compile(r'^"((?:[^"\\]|\\.)*)":(\d+):(\d+)')


def _split_top(text: str, sep: str) -> list[str]:
    """Split on `sep` at parenthesis/bracket depth 0, outside strings."""
    parts, depth, cur, in_str, i = [], 0, [], False, 0
    while i < len(text):
        c = text[i]
        if in_str:
            cur.append(c)
            if c == "\\" and i + 1 < len(text):
                cur.append(text[i + 1])
                i += 1
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
            cur.append(c)
        elif c in "([":
            depth += 1
            cur.append(c)
        elif c in ")]":
            depth -= 1
            cur.append(c)
        elif depth == 0 and text.startswith(sep, i):
            parts.append("".join(cur))
            cur = []
            i += len(sep)
            continue
        else:
            cur.append(c)
        i += 1
    parts.append("".join(cur))
    return [p.strip() for p in parts]


class LocTable:
    """Resolves MLIR location expressions (with aliases) to source locations."""

    def __init__(self, text: str) -> None:
        self.aliases: dict[str, str] = {}
        for line in text.splitlines():
            m = _ALIAS_DEF.match(line.strip())
            if m:
                self.aliases[m.group(1)] = m.group(2)
        self._cache: dict[str, tuple[list[Loc], str | None]] = {}

    def resolve(self, expr: str) -> tuple[list[Loc], str | None]:
        """Return (locations, name). For a callsite, the callee's location comes first, then
        the caller's, each marked; a name location gives the value's name."""
        expr = expr.strip()
        if expr in self._cache:
            return self._cache[expr]
        self._cache[expr] = ([], None)  # guard against cycles
        out: list[Loc] = []
        name: str | None = None
        if expr.startswith("#loc"):
            inner = self.aliases.get(expr)
            if inner is not None:
                out, name = self.resolve(inner)
        elif expr.startswith('"'):
            m = _FILE_LOC.match(expr)
            if m:
                out = [Loc(m.group(1), int(m.group(2)), int(m.group(3)))]
            else:
                # name location: "name"(child) or "name"
                nm = re.match(r'^"((?:[^"\\]|\\.)*)"\s*(?:\((.*)\))?\s*$', expr, re.S)
                if nm:
                    name = nm.group(1)
                    if nm.group(2):
                        out, inner_name = self.resolve(nm.group(2))
                        name = name or inner_name
        elif expr.startswith("callsite("):
            body = expr[len("callsite(") : -1]
            callee, _, caller = body.partition(" at ")
            c_locs, c_name = self.resolve(callee)
            p_locs, _ = self.resolve(caller)
            out = [*c_locs, *(Loc(p.file, p.line, p.col, inlined=True) for p in p_locs)]
            name = c_name
        elif expr.startswith("fused"):
            m = re.match(r"^fused(?:<[^>]*>)?\[(.*)\]$", expr, re.S)
            if m:
                for part in _split_top(m.group(1), ","):
                    locs, nm2 = self.resolve(part)
                    out.extend(locs)
                    name = name or nm2
        # 'unknown' and anything else resolve to nothing
        self._cache[expr] = (out, name)
        return out, name


def trailing_loc(line: str) -> str | None:
    """The location expression of an op line's trailing `loc(...)`, or None."""
    s = line.rstrip()
    if not s.endswith(")"):
        return None
    depth = 0
    for i in range(len(s) - 1, -1, -1):
        c = s[i]
        if c == ")":
            depth += 1
        elif c == "(":
            depth -= 1
            if depth == 0:
                if s[max(0, i - 3) : i] == "loc":
                    return s[i + 1 : -1]
                return None
    return None


def mlir_line_locations(text: str) -> dict[int, list[Loc]]:
    """1-based line of an MLIR module -> source locations of the op on that line."""
    table = LocTable(text)
    result: dict[int, list[Loc]] = {}
    for i, line in enumerate(text.splitlines(), start=1):
        stripped = line.lstrip()
        if stripped.startswith("#loc") or not stripped:
            continue
        expr = trailing_loc(line)
        if expr is None:
            continue
        locs, _ = table.resolve(expr)
        if locs:
            result[i] = locs
    return result


def mlir_value_names(text: str) -> dict[int, str]:
    """1-based line -> the name location of the op on that line (the user's variable)."""
    table = LocTable(text)
    names: dict[int, str] = {}
    for i, line in enumerate(text.splitlines(), start=1):
        expr = trailing_loc(line)
        if expr is None or line.lstrip().startswith("#loc"):
            continue
        _, name = table.resolve(expr)
        if name:
            names[i] = name
    return names
