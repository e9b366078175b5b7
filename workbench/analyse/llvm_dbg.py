"""LLVM IR debug locations: `!dbg !N` on instructions, DILocation/DISubprogram/DIFile metadata."""

from __future__ import annotations

import os
import re

from workbench.ir.loc import Loc

_MD_DEF = re.compile(r"^(!\d+)\s*=\s*(?:distinct\s+)?!(\w+)\((.*)\)\s*$")
_FIELD = re.compile(r'(\w+):\s*("(?:[^"\\]|\\.)*"|![\d]+|[^,]+)')
_DBG_REF = re.compile(r"!dbg\s+(!\d+)")


def _fields(body: str) -> dict[str, str]:
    return {k: v.strip().strip('"') for k, v in _FIELD.findall(body)}


def llvm_line_locations(text: str) -> dict[int, list[Loc]]:
    nodes: dict[str, tuple[str, dict[str, str]]] = {}
    lines = text.splitlines()
    for line in lines:
        if line.startswith("!"):
            m = _MD_DEF.match(line.strip())
            if m:
                nodes[m.group(1)] = (m.group(2), _fields(m.group(3)))

    def file_of(ref: str | None, depth: int = 0) -> str | None:
        if ref is None or depth > 50 or ref not in nodes:
            return None
        kind, f = nodes[ref]
        if kind == "DIFile":
            name, directory = f.get("filename", ""), f.get("directory", "")
            if os.path.isabs(name) or not directory:
                return name
            return os.path.join(directory, name)
        if "file" in f:
            return file_of(f["file"], depth + 1)
        return file_of(f.get("scope"), depth + 1)

    cache: dict[str, list[Loc]] = {}

    def resolve(ref: str, depth: int = 0) -> list[Loc]:
        if ref in cache:
            return cache[ref]
        cache[ref] = []
        kind, f = nodes.get(ref, ("", {}))
        out: list[Loc] = []
        if kind == "DILocation":
            file = file_of(f.get("scope"))
            if file is not None and f.get("line", "0") != "0":
                out.append(Loc(file, int(f["line"]), int(f.get("column", "0"))))
            if "inlinedAt" in f and depth < 50:
                out.extend(Loc(x.file, x.line, x.col, inlined=True) for x in resolve(f["inlinedAt"], depth + 1))
        cache[ref] = out
        return out

    result: dict[int, list[Loc]] = {}
    for i, line in enumerate(lines, start=1):
        if line.startswith("!"):
            continue
        m = _DBG_REF.search(line)
        if m:
            locs = resolve(m.group(1))
            if locs:
                result[i] = locs
    return result
