"""Stand-in jobs for ``workbench.run.jobs`` on a machine without a GPU: each reports, then returns, hangs, raises,
kills its own process, or fails as a lost CUDA context does."""

from __future__ import annotations

import os
import signal
import time

from workbench.run.jobs import report


def rows(items: list[str], then: str = "return") -> dict:
    """Reports ``begin`` and a ``row`` per item, then does ``then``: return, hang, raise, crash or fault."""
    for item in items:
        report("begin", item)
        report("row", {"item": item, "pid": os.getpid()})
    if then == "hang":
        time.sleep(60)
    elif then == "raise":
        raise ValueError("boom")
    elif then == "crash":
        os.kill(os.getpid(), signal.SIGSEGV)
    elif then == "fault":
        raise RuntimeError("CUDA error: an illegal memory access was encountered")
    return {"done": len(items), "pid": os.getpid()}


def each(job: dict) -> None:
    """A job of one item (``workbench.run.jobs.Jobs.each``): the item "hang" hangs before its row, any other
    reports its row, then does ``job["then"]``."""
    [item] = job["items"]
    if item == "hang":
        time.sleep(60)
    rows([item], job["then"])
