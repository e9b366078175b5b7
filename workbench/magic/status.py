"""The ``%%tlx`` cell's status line: one line under the cell that says what it is doing (compiling which stage,
running on the GPU, checking, timing), shown once the cell has been busy for ``SHOW_AFTER_S`` and updated in
place. When the cell is done the line becomes its first output (:func:`show`: the Report, in the same place,
so no empty output is left behind); when the cell fails it says what the cell was doing when it stopped. A
terminal gets nothing (its output is the cell's own)."""

from __future__ import annotations

import contextlib
import html
import time
from collections.abc import Iterator
from typing import Any

from workbench.compile import progress

__all__ = ["show", "status_line"]

SHOW_AFTER_S = 0.5
EVERY_S = 0.2


class _Line:
    def __init__(self) -> None:
        self.t0 = time.perf_counter()
        self.handle: Any = None
        self.last = 0.0
        self.text = ""
        self.taken = False

    def __call__(self, what: str) -> None:
        now = time.perf_counter()
        self.text = what
        if self.taken or now - self.t0 < SHOW_AFTER_S or now - self.last < EVERY_S:  # taken: the Report is there
            return
        self.last = now
        from IPython.display import HTML, display

        body = HTML(f'<code class="tlx-status-line">%%tlx [{now - self.t0:.0f} s] {html.escape(what)}...</code>')
        if self.handle is None:
            self.handle = display(body, display_id=True)
        else:
            self.handle.update(body)

    def take(self, obj: Any) -> bool:
        """Show ``obj`` in the line's place (once); False when no line is shown."""
        if self.handle is None or self.taken:
            return False
        self.handle.update(obj)
        self.taken = True
        return True

    def close(self, failed: bool) -> None:
        """The cell is done: a line nothing took says where a failed cell stopped, or is emptied."""
        if self.handle is None or self.taken:
            return
        from IPython.display import HTML

        said = (f'<code class="tlx-status-line">%%tlx stopped after {time.perf_counter() - self.t0:.0f} s while '
                f"{html.escape(self.text)} (the error is below)</code>") if failed and self.text else ""
        self.handle.update(HTML(said))


def _in_notebook(shell: Any) -> bool:
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


_CURRENT: list[_Line] = []  # the line of the cell running now (a cell runs on the kernel's one thread)


def show(obj: Any) -> None:
    """Display ``obj`` as the cell's output: in the status line's place when one is shown (the first object
    only), else as a new output."""
    if not (_CURRENT and _CURRENT[-1].take(obj)):
        from IPython.display import display

        display(obj)


@contextlib.contextmanager
def status_line(shell: Any) -> Iterator[None]:
    """Inside the block, ``progress.note`` updates the cell's status line (in a notebook), and :func:`show`
    puts the first output in its place."""
    if not _in_notebook(shell):
        yield
        return
    line = _Line()
    _CURRENT.append(line)
    failed = True
    try:
        with progress.listening(line):
            yield
        failed = False
    finally:
        _CURRENT.pop()
        line.close(failed)
