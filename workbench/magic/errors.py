"""Short tracebacks for ``%%tlx`` cells: the cell line (the ``%%tlx`` line is line 1), the source
line with a caret, the message and a hint; no frames from inside the workbench or Triton.

IPython shows ``exc._render_traceback_()`` instead of its own traceback when an exception has
it, and the cell still fails (so Run All stops).
"""

from __future__ import annotations

import traceback
from typing import Any

RED = "\x1b[31m"
BOLD = "\x1b[1m"
CYAN = "\x1b[36m"
RESET = "\x1b[0m"


def _where(filename: str | None, lineno: int | None, cell_filename: str, func: str | None = None) -> str:
    in_fn = f", in {func}" if func else ""
    if filename == cell_filename or filename is None:
        return f"Cell line {lineno}{in_fn}" if lineno else f"This cell{in_fn}"
    return f'File "{filename}", line {lineno}{in_fn}' if lineno else f'File "{filename}"{in_fn}'


def short_traceback(
    ename: str,
    message: str,
    *,
    filename: str | None,
    lineno: int | None,
    col: int | None,
    source_line: str | None,
    cell_filename: str,
    hint: str | None = None,
    func: str | None = None,
) -> list[str]:
    """Lines for an error output (ANSI colour on the name only)."""
    first, _, rest = message.strip().partition("\n")
    out = [f"{RED}{BOLD}{ename}{RESET}: {first}"]
    out.append("  " + _where(filename, lineno, cell_filename, func))
    if source_line is not None and source_line.strip():
        stripped = source_line.rstrip("\n")
        indent = len(stripped) - len(stripped.lstrip())
        out.append("    " + stripped.strip())
        if col is not None and col >= indent:
            out.append("    " + " " * (col - indent) + "^")
    if rest.strip():
        out.extend("  " + ln for ln in rest.strip().splitlines()[:12])
    if hint:
        out.append(f"  {CYAN}hint{RESET}: {hint}")
    return ["\n".join(out)]


def attach(exc: BaseException, lines: list[str]) -> BaseException:
    """Make IPython show ``lines`` for ``exc``; returns ``exc``."""
    try:
        exc._render_traceback_ = lambda: lines  # type: ignore[attr-defined]
    except Exception:
        pass
    return exc


def line_of(text: str, lineno: int | None) -> str | None:
    if not lineno:
        return None
    lines = text.splitlines()
    return lines[lineno - 1] if 0 < lineno <= len(lines) else None


def trimmed_traceback(shell: Any, exc: BaseException, cell_filename: str) -> list[str] | None:
    """IPython's traceback of ``exc`` from the first frame in the cell on (magic frames dropped)."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != cell_filename:
        tb = tb.tb_next
    if tb is None:
        return None
    try:
        return shell.InteractiveTB.structured_traceback(type(exc), exc, tb)
    except Exception:
        return traceback.format_exception(type(exc), exc, tb)
