"""MLIR locations: the `#locN = loc(...)` table, name/callsite/fused locations, and each line's trailing `loc(...)`."""

from __future__ import annotations

import re

from workbench.ir.loc import Loc

_ALIAS_DEF = re.compile(r"^(#loc\d*)\s*=\s*loc\((.*)\)\s*$")
_FILE_LOC = re.compile(r'^"((?:[^"\\]|\\.)*)":(\d+):(\d+)')
# what a line's parentheses are counted from: a quoted string (file names and value names may hold parentheses)
# is one token, so only the parentheses outside strings count
_PAREN_OR_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|[()]')


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


def _trailing_span(line: str) -> tuple[int, str] | None:
    """(index of ``loc`` in ``line``, the expression inside its parentheses) of a ``loc(...)`` that ends ``line``."""
    s = line.rstrip()
    if not s.endswith(")"):
        return None
    stack: list[int] = []
    opener = None
    for m in _PAREN_OR_STRING.finditer(s):
        if m.group() == "(":
            stack.append(m.start())
        elif m.group() == ")":
            opener = stack.pop() if stack else None
    if opener is None or stack or opener < 3 or s[opener - 3:opener] != "loc":
        return None
    if opener > 3 and (s[opener - 4].isalnum() or s[opener - 4] in "_.$"):
        return None  # 'alloc(...)', 'myloc(...)': not a location
    return opener - 3, s[opener + 1:-1]


def trailing_loc(line: str) -> str | None:
    """The location expression of a line's trailing ``loc(...)`` (``#loc12``, ``unknown``,
    ``callsite(#loc1 at #loc2)``, ``"name"(#loc3)``...), or None when the line does not end in one."""
    span = _trailing_span(line)
    return span[1] if span else None


def strip_loc(line: str) -> tuple[str, str | None]:
    """``line`` without its trailing ``loc(...)`` (and trailing blanks), and the location expression (or None)."""
    span = _trailing_span(line)
    if span is None:
        return line.rstrip(), None
    return line[:span[0]].rstrip(), span[1]


_FIRST_FILE = re.compile(r'loc\("((?:[^"\\]|\\.)*)":\d+:\d+\)')


def first_file(text: str) -> str | None:
    """The file of the first file location (``loc("file":line:col)``) in an MLIR module's text."""
    m = _FIRST_FILE.search(text)
    return m.group(1) if m else None


def is_loc_definition(line: str) -> bool:
    """Whether ``line`` is an entry of the module's location table (``#loc12 = loc(...)``)."""
    return _ALIAS_DEF.match(line.strip()) is not None


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

