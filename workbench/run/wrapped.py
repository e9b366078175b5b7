"""One launch of a compiled kernel in a fresh worker process started under a tool (compute-sanitizer, ncu).

The tool wraps the worker's command line (``prefix``); the launch runs on copies of the arguments (each
tensor its own allocation: ``PYTORCH_NO_CUDA_MEMORY_CACHING=1``), the worker exits after it, in order, so
that the tool writes its report. Nothing is written back to the notebook. ``--sanitize`` and ``--stalls``
both launch through here.
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from typing import Any

from workbench.run.protocol import Encoder, kernel_ref
from workbench.run.watchdog import Worker

__all__ = ["Wrapped", "launch_wrapped"]


@dataclass
class Wrapped:
    """What the wrapped launch gave: the worker's outcome and the tail of its output (the tool's too,
    where the tool prints to the process's streams)."""

    outcome: Any
    program: str


def launch_wrapped(prefix: list[str], name: str, compiled: Any, arg_names: list[str], constexpr: list[bool],
                   values: list[Any], grid: tuple[int, ...], *, timeout_s: float, setup_s: float,
                   env: dict[str, str] | None = None, exit_wait_s: float = 30.0) -> Wrapped:
    """Launch once under ``prefix`` and wait for the process to end by itself (the tool writes its report
    then); kill it after ``exit_wait_s``. Raises what the worker's start raises."""
    worker = Worker(prefix=prefix, name=name,
                    env={"PYTORCH_NO_CUDA_MEMORY_CACHING": "1", "TLX_WORKBENCH_WORKER_EXIT": "orderly",
                         **(env or {})})
    try:
        enc = Encoder("copy")
        args = enc.encode(values, constexpr)
        storages, _ = enc.take()
        request = {"kernel": kernel_ref(compiled, arg_names), "grid": tuple(grid), "args": args,
                   "storages": storages, "drop": [], "exit_after": True}
        worker.start()
        out = worker.launch(request, timeout_s=timeout_s, setup_s=setup_s, restart=False)
        _wait_exit(worker, exit_wait_s)
        return Wrapped(out, worker.log_tail(200_000))
    finally:
        worker.close()


def _wait_exit(worker: Worker, wait_s: float) -> None:
    if worker.proc is None:
        return
    try:
        worker.proc.wait(wait_s)
    except subprocess.TimeoutExpired:
        worker.stop()
