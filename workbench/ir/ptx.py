"""PTX as Triton prints it: which lines are debug information (``.loc``/``.file`` directives, comments, the
debug-info labels) and the code without them. Line info itself is read by :mod:`workbench.analyse.ptx_loc`."""

from __future__ import annotations

import re

_LOC = re.compile(r"^\s*\.loc\s")
_DEBUG = re.compile(r"^\s*\.(loc|file)\b|^\s*//|^\$L__(tmp|func_begin|func_end)\d+:$")


def is_loc(line: str) -> bool:
    """Whether ``line`` is a ``.loc`` directive."""
    return _LOC.match(line) is not None


def code_text(ptx: str) -> str:
    """The PTX without ``.loc``/``.file`` lines, comments, debug-info labels, blank lines and the DWARF sections
    after the code."""
    code = ptx.split(".section\t.debug", 1)[0].split(".section .debug", 1)[0]
    return "\n".join(ln.rstrip() for ln in code.splitlines() if ln.strip() and not _DEBUG.match(ln))


_SETMAXNREG = re.compile(r"setmaxnreg\.(\w+)\.sync\.aligned\.u32\s+(\d+)")


def setmaxnreg(ptx: str) -> list[tuple[str, int]]:
    """('inc' or 'dec', registers per thread) of each ``setmaxnreg`` in ``ptx``, in order."""
    return [(kind, int(n)) for kind, n in _SETMAXNREG.findall(ptx)]
