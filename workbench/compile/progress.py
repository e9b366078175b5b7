"""What the workbench is doing now, for whoever shows it (the ``%%tlx`` magic's status line).

Layers report (``note("compiling k: ttgir")``); one listener, set for the length of a block by ``listening``,
hears it. Without a listener a note costs a context-variable lookup.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator

__all__ = ["listening", "note", "unheard"]

_LISTENER: contextvars.ContextVar[Callable[[str], None] | None] = contextvars.ContextVar("workbench_progress",
                                                                                        default=None)


def note(what: str) -> None:
    """Say what is happening now (a short phrase: "compiling k: llir", "running k on the GPU")."""
    listener = _LISTENER.get()
    if listener is not None:
        try:
            listener(what)
        except Exception:  # a display that fails must not fail the work it reports on
            _LISTENER.set(None)


@contextlib.contextmanager
def listening(listener: Callable[[str], None]) -> Iterator[None]:
    token = _LISTENER.set(listener)
    try:
        yield
    finally:
        _LISTENER.reset(token)


def unheard() -> None:
    """Nobody hears the notes from here on in this context (a forked compile child: the listener draws through the
    notebook's sockets, which belong to the parent)."""
    _LISTENER.set(None)
