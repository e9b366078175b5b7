"""The notebook's side of a worker process: start it, give it launches, stop it when one hangs.

``Worker`` starts ``python -m workbench.run.worker`` (optionally under a wrapper such as
compute-sanitizer), listening on a Unix socket in a private temporary folder. ``launch`` sends one
request and waits with two deadlines:

- until the worker answers "started" (the kernel is queued on the GPU): ``setup_s``, generous,
  since a cold worker may still be importing torch or loading the module;
- from "started" until "done": ``timeout_s``, the kernel's own limit. (A kernel that finished within the
  worker's first 2 ms of polling answers "done" without "started": nothing was left to time out.)

A launch that misses its deadline is a hang: the process is killed (killing it frees the GPU: the
driver tears its context down) and a fresh one is started, so the next launch finds a warm worker.
A worker that dies (a fault ended its CUDA context, or the process crashed) is restarted the same way.
The outcome of every launch is an ``Outcome``: what happened, and how long each part took.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

__all__ = ["Outcome", "Worker", "WorkerError"]

_IDS = itertools.count(1)
KILL_WAIT_S = 10.0
DUMP_WAIT_S = 0.5  # for a hung worker's stack dump
LOG_TAIL_CHARS = 4000  # of a worker's log, kept with a failed launch's Outcome


class WorkerError(RuntimeError):
    """The worker could not be started or reached."""


@dataclass
class Outcome:
    status: str  # "ok", "timeout" (a hang), "fault" (the GPU failed; the worker was restarted), "error", "died"
    message: str = ""
    phase: str | None = None  # where a failure happened: "setup", "prepare", "launch", "run"
    worker_pid: int | None = None
    total_s: float = 0.0  # send to answer, as the notebook saw it
    prepare_s: float | None = None  # in the worker: rebuilding arguments, loading the kernel
    launch_s: float | None = None  # in the worker: the launch call
    run_s: float | None = None  # in the worker: launch call until the GPU finished
    timeout_s: float | None = None
    restarted: bool = False
    log_tail: str = ""
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def overhead_s(self) -> float | None:
        """What isolation added: the round trip minus the worker's own launch-and-wait time."""
        if self.run_s is None:
            return None
        return max(0.0, self.total_s - self.run_s)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["overhead_s"] = self.overhead_s
        d["log_tail"] = self.log_tail[-2000:]
        return d


def _descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (Linux /proc), children first found first."""
    parents: dict[int, int] = {}
    for d in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    parents[int(d)] = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        kids = [c for c, pp in parents.items() if pp == p]
        out.extend(kids)
        todo.extend(kids)
    return out


def _package_root() -> str:
    return str(Path(__file__).resolve().parents[2])


class Worker:
    """One worker process and its connection. Not thread-safe: one launch at a time."""

    def __init__(self, *, prefix: list[str] | None = None, env: dict[str, str] | None = None,
                 python: str | None = None, name: str = "worker") -> None:
        self.prefix = list(prefix or [])
        self.env = dict(env or {})
        self.python = python or sys.executable
        self.name = name
        self.proc: subprocess.Popen | None = None
        self.conn: Connection | None = None
        self.info: dict[str, Any] = {}
        self.starts = 0
        self._dir: str | None = None
        self._sock: socket.socket | None = None
        self.log_path: Path | None = None

    # ------------------------------------------------------------------ process
    def start(self) -> None:
        """Start the process (does not wait for it: ``ready`` does)."""
        self.close()
        self._dir = tempfile.mkdtemp(prefix="tlx-wb-")
        path = os.path.join(self._dir, "w.sock")
        self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._sock.bind(path)
        self._sock.listen(1)
        self.log_path = Path(self._dir) / f"{self.name}.log"
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([_package_root()] + [p for p in [env.get("PYTHONPATH")] if p])
        env["PYTHONUNBUFFERED"] = "1"
        env.update(self.env)
        cmd = [*self.prefix, self.python, "-m", "workbench.run.worker", path]
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                         env=env, start_new_session=True)
        self.starts += 1

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def ready(self, setup_s: float = 120.0) -> dict[str, Any]:
        """Wait for the started process to connect and say hello; returns its info."""
        if self.conn is not None:
            return self.info
        if self.proc is None or self._sock is None:
            self.start()
        assert self._sock is not None and self.proc is not None
        deadline = time.perf_counter() + setup_s
        self._sock.settimeout(0.2)
        while True:
            try:
                s, _ = self._sock.accept()
                break
            except TimeoutError:
                if self.proc.poll() is not None:
                    raise WorkerError(f"the {self.name} process exited ({self.proc.returncode}) before it connected:"
                                      f"\n{self.log_tail()}") from None
                if time.perf_counter() > deadline:
                    self.stop()
                    raise WorkerError(f"the {self.name} process did not connect within {setup_s:.0f} s") from None
        s.settimeout(None)
        self.conn = Connection(s.detach())
        if not self.conn.poll(max(0.1, deadline - time.perf_counter())):
            self.stop()
            raise WorkerError(f"the {self.name} process connected but did not say hello within {setup_s:.0f} s")
        kind, info = self.conn.recv()
        if "error" in info:
            raise WorkerError(f"the {self.name} process could not start: {info['error']}\n{self.log_tail()}")
        self.info = info
        return info

    def stop(self, kill: bool = True) -> int | None:
        """End the process (kill by default) and forget the connection; returns its exit code."""
        code = None
        if self.conn is not None:
            with contextlib.suppress(OSError):
                if not kill:
                    self.conn.send(("exit",))
                self.conn.close()
            self.conn = None
        if self.proc is not None:
            if kill and self.proc.poll() is None:
                for pid in [*_descendants(self.proc.pid), self.proc.pid]:  # a sanitizer wrapper and its child
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, 9)
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self.proc.pid, 9)
            try:
                code = self.proc.wait(KILL_WAIT_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                code = self.proc.wait(KILL_WAIT_S)
            self.proc = None
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        return code

    def close(self) -> None:
        self.stop()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def log_tail(self, limit: int = LOG_TAIL_CHARS) -> str:
        try:
            data = self.log_path.read_bytes() if self.log_path else b""
        except OSError:
            return ""
        return data[-limit:].decode(errors="replace")

    # ------------------------------------------------------------------ launching
    def send(self, msg: Any) -> None:
        if self.conn is None:
            raise WorkerError(f"the {self.name} process is not connected")
        self.conn.send(msg)

    def launch(self, request: dict[str, Any], *, timeout_s: float, setup_s: float = 120.0,
               restart: bool = True) -> Outcome:
        """Run one launch request; on a hang or a fault the process is replaced (``restart``)."""
        t0 = time.perf_counter()
        request = dict(request, id=next(_IDS))
        for attempt in (0, 1):
            try:
                self.ready(setup_s)
                self.send(("launch", request))
                break
            except (WorkerError, OSError) as e:
                self.stop()
                if attempt or isinstance(e, WorkerError):  # a stale connection is retried once
                    out = Outcome("error", str(e), "setup", total_s=time.perf_counter() - t0)
                    return self._failed(out, restart)
                self.start()
            except Exception as e:  # the request cannot be pickled (pickling precedes writing: the socket is clean)
                return Outcome("error", f"the launch cannot be sent to the worker: {type(e).__name__}: {e}",
                               "prepare", total_s=time.perf_counter() - t0)
        try:
            out = self._wait(request["id"], t0, timeout_s, setup_s)
        except KeyboardInterrupt:  # the worker is still busy with this launch: replace it, then stop
            self.stop()
            self._failed(Outcome("error", "interrupted"), restart)
            raise
        out.timeout_s = timeout_s
        out.worker_pid = self.info.get("pid")
        if out.status in ("timeout", "fault", "died"):
            if out.status == "timeout" and out.phase == "run":
                self._dump_stack()
            out.log_tail = self.log_tail()
            self.stop()
            return self._failed(out, restart)
        return out

    def _dump_stack(self) -> None:
        """Have a hung worker write where its Python is (``faulthandler`` on SIGUSR1) into its log, before it is
        killed: the line an interpreted kernel loops on. (Not through a wrapper such as a sanitizer: the signal
        would reach the wrapper.)"""
        if self.prefix or not self.alive or self.proc is None:
            return
        size = self.log_path.stat().st_size if self.log_path and self.log_path.exists() else 0
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(self.proc.pid, signal.SIGUSR1)
            end = time.perf_counter() + DUMP_WAIT_S
            while time.perf_counter() < end and self.log_path and self.log_path.stat().st_size == size:
                time.sleep(0.01)
            time.sleep(0.02)  # the rest of the dump

    def _failed(self, out: Outcome, restart: bool) -> Outcome:
        if restart:
            self.start()  # warm again while the notebook reads the error
            out.restarted = True
        return out

    def _wait(self, rid: int, t0: float, timeout_s: float, setup_s: float) -> Outcome:
        assert self.conn is not None
        deadline, started, snapshot = t0 + setup_s, None, None
        while True:
            now = time.perf_counter()
            if now >= deadline:
                phase = "run" if started is not None else "setup"
                limit = timeout_s if started is not None else setup_s
                info = ({"snapshot": snapshot[1], "snapshot_s": round(snapshot[0] - (started or t0), 2)}
                        if snapshot else {})  # the last snapshot and when into the run it was read
                return Outcome("timeout", f"no answer within {limit:.3g} s", phase, total_s=now - t0, info=info)
            try:
                if not self.conn.poll(min(0.25, deadline - now)):
                    if self.proc is not None and self.proc.poll() is not None:
                        return self._died(t0, started)
                    continue
                msg = self.conn.recv()
            except (EOFError, OSError):
                return self._died(t0, started)
            if msg[1] != rid:
                continue  # an answer to an earlier, abandoned request
            if msg[0] == "started":
                started = time.perf_counter()
                deadline = started + timeout_s
            elif msg[0] == "snapshot":  # --snapshot: where the warps wait, while the launch runs
                snapshot = (time.perf_counter(), msg[2])
            elif msg[0] == "done":  # ("done", id, times) or ("done", id, times, info)
                times = msg[2]
                return Outcome("ok", "", None, total_s=time.perf_counter() - t0, prepare_s=times.get("prepare_s"),
                               launch_s=times.get("launch_s"), run_s=times.get("run_s"),
                               info=msg[3] if len(msg) > 3 else {})
            elif msg[0] == "error":
                return self._error(msg[2], t0)

    def _died(self, t0: float, started: float | None) -> Outcome:
        code = None
        if self.proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                code = self.proc.wait(KILL_WAIT_S)
        return Outcome("died", f"the {self.name} process ended (exit code {code})",
                       "run" if started is not None else "prepare", total_s=time.perf_counter() - t0,
                       info={"exit_code": code})

    def _error(self, info: dict[str, Any], t0: float) -> Outcome:
        status = "fault" if info.get("fatal") else "error"
        if status == "fault" and self.proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(KILL_WAIT_S)  # it exits by itself after a fault; let it print what it has
        return Outcome(status, f"{info.get('type')}: {info.get('message')}", info.get("phase"),
                       total_s=time.perf_counter() - t0, info=info)
