"""Python jobs in the isolated worker: steps of a benchmark (or any GPU work) that a hang or a fault costs alone.

``Jobs`` (the caller's side) keeps one ``watchdog.Worker`` and calls a function ``"module:name"`` in it with
picklable arguments, under a time limit. The worker runs it as a ``callable`` kernel (``worker.handle_launch``):
it answers "started", calls it, waits for the GPU and answers "done". What the function returns, and what it
reports on the way (``report(kind, value)``), comes back through a file of JSON lines (one per report, one for
the answer), so what a job reported before it hung or its process died is kept. A job that misses its limit is
stopped (its process is killed) and one that faults (the CUDA context is lost, even after it returned: the
worker's synchronize finds it) ends its process; the next call starts a fresh one. An ordinary exception keeps
the process.

In the job, ``report("row", {...})`` records a result as soon as it exists and ``report("begin", name)`` names
the item it starts, so that a caller can tell which one hung. Outside a worker, ``report`` does nothing.
"""

from __future__ import annotations

import contextlib
import importlib
import itertools
import json
import os
import queue
import shutil
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import IO, Any, Protocol, TypeVar

from workbench.run.protocol import Encoder, KernelRef
from workbench.run.watchdog import Outcome, Worker

__all__ = ["Answer", "Jobs", "in_parallel", "report"]

SETUP_S = 120.0  # a cold worker: importing torch, creating its CUDA context
_ENTRY = KernelRef("callable", "job", "workbench.run.jobs:run_job")
_REPORTS: list[IO[str]] = []  # the file of the call running in this (worker) process


@dataclass
class Answer:
    """One call of a job: its return value (when it returned), what it reported, how the worker fared."""

    returned: bool
    value: Any
    reports: list[tuple[str, Any]]
    outcome: Outcome
    timeout_s: float
    log_tail: str = field(default="", repr=False)

    @property
    def failure(self) -> str | None:
        """None when the function returned; else why not: it raised, hung, or its process died."""
        if self.returned:
            return None
        out = self.outcome
        if out.status == "timeout" and out.phase == "run":
            return f"hung: no answer within {self.timeout_s:.0f} s (the worker process was killed)"
        if out.status == "ok":
            return "the job returned nothing"
        return f"{out.message} ({out.status}{', ' + out.phase if out.phase else ''})"

    def reported(self, kind: str) -> list[Any]:
        """The values of the job's reports of ``kind``, in order."""
        return [v for k, v in self.reports if k == kind]


def report(kind: str, value: Any) -> None:
    """In a job running in a worker: send ``value`` (JSON) back now, kept even if the job then hangs or dies."""
    if _REPORTS:
        _REPORTS[-1].write(json.dumps([kind, value], default=str) + "\n")
        _REPORTS[-1].flush()


def run_job(grid: Any, target: str, args: tuple[Any, ...], answer_path: str, paths: list[str]) -> None:
    """The worker's side of a call: import ``target`` ("module:name", ``paths`` on ``sys.path``), call it with
    ``args``, write its reports and its answer to ``answer_path``. (``grid``: the callable-kernel convention.)"""
    sys.path[:0] = [p for p in paths if p not in sys.path]
    module, _, name = target.partition(":")
    fn = getattr(importlib.import_module(module), name)
    with open(answer_path, "a") as f:
        _REPORTS.append(f)
        try:
            value = fn(*args)
            f.write(json.dumps(["answer", value], default=str) + "\n")
        finally:
            _REPORTS.pop()


class Jobs:
    """Calls of Python functions in one isolated worker process, one at a time (not thread-safe: one ``Jobs``
    per thread). ``paths``: folders the worker puts on ``sys.path`` to find the functions; ``gpu=False``: a
    worker without a CUDA context."""

    def __init__(self, *, paths: Sequence[str] = (), gpu: bool = True, name: str = "jobs",
                 setup_s: float = SETUP_S) -> None:
        self.paths = [str(p) for p in paths]
        self.setup_s = setup_s
        self.worker = Worker(name=name, env={} if gpu else {"TLX_WORKBENCH_WORKER_CPU": "1"})
        self._dir = tempfile.mkdtemp(prefix="wb-jobs-")
        self._calls = itertools.count(1)

    def call(self, target: str, *args: Any, timeout_s: float) -> Answer:
        """Run ``target(*args)`` in the worker; it may take ``timeout_s`` from its start (the worker's own start,
        up to ``setup_s``, does not count)."""
        path = os.path.join(self._dir, f"call-{next(self._calls)}.jsonl")
        enc = Encoder("copy")
        values = [target, tuple(args), path, self.paths]
        request = {"kernel": _ENTRY, "grid": (1, 1, 1), "args": enc.encode(values, [False] * len(values)),
                   "storages": {}, "drop": []}
        out = self.worker.launch(request, timeout_s=timeout_s, setup_s=self.setup_s)
        reports: list[tuple[str, Any]] = []
        if os.path.exists(path):
            with open(path) as f:
                for line in f:
                    try:
                        kind, value = json.loads(line)
                    except ValueError:  # a line cut short when the process died
                        break
                    reports.append((kind, value))
            os.remove(path)
        answers = [v for k, v in reports if k == "answer"]
        return Answer(bool(answers), answers[0] if answers else None, [r for r in reports if r[0] != "answer"],
                      out, timeout_s, out.log_tail)

    def each(self, target: str, job: dict[str, Any], key: str, *, timeout_s: float,
             failed: Callable[[Any, str], Any]) -> list[Any]:
        """``target(job)`` called once per item of ``job[key]`` (``job[key]`` that item alone), so that an item that
        hangs or crashes costs only itself: the rows (``report("row", ...)``) of every call, and ``failed(item,
        why)`` for an item whose call reported none."""
        rows: list[Any] = []
        for item in job[key]:
            a = self.call(target, {**job, key: [item]}, timeout_s=timeout_s)
            rows += a.reported("row") or [failed(item, a.failure or "it reported no row")]
        return rows

    def close(self) -> None:
        self.worker.close()
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> Jobs:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class _Closing(Protocol):
    def close(self) -> None: ...


W = TypeVar("W", bound=_Closing)
T = TypeVar("T")


def in_parallel(tasks: Iterable[T], threads: int, make: Callable[[], W], work: Callable[[W, T], None]) -> None:
    """``work(w, task)`` for every task, on ``threads`` threads that each take the next task from a common queue,
    with its own ``w = make()`` (e.g. a ``Jobs``: its own worker process), closed at the end."""
    todo: queue.Queue = queue.Queue()
    for task in tasks:
        todo.put(task)

    def drain() -> None:
        with contextlib.closing(make()) as w:
            while True:
                try:
                    task = todo.get_nowait()
                except queue.Empty:
                    return
                work(w, task)

    running = [threading.Thread(target=drain) for _ in range(max(1, threads))]
    for t in running:
        t.start()
    for t in running:
        t.join()
