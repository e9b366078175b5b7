"""The ``%%tlx`` cell's status line: one line under the cell that says what it is doing (compiling which stage,
running on the GPU, checking, timing), shown once the cell has been busy for ``SHOW_AFTER_S``, updated in
place, and emptied when the cell is done. A terminal gets nothing (its output is the cell's own)."""

from __future__ import annotations

import contextlib
import html
import time
from collections.abc import Iterator
from typing import Any

from workbench.compile import progress

__all__ = ["status_line"]

SHOW_AFTER_S = 0.5
EVERY_S = 0.2


class _Line:
    def __init__(self) -> None:
        self.t0 = time.perf_counter()
        self.handle: Any = None
        self.last = 0.0
        self.text = ""

    def __call__(self, what: str) -> None:
        now = time.perf_counter()
        self.text = what
        if now - self.t0 < SHOW_AFTER_S or now - self.last < EVERY_S:
            return
        self.last = now
        from IPython.display import HTML, display

        body = HTML(f'<code class="tlx-status-line">%%tlx [{now - self.t0:.0f} s] {html.escape(what)}...</code>')
        if self.handle is None:
            self.handle = display(body, display_id=True)
        else:
            self.handle.update(body)

    def clear(self) -> None:
        if self.handle is not None:
            from IPython.display import HTML

            self.handle.update(HTML(""))


def _in_notebook(shell: Any) -> bool:
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


@contextlib.contextmanager
def status_line(shell: Any) -> Iterator[None]:
    """Inside the block, ``progress.note`` updates the cell's status line (in a notebook)."""
    if not _in_notebook(shell):
        yield
        return
    line = _Line()
    try:
        with progress.listening(line):
            yield
    finally:
        line.clear()
