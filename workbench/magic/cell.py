"""A ``%%tlx`` cell as Python: its stable file name, its registered source, its compiled code.

The file name is what every kernel the cell defines carries in its locations, and part of each
compiled artifact's key. It is derived from the notebook's cell id when the front end sends one, so
editing one line of a cell recompiles only the kernels whose source or first line changed; without
a cell id (a terminal IPython) it is a hash of the cell text.
"""

from __future__ import annotations

import hashlib
import linecache
from dataclasses import dataclass
from typing import Any

from workbench.errors import CompileError
from workbench.magic import errors as _errors


class CellSyntaxError(CompileError):
    """The cell is not valid Python (line numbers are cell lines, the %%tlx line being line 1)."""


@dataclass
class Cell:
    magic_line: str
    body: str
    filename: str

    @property
    def text(self) -> str:
        return self.magic_line + "\n" + self.body

    def line(self, lineno: int | None) -> str | None:
        return _errors.line_of(self.text, lineno)


def cell_filename(body: str, cell_id: str | None) -> str:
    if cell_id:
        return f"<tlx-cell-{hashlib.sha1(cell_id.encode()).hexdigest()[:12]}>"
    return f"<tlx-cell-{hashlib.sha1(body.encode()).hexdigest()[:12]}>"


def prepare(magic_line: str, body: str, cell_id: str | None) -> tuple[Cell, Any]:
    """Register the cell's source (so Triton and tracebacks read it) and compile it; the magic line is line 1."""
    cell = Cell(magic_line, body, cell_filename(body, cell_id))
    _register_source(cell.filename, cell.text)
    try:
        code = compile("\n" + body, cell.filename, "exec", dont_inherit=True)
    except SyntaxError as e:
        err = CellSyntaxError(e.msg or "invalid syntax", filename=cell.filename, lineno=e.lineno,
                              col=(e.offset - 1) if e.offset else None, source_line=cell.line(e.lineno))
        lines = _errors.short_traceback(type(e).__name__, err.message, filename=cell.filename, lineno=e.lineno,
                                        col=err.col, source_line=err.source_line, cell_filename=cell.filename)
        raise _errors.attach(err, lines) from None
    return cell, code


def _register_source(filename: str, text: str) -> None:
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    # mtime None: linecache.checkcache leaves the entry alone, so inspect.getsource keeps working
    linecache.cache[filename] = (len(text), None, lines, filename)
