"""SASS line info as printed by `nvdisasm -g -gi`: `//## File "path", line N` comments."""

from __future__ import annotations

import re

from workbench.analyse.types import Loc

_FILE_LINE = re.compile(r'//##\s*File\s+"([^"]*)",\s*line\s+(\d+)(.*)$')
_INLINED = re.compile(r'inlined at\s+"([^"]*)",\s*line\s+(\d+)')
_INSTR = re.compile(r"^\s*/\*[0-9a-f]{4,}\*/")


def sass_line_locations(text: str) -> dict[int, list[Loc]]:
    result: dict[int, list[Loc]] = {}
    current: list[Loc] = []
    after_file_line = False
    for i, line in enumerate(text.splitlines(), start=1):
        m = _FILE_LINE.search(line)
        if m:
            # consecutive lines describe the same instructions: an inlined callee's line with its call
            # sites, then the caller's own line; keep both
            current = current if after_file_line else []
            current += [Loc(m.group(1), int(m.group(2)))]
            current += [Loc(f, int(n), inlined=True) for f, n in _INLINED.findall(m.group(3))]
            after_file_line = True
            continue
        after_file_line = False
        if line.startswith("//---") or line.lstrip().startswith(".section"):
            current = []
        if current and _INSTR.match(line):
            result[i] = current
    return result
