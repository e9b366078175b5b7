"""Losing a worker on purpose: a thread that kills the first process of this process's own Ray cluster whose command
line names a Ray task or actor method (Ray titles its workers ``ray::NAME``), as an OOM killer would."""

from __future__ import annotations

import threading
import time


def kill_first(title: str, timeout_s: float = 120.0) -> tuple[threading.Thread, list[int]]:
    """Start watching for a process titled ``title`` (e.g. ``ray::_compile_remote``) and kill it; returns the
    started thread and the list it puts the killed pid in."""
    import psutil

    killed: list[int] = []

    def watch() -> None:
        deadline = time.time() + timeout_s
        while not killed and time.time() < deadline:
            for p in psutil.Process().children(recursive=True):  # this process's own cluster only
                try:
                    if title in " ".join(p.cmdline()):
                        p.kill()
                        killed.append(p.pid)
                        return
                except psutil.Error:
                    continue
            time.sleep(0.01)

    t = threading.Thread(target=watch, daemon=True)
    t.start()
    return t, killed
