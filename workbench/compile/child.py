"""A compile first run in a forked child process: an abort in Triton's or uTLX's C++ (an ``LLVM ERROR``, a failed
assertion, a segmentation fault) then costs that compile, not the notebook's kernel.

The child inherits everything imported and set up (Triton, uTLX, the stages hooks) and fills Triton's on-disk
cache; the compile that follows in this process loads what the child wrote. ``TLX_WORKBENCH_COMPILE_IN_CHILD=0``
(or a platform without ``fork``) compiles in the process only.
"""

from __future__ import annotations

import faulthandler
import io
import os
import select
import signal
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass

from workbench.compile import progress

#: a child still compiling after this long is ended and the compile runs in the process (the behaviour without
#: a child): a fork that deadlocked on a lock another thread held must not cost more than this
TIMEOUT_S = 180.0

_IN_CHILD = False
_OFF = False


@dataclass
class ChildResult:
    """``state``: ``ok`` (the child compiled; ``output`` is what ``work`` returned), ``raised`` (a Python
    exception: compile in the process to get it with its diagnostics), ``died`` (killed by a signal; ``output``
    is what it wrote to stderr, ``signal`` its name), ``skipped`` (no child: disabled, no fork, or already in one),
    ``timeout``."""

    state: str
    output: str = ""
    signal: str | None = None


def in_child() -> bool:
    """Whether this process is such a child (whose stderr is already the parent's to read)."""
    return _IN_CHILD


def off() -> None:
    """No compile child in this process: a worker that is itself the isolation (a Ray compile task: a crash costs
    that candidate, which the search reports) and whose threads a fork should not copy."""
    global _OFF
    _OFF = True


def enabled() -> bool:
    return (hasattr(os, "fork") and not (_IN_CHILD or _OFF)
            and os.environ.get("TLX_WORKBENCH_COMPILE_IN_CHILD", "1") != "0")


def run(work: Callable[[], str], timeout_s: float = TIMEOUT_S) -> ChildResult:
    """Run ``work`` (returns text) in a forked child and say how it ended."""
    if not enabled():
        return ChildResult("skipped")
    err = tempfile.TemporaryFile()
    r, w = os.pipe()
    with warnings.catch_warnings():  # Python 3.12 warns about fork in a process with threads: the child only compiles
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:
        _child(work, r, w, err)
    os.close(w)
    try:
        data, finished = _read_all(r, time.monotonic() + timeout_s)
    finally:
        os.close(r)
    if not finished:
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    if not finished:
        return ChildResult("timeout")
    if os.WIFSIGNALED(status):
        err.seek(0)
        text = err.read().decode(errors="replace")
        return ChildResult("died", text[-4000:], _signal_name(os.WTERMSIG(status)))
    return ChildResult("ok", data.decode(errors="replace")) if os.WEXITSTATUS(status) == 0 else ChildResult("raised")


def _signal_name(sig: int) -> str:
    try:
        return signal.Signals(sig).name
    except ValueError:
        return f"signal {sig}"


def _child(work: Callable[[], str], r: int, w: int, err) -> None:
    """In the child: stderr (fd 2, where C++ writes before it aborts) to the parent's file, Python's own streams
    to nowhere (a notebook's streams talk to its front end), then ``work``; never returns."""
    global _IN_CHILD
    code = 1
    try:
        _IN_CHILD = True
        faulthandler.disable()  # its dump of an abort goes to the notebook's log, not to the parent
        progress.unheard()  # the status line is drawn through the notebook's sockets: never from a fork
        os.close(r)
        os.dup2(err.fileno(), 2)
        sys.stdout = sys.stderr = io.StringIO()
        out = work().encode()
        view = memoryview(out)
        while view:
            view = view[os.write(w, view):]
        code = 0
    except BaseException:  # noqa: BLE001 - the parent compiles again in its own process to report it
        code = 1
    finally:
        os._exit(code)


def _read_all(fd: int, deadline: float) -> tuple[bytes, bool]:
    chunks = []
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return b"".join(chunks), False
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            return b"".join(chunks), True
        chunks.append(chunk)
