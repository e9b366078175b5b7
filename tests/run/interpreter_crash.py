"""A real crash of the interpreter worker while it runs a given kernel, for the tests (no kernel that passes the
bounds checks is known to crash Triton's interpreter, so the signal comes from outside, as a fault in C would)."""

from __future__ import annotations

import os
import signal
import threading
import time


def segfault_when_running(function: str, timeout_s: float = 120.0) -> threading.Thread:
    """In a thread: wait until the interpreter worker's Python stack (``faulthandler`` dumps it on SIGUSR1) is
    inside ``function``, then send that process SIGSEGV. (Start the worker first: this thread must not.)"""
    from workbench.run import isolate

    def watch() -> None:
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            worker = isolate.shared_worker("interpreter")
            if worker.conn is not None and worker.proc is not None and worker.log_path is not None:
                os.kill(worker.proc.pid, signal.SIGUSR1)
                time.sleep(0.1)
                if f" in {function}\n" in worker.log_tail():
                    os.kill(worker.proc.pid, signal.SIGSEGV)
                    return
            time.sleep(0.1)

    t = threading.Thread(target=watch, daemon=True)
    t.start()
    return t
