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


def fail_at_magic_line(exc: Any, cell: Any, needle: str | None = None) -> None:
    """Raise ``exc`` (a WorkbenchError about the magic's options) pointing at line 1, under ``needle``."""
    col = cell.magic_line.find(needle) if needle else None
    lines = short_traceback(type(exc).__name__, exc.message, filename=cell.filename, lineno=1,
                            col=col if col and col >= 0 else None, source_line=cell.magic_line,
                            cell_filename=cell.filename, hint=exc.hint)
    raise attach(exc, lines) from None


def raise_cell_error(shell: Any, exc: BaseException, failed_kernel: Any, cell: Any, device: Any) -> None:
    """Re-raise what the cell raised with a short traceback at the user's line (never a Triton frame)."""
    from workbench.errors import ArgumentError, WorkbenchError

    if isinstance(exc, KeyboardInterrupt | SystemExit):
        raise exc
    err = _as_workbench_error(exc, failed_kernel)
    if isinstance(err, ArgumentError):
        _at_launch(err, exc, cell, failed_kernel)
    if isinstance(err, WorkbenchError):
        src_line = err.source_line
        if src_line is None and err.filename == cell.filename:
            src_line = line_of(cell.text, err.lineno)
        lines = short_traceback(type(err).__name__, err.message, filename=err.filename or cell.filename,
                                lineno=err.lineno, col=err.col, source_line=src_line, cell_filename=cell.filename,
                                hint=err.hint, func=getattr(failed_kernel, "__name__", None))
        if err.lineno is None or err.filename != cell.filename:
            where = _cell_line_of(exc, cell.filename)
            if where:  # say where in the cell the failing launch or compile was
                lines[0] += f"\n  (raised by cell line {where}: {(line_of(cell.text, where) or '').strip()})"
        raise attach(err, lines) from None
    lines = trimmed_traceback(shell, exc, cell.filename)
    if lines is not None:
        if not device.available and any(p in str(exc) for p in _ASKED_FOR_A_GPU):
            lines = list(lines) + [
                f"{CYAN}hint{RESET}: there is no GPU here ({device.reason}); create tensors with device=DEVICE "
                "(it is 'cpu' without a GPU) and the launches become compiles"
            ]
        attach(exc, lines)
    raise exc.with_traceback(exc.__traceback__)


#: What torch and Triton raise when a cell asks for a GPU that is not there (device="cuda", .cuda(), a launch of
#: CUDA tensors): the hint then says how the cell runs without one. Not for an error that merely names CUDA.
_ASKED_FOR_A_GPU = ("not compiled with CUDA", "no NVIDIA driver", "No CUDA GPUs", "CUDA driver", "active drivers")


def _as_workbench_error(exc: BaseException, kernel: Any) -> BaseException:
    """A Triton front-end error raised by a launch outside ``workbench.compile`` -> CompileError."""
    from triton.compiler.errors import CompilationError

    from workbench.errors import WorkbenchError

    if not isinstance(exc, CompilationError) or isinstance(exc, WorkbenchError) or kernel is None:
        return exc
    from workbench.compile.diagnostics import from_compilation_error
    from workbench.compile.driver import user_source
    from workbench.compile.tuners import base_jit

    return from_compilation_error(exc, user_source(base_jit(kernel)))


def _at_launch(err: Any, exc: BaseException, cell: Any, kernel: Any) -> None:
    """An argument error belongs at the cell line that launched (or compiled) the kernel, not at its ``def``:
    move it there, and say where the kernel is defined."""
    where = _cell_line_of(exc, cell.filename)
    if where is None or (err.filename == cell.filename and err.lineno == where):
        return
    name = getattr(kernel, "__name__", None) or "the kernel"
    if err.lineno:
        place = f"cell line {err.lineno}" if err.filename == cell.filename else f"{err.filename}:{err.lineno}"
        err.amend(f" ({name} is defined at {place})")
    source = line_of(cell.text, where) or ""
    col = source.find(f"{name}[") if name != "the kernel" else -1
    err.filename, err.lineno, err.source_line = cell.filename, where, source or None
    err.col = col if col >= 0 else None


def _cell_line_of(exc: BaseException, filename: str) -> int | None:
    tb, where = exc.__traceback__, None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            where = tb.tb_lineno
        tb = tb.tb_next
    return where
