"""Compile-time diagnostics of the TLX lowering: the user's line and a sentence on how to fix it."""

from __future__ import annotations

import linecache
from typing import Any

from workbench.errors import CompileError


class TLXError(Exception):
    """Raised inside the lowering; turned into a :class:`workbench.errors.CompileError` at the top."""

    def __init__(
        self,
        message: str,
        hint: str | None = None,
        *,
        rule: str = "unsupported",
        filename: str | None = None,
        lineno: int | None = None,
        col: int | None = None,
    ) -> None:
        self.message = message
        self.hint = hint
        self.rule = rule
        self.filename = filename
        self.lineno = lineno
        self.col = col
        super().__init__(message)


class TLXCompileError(CompileError):
    """A diagnostic of the TLX lowering (``rule`` names which check fired)."""

    def __init__(self, message: str, *, rule: str = "unsupported", **kw: Any) -> None:
        self.rule = rule
        super().__init__(message, **kw)


def where(generator, node=None) -> tuple[str | None, int | None, int | None]:
    """(filename, absolute line, column) of ``node`` (default: the node being visited)."""
    node = node if node is not None else getattr(generator, "cur_node", None)
    if generator is None or node is None or not hasattr(node, "lineno"):
        return None, None, None
    return generator.file_name, generator.begin_line + node.lineno, getattr(node, "col_offset", None)


def error(generator, message: str, hint: str | None = None, *, rule: str = "unsupported", node=None) -> TLXError:
    filename, lineno, col = where(generator, node)
    return TLXError(message, hint, rule=rule, filename=filename, lineno=lineno, col=col)


def _source_line(filename: str | None, lineno: int | None) -> str | None:
    if not filename or not lineno:
        return None
    line = linecache.getline(filename, lineno)
    return line or None


def to_compile_error(
    exc: BaseException, default_file: str | None = None, default_line: int | None = None
) -> TLXCompileError:
    """Find the TLX diagnostic (or the innermost Triton error) in ``exc``'s chain, for the user."""
    chain: list[BaseException] = []
    e: BaseException | None = exc
    while e is not None and e not in chain:
        chain.append(e)
        e = e.__cause__ or e.__context__
    for e in chain:
        if isinstance(e, TLXError):
            fn = e.filename or default_file
            ln = e.lineno or default_line
            return TLXCompileError(
                e.message,
                rule=e.rule,
                filename=fn,
                lineno=ln,
                col=e.col,
                source_line=_source_line(fn, ln),
                hint=e.hint,
            )
        if isinstance(e, TLXCompileError):
            return e
    # A Triton front-end (or MLIR) error: report the innermost location in the user's file.
    from triton.compiler.errors import CompilationError

    located = [e for e in chain if getattr(e, "_tlx_where", None)]
    in_user = [e for e in located if e._tlx_where[0] == default_file]
    pick = in_user[-1] if in_user else (located[-1] if located else None)
    fn, ln, col = pick._tlx_where if pick is not None else (default_file, default_line, None)
    msg = None
    for e in reversed(chain):
        if isinstance(e, CompilationError) and getattr(e, "error_message", None):
            msg = e.error_message
            break
    if not msg:
        base = chain[-1]
        msg = f"{type(base).__name__}: {base}"
    first = msg.strip().splitlines()[0] if msg.strip() else msg
    return TLXCompileError(
        f"the TLX lowering could not compile this line: {first}",
        rule="unsupported",
        filename=fn,
        lineno=ln,
        col=col,
        source_line=_source_line(fn, ln),
        hint="if this is a TLX or tl call the workbench does not support yet, rewrite it with "
        "the calls listed in TLX_API.md",
    )
