"""Errors raised by the workbench: each names the user's file and line and what to do."""

from __future__ import annotations


class WorkbenchError(Exception):
    """Base class. ``filename``/``lineno`` point at the user's source when known."""

    def __init__(
        self,
        message: str,
        *,
        filename: str | None = None,
        lineno: int | None = None,
        col: int | None = None,
        source_line: str | None = None,
        hint: str | None = None,
    ) -> None:
        self.message = message
        self.filename = filename
        self.lineno = lineno
        self.col = col
        self.source_line = source_line
        self.hint = hint
        super().__init__(self._format())

    def amend(self, extra: str) -> WorkbenchError:
        """Add ``extra`` to the message (e.g. a diagnostic captured after the error was made)."""
        self.message = f"{self.message}{extra}"
        self.args = (self._format(),)
        return self

    def _format(self) -> str:
        where = ""
        if self.filename is not None:
            where = f"{self.filename}:{self.lineno}" if self.lineno else self.filename
            where += ": "
        text = f"{where}{self.message}"
        if self.source_line:
            text += f"\n    {self.source_line.rstrip()}"
            if self.col is not None and self.col >= 0:
                # the line is printed with its own indentation, so the column applies as is
                text += "\n    " + " " * self.col + "^"
        if self.hint:
            text += f"\n  hint: {self.hint}"
        return text


class CompileError(WorkbenchError):
    """The kernel failed to compile (Triton, Gluon or TLX front end, or a backend pass).

    ``config_rejected``: a failure Triton's autotuner treats as "this config does not fit" and skips (a
    ``tl.static_assert`` that failed, ptxas refusing it, more shared memory than a block has), not a broken kernel.
    ``finding``: the static checks' finding that says the same (the shared-memory gate's), for a search's row.
    """

    config_rejected: bool = False
    finding: dict | None = None


class ArgumentError(WorkbenchError):
    """An argument given to compile or launch cannot be turned into a kernel signature."""


class TargetError(WorkbenchError):
    """The requested target is not supported."""


class ToolError(WorkbenchError):
    """An external tool (ptxas, cuobjdump, nvdisasm) is missing or failed."""


class CheckError(WorkbenchError):
    """A kernel's output did not match its reference."""
