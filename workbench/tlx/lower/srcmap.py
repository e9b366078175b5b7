"""Line maps from MLIR text with locations (``loc(#locN)`` and ``#locN = loc("file":L:C)``) to user lines."""

from __future__ import annotations

import re

_ALIAS_DEF = re.compile(r"^#(loc\d*)\s*=\s*loc\((.*)\)\s*$")
_FILE_LOC = re.compile(r'"([^"]+)":(\d+):(\d+)')
_USE = re.compile(r'loc\((#loc\d*|"[^"]*":\d+:\d+|[^()]*\([^()]*\))\)')
_REF = re.compile(r"#(loc\d*)")


def _resolve(body: str, aliases: dict[str, str], filename: str, depth: int = 0) -> int | None:
    m = _FILE_LOC.search(body)
    if m and (m.group(1) == filename or filename is None):
        return int(m.group(2))
    if depth > 8:
        return None
    for ref in _REF.findall(body):
        if ref in aliases:
            got = _resolve(aliases[ref], aliases, filename, depth + 1)
            if got is not None:
                return got
    return None


def mlir_line_map(text: str, filename: str) -> dict[int, list[int]]:
    """User line (of ``filename``) -> 1-based lines of ``text`` whose op location resolves to it."""
    lines = text.splitlines()
    aliases: dict[str, str] = {}
    for ln in lines:
        m = _ALIAS_DEF.match(ln)
        if m:
            aliases[m.group(1)] = m.group(2)
    out: dict[int, list[int]] = {}
    for i, ln in enumerate(lines, start=1):
        if ln.startswith("#loc"):
            continue
        idx = ln.rfind("loc(")
        if idx < 0:
            continue
        body = ln[idx + 4 :]
        user = _resolve(body, aliases, filename)
        if user is not None:
            out.setdefault(user, []).append(i)
    return out
