"""PTX line info: `.file N "path"` and `.loc N line col` directives (with inlined-at)."""

from __future__ import annotations

import os
import re

from workbench.ir.loc import Loc

_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]*)"')
_LOC = re.compile(r"^\s*\.loc\s+(\d+)\s+(\d+)\s+(\d+)(.*)$")
# LLVM prints an inlining chain as a comment: `// t2.py:7:21 @[ t2.py:16:25 ]`
_INLINED_COMMENT = re.compile(r"@\[\s*([^\]]+?)\s*\]")
_INLINED_AT = re.compile(r"inlined_at\s+(\d+)\s+(\d+)\s+(\d+)")
_NOT_CODE = re.compile(r"^\s*(//|\.|\$L\w*:|[{}]\s*$|$)")


def ptx_line_locations(text: str) -> dict[int, list[Loc]]:
    """1-based PTX line -> the source locations of the instruction on it.

    Inside an inline-asm block LLVM emits one ``.loc`` per asm line, counting the source line up by
    one each time (its view of a multi-line asm string); the block's first ``.loc`` is the real one,
    so the others are ignored until ``// end inline asm``."""
    lines = text.splitlines()
    files: dict[str, str] = {}
    for line in lines:
        m = _FILE.match(line)
        if m:
            files[m.group(1)] = m.group(2)
    by_base = {os.path.basename(p): p for p in files.values()}
    result: dict[int, list[Loc]] = {}
    current: list[Loc] = []
    in_asm = asm_located = False
    for i, line in enumerate(lines, start=1):
        stripped = line.strip()
        if stripped == "// begin inline asm":
            in_asm, asm_located = True, False
            continue
        if stripped == "// end inline asm":
            in_asm = False
            continue
        m = _LOC.match(line)
        if m and in_asm and asm_located:
            continue
        if m:
            asm_located = in_asm
            fid, ln, col, rest = m.group(1), int(m.group(2)), int(m.group(3)), m.group(4)
            current = []
            if fid in files and ln > 0:
                current.append(Loc(files[fid], ln, col))
                ia = _INLINED_AT.search(rest)
                if ia and ia.group(1) in files:
                    current.append(Loc(files[ia.group(1)], int(ia.group(2)), int(ia.group(3)), inlined=True))
                else:
                    cm = _INLINED_COMMENT.search(rest)
                    if cm:
                        for site in cm.group(1).split(" @ "):
                            parts = site.strip().rsplit(":", 2)
                            if len(parts) == 3 and parts[1].isdigit():
                                path = by_base.get(parts[0], parts[0])
                                current.append(Loc(path, int(parts[1]), int(parts[2] or 0), inlined=True))
            continue
        if current and not _NOT_CODE.match(line):
            result[i] = current
    return result
