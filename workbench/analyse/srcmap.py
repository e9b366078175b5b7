"""Source maps: the user's line -> lines of each compiler stage, and back."""

from __future__ import annotations

import os
from collections.abc import Callable

from workbench.analyse.llvm_dbg import llvm_line_locations
from workbench.analyse.ptx_loc import ptx_line_locations
from workbench.ir.loc import Loc
from workbench.ir.mlir_loc import first_file, mlir_line_locations
from workbench.ir.sass import sass_line_locations

__all__ = ["Loc", "build_line_map", "invert", "same_file", "stage_locations"]

_PARSERS: dict[str, Callable[[str], dict[int, list[Loc]]]] = {
    "ttir": mlir_line_locations,
    "ttgir": mlir_line_locations,
    "gluon_ttgir": mlir_line_locations,
    "llir": llvm_line_locations,
    "ptx": ptx_line_locations,
    "sass": sass_line_locations,
}


def stage_locations(stage: str, text: str) -> dict[int, list[Loc]]:
    """1-based stage line -> the source locations it came from (empty for unknown stages)."""
    parser = _PARSERS.get(stage)
    if parser is None and stage.endswith("ir") and "loc(" in text:
        parser = mlir_line_locations
    return parser(text) if parser else {}


def same_file(a: str, b: str) -> bool:
    if a == b:
        return True
    na, nb = os.path.normpath(a), os.path.normpath(b)
    if na == nb:
        return True
    # DIFile/.file may spell a relative or bracketed name differently ("./<cell>" vs "<cell>")
    return os.path.basename(na) == os.path.basename(nb) and (na.startswith("<") or nb.startswith("<"))


def served_as(module_text: str, user_file: str) -> set[str]:
    """The other name a compiled module's locations may give the user's file: Triton's cache is keyed by a kernel's
    source and first line, not its file, so a kernel compiled before from an identical cell or file at the same line
    comes back with that one's name (its lines are the user's: same text, same first line). The kernel's own
    location, the module's first file location, says which name this compile carries (empty set: the user's)."""
    first = first_file(module_text)
    return {first} if first and not same_file(first, user_file) else set()


def build_line_map(
    locations: dict[int, list[Loc]],
    user_file: str,
    to_user_line: Callable[[str, int], int | None] | None = None,
) -> dict[int, list[int]]:
    """Map user lines to stage lines. A stage line counts for every user line in its location
    chain (the callee's line and, for an inlined call, the caller's line)."""
    out: dict[int, set[int]] = {}
    for stage_line, locs in locations.items():
        for loc in locs:
            user_line: int | None = None
            if to_user_line is not None:
                user_line = to_user_line(loc.file, loc.line)
            elif same_file(loc.file, user_file):
                user_line = loc.line
            if user_line is not None and user_line > 0:
                out.setdefault(user_line, set()).add(stage_line)
    return {k: sorted(v) for k, v in sorted(out.items())}


def invert(line_map: dict[int, list[int]]) -> dict[int, list[int]]:
    rev: dict[int, set[int]] = {}
    for user, lines in line_map.items():
        for ln in lines:
            rev.setdefault(ln, set()).add(user)
    return {k: sorted(v) for k, v in sorted(rev.items())}
