"""The worker process: runs kernel launches in its own CUDA context, away from the notebook's.

    python -m workbench.run.worker SOCKET_PATH

It connects to the notebook over a Unix socket (``watchdog.Worker`` listens), says hello, then
serves requests until the socket closes:

- ``("launch", request)``: rebuild the arguments (``protocol.Decoder``), load the kernel (Triton's
  own ``CompiledKernel`` over the files of Triton's cache, kept per hash), launch it with Triton's
  launcher, answer ``("started", id, prepare_s)`` (unless the GPU finished within ``QUICK_S``: the
  notebook's run deadline starts at "started"; a short kernel saves the message), wait for the GPU,
  answer ``("done", id, times)``.
  A failure answers ``("error", id, info)``; a failure of the GPU itself (a fault, a device-side
  assert: the CUDA context is lost) also ends the process, and the notebook starts a fresh one.
- ``("launch", request)`` with ``request["interpret"]``: a plain Triton kernel for Triton's CPU interpreter
  (``handle_interpret``): the kernel and its grid as ``workbench.compile.portable`` bytes, the tensors as
  copies. Answers ``("started", ...)``, then ``("done", id, times, {"storages": ...})`` or an error, both with
  the bytes of every storage the kernel changed (the notebook writes them into its tensors). The
  interpreter's error travels pickled when it is a ``WorkbenchError`` (an out-of-bounds access at its line),
  else as its text and the kernel's line it came from.
- ``("launch", request)`` with ``request["snapshot"]`` (``{"warps_per_cta": n}``): a snapshot build
  (``compile.snapshot``) pointed at this process's pinned buffer (``run.snapshot``); while the launch runs, the
  worker answers ``("snapshot", id, groups)`` every ``snapshot.EVERY_S`` (the watchdog keeps the last).
- ``("drop", tokens)``: forget storages the notebook has freed.
- ``("ping",)``: answer ``("pong", info)``.

The watchdog is on the notebook's side: a launch that does not answer "done" in time is a hang, and
the notebook kills this process (which frees the GPU). ``faulthandler`` writes the Python stack into the
process's log when it crashes (SIGSEGV, SIGABRT) and when the notebook asks (SIGUSR1, before killing a hung
one): the line of the user's kernel it was at.
"""

from __future__ import annotations

import faulthandler
import importlib
import os
import pickle
import signal
import socket
import sys
import time
import traceback
from multiprocessing.connection import Connection
from types import SimpleNamespace
from typing import Any

from workbench.run.protocol import Decoder, KernelRef

QUICK_S = 0.002  # a kernel done within this of its launch call skips the "started" answer

_FATAL_WORDS = ("CUDA error", "device-side assert", "illegal memory access", "unspecified launch failure",
                "illegal instruction", "misaligned address", "an illegal", "CUDA_ERROR")


def is_fatal(exc: BaseException) -> bool:
    """Whether an error says the CUDA context is lost (a fault: the process must end), by its words."""
    text = f"{type(exc).__name__}: {exc}"
    return any(w in text for w in _FATAL_WORDS)


class Runner:
    """Kernel loading and launching; one per worker process."""

    def __init__(self) -> None:
        self.cuda = False
        self.kernels: dict[str, Any] = {}
        self.decoder = Decoder("cpu")
        self.snapshots: Any = None  # run.snapshot.Buffer, made on the first --snapshot launch

    def warm(self) -> dict[str, Any]:
        info: dict[str, Any] = {"pid": os.getpid(), "python": sys.version.split()[0]}
        import torch

        info["torch"] = torch.__version__
        if os.environ.get("TLX_WORKBENCH_WORKER_CPU") != "1" and torch.cuda.is_available():
            torch.cuda.init()
            torch.empty(1, device="cuda")  # the context, now rather than at the first launch
            self.cuda = True
            self.decoder = Decoder("cuda")
            info["device"] = torch.cuda.get_device_name()
            import triton
            from triton.runtime import driver

            driver.active.get_current_device()  # builds/loads Triton's launcher utilities once
            triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
        else:  # a worker without a GPU runs Triton's interpreter: its imports now, not in the first run's time
            import workbench.compile.portable  # noqa: F401
            import workbench.run.interpreter  # noqa: F401
        return info

    def kernel(self, ref: KernelRef) -> Any:
        k = self.kernels.get(ref.key)
        if k is not None:
            return k
        if ref.kind == "callable":
            module, _, name = ref.key.partition(":")
            k = getattr(importlib.import_module(module), name)
        elif ref.kind == "triton":
            from triton.compiler.compiler import CompiledKernel

            # What the launcher reads from the source object: the signature and the parameter names.
            src = SimpleNamespace(signature=dict(ref.signature), constants={},
                                  fn=SimpleNamespace(arg_names=list(ref.arg_names), launch_metadata=None))
            k = CompiledKernel(src, dict(ref.files), ref.key)
        else:
            raise ValueError(f"unknown kernel kind {ref.kind!r}")
        self.kernels[ref.key] = k
        return k

    def launch(self, ref: KernelRef, kernel: Any, grid: tuple[int, ...], args: list[Any]) -> None:
        if ref.kind == "callable":
            kernel(grid, *args)
            return
        g = tuple(grid) + (1,) * (3 - len(grid))
        kernel[g](*args)

    def finished_within(self, seconds: float) -> bool:
        """Has the GPU finished everything queued, within ``seconds`` of polling? (Raises if the context failed.)"""
        if not self.cuda:
            return True
        import torch

        stream = torch.cuda.current_stream()
        end = time.perf_counter() + seconds
        while not stream.query():
            if time.perf_counter() > end:
                return False
        return True

    def synchronize(self) -> None:
        if self.cuda:
            import torch

            torch.cuda.synchronize()


def serve(conn: Connection, runner: Runner) -> None:
    while True:
        try:
            msg = conn.recv()
        except (EOFError, OSError):
            return
        op = msg[0]
        if op == "launch":
            if not handle_launch(conn, runner, msg[1]):
                return
        elif op == "drop":
            runner.decoder.drop(msg[1])
        elif op == "ping":
            conn.send(("pong", {"pid": os.getpid(), "kernels": len(runner.kernels),
                                "storages": len(runner.decoder.storages)}))
        elif op == "exit":
            return


def _error(conn: Connection, rid: int, phase: str, exc: BaseException, fatal: bool, **extra: Any) -> None:
    tb = traceback.format_exception(type(exc), exc, exc.__traceback__)
    conn.send(("error", rid, {"phase": phase, "type": type(exc).__name__, "message": str(exc)[:4000],
                              "fatal": fatal, "traceback": "".join(tb)[-4000:], **extra}))


def handle_launch(conn: Connection, runner: Runner, req: dict[str, Any]) -> bool:
    """One launch; False when this process must end (its CUDA context is lost, or the request said so)."""
    if req.get("interpret"):
        return handle_interpret(conn, req)
    rid = req["id"]
    t0 = time.perf_counter()
    try:
        if runner.cuda and req.get("device") is not None:
            import torch

            torch.cuda.set_device(req["device"])
        runner.decoder.drop(req.get("drop", []))
        runner.decoder.add(req.get("storages", {}))
        ref: KernelRef = req["kernel"]
        kernel = runner.kernel(ref)
        args = [runner.decoder.decode(a) for a in req["args"]]
        snap = req.get("snapshot")
        if snap:
            snap = _point_snapshot(runner, kernel, snap)
    except Exception as e:
        _error(conn, rid, "prepare", e, is_fatal(e))
        return not is_fatal(e)
    t1 = time.perf_counter()
    try:
        if ref.kind == "callable":  # runs synchronously: its whole call is the kernel's time
            conn.send(("started", rid, t1 - t0))
        runner.launch(ref, kernel, tuple(req["grid"]), args)
    except Exception as e:
        fatal = is_fatal(e)
        _error(conn, rid, "run" if ref.kind == "callable" else "launch", e, fatal)
        return not fatal
    t2 = time.perf_counter()
    if ref.kind != "callable":
        try:
            quick = runner.finished_within(QUICK_S)
        except Exception:  # a failed context: the synchronize below reports it
            quick = False
        if not quick:  # a short kernel answers "done" only: one message less per launch
            conn.send(("started", rid, t1 - t0))
    try:
        if snap:
            _send_snapshots(conn, rid, runner, snap)
        runner.synchronize()
    except Exception as e:  # a fault: this context is lost
        _error(conn, rid, "run", e, True)
        return False
    t3 = time.perf_counter()
    del args
    conn.send(("done", rid, {"prepare_s": t1 - t0, "launch_s": t2 - t1, "run_s": t3 - t1}))
    return not req.get("exit_after", False)


def _point_snapshot(runner: Runner, kernel: Any, snap: dict[str, Any]) -> dict[str, Any]:
    from workbench.compile.triton_reach import module_handle
    from workbench.run.snapshot import Buffer

    if runner.snapshots is None:
        runner.snapshots = Buffer()
    runner.snapshots.point(module_handle(kernel))
    return snap


def _send_snapshots(conn: Connection, rid: int, runner: Runner, snap: dict[str, Any]) -> None:
    """While the launch runs: where its warps wait, every ``EVERY_S``."""
    from workbench.run.snapshot import EVERY_S

    while not runner.finished_within(EVERY_S):
        conn.send(("snapshot", rid, runner.snapshots.read(int(snap.get("warps_per_cta") or 4))))


def handle_interpret(conn: Connection, req: dict[str, Any]) -> bool:
    """One kernel run by Triton's interpreter (``workbench.run.interpreter``: every access bounds-checked) on
    copies of the notebook's tensors; what it wrote goes back, after an error too (as in the notebook's process,
    the programs before the failing one have written)."""
    from workbench.compile import portable
    from workbench.run.interpreter import interpret

    rid, t0 = req["id"], time.perf_counter()
    decoder = Decoder("cpu")
    sys.path.extend(p for p in req.get("sys_path", []) if p not in sys.path)  # the notebook's imports, kernels'
    try:
        decoder.add(req["storages"])
        kernel, grid = portable.loads(req["kernel"])
        args = tuple(decoder.decode(a) for a in req["args"])
        kwargs = {k: decoder.decode(v) for k, v in req["kwargs"].items()}
    except Exception as e:
        _error(conn, rid, "prepare", e, False)
        return True
    t1 = time.perf_counter()
    conn.send(("started", rid, t1 - t0))
    try:
        interpret(kernel, args, kwargs, grid)
    except Exception as e:
        _error(conn, rid, "run", e, False, storages=_changed(req["storages"], decoder), **_portable_error(e, kernel))
        return True
    times = {"prepare_s": t1 - t0, "launch_s": 0.0, "run_s": time.perf_counter() - t1}
    conn.send(("done", rid, times, {"storages": _changed(req["storages"], decoder)}))
    return True


def _changed(sent: dict[int, Any], decoder: Decoder) -> dict[int, bytes]:
    """The bytes of each storage the kernel changed, by token."""
    out = {}
    for token, (_, nbytes, data) in sent.items():
        now = decoder.storages[token].numpy().tobytes() if nbytes else b""
        if now != data:
            out[token] = now
    return out


def _portable_error(exc: BaseException, kernel: Any) -> dict[str, Any]:
    """The interpreter's error for the notebook: itself when it is a ``WorkbenchError`` that pickles, else the
    innermost line of the kernel's file it came through (Triton's ``InterpreterError`` wraps the kernel's own)."""
    from workbench.compile.tuners import base_jit
    from workbench.errors import WorkbenchError

    if isinstance(exc, WorkbenchError):
        try:
            return {"exception": pickle.dumps(exc)}
        except Exception:
            pass
    filename = base_jit(kernel).fn.__code__.co_filename
    line, seen, e = None, set(), exc
    while e is not None and id(e) not in seen:  # outermost first: the cause's frames are deeper
        seen.add(id(e))
        tb = e.__traceback__
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == filename:
                line = tb.tb_lineno
            tb = tb.tb_next
        e = e.__cause__ or e.__context__
    inner = exc.__cause__ or exc
    return {"kernel_file": filename, "kernel_line": line, "cause": f"{type(inner).__name__}: {inner}"[:4000]}


def connect(path: str) -> Connection:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    return Connection(s.detach())


def main(argv: list[str]) -> int:
    faulthandler.enable()  # a crash writes the Python stack into the log (stderr)
    faulthandler.register(signal.SIGUSR1, all_threads=False)  # the notebook asks where a hung run is
    conn = connect(argv[0])
    runner = Runner()
    try:
        info = runner.warm()
    except Exception as e:
        conn.send(("hello", {"pid": os.getpid(), "error": f"{type(e).__name__}: {e}"}))
        return 2
    conn.send(("hello", info))
    serve(conn, runner)
    conn.close()
    if os.environ.get("TLX_WORKBENCH_WORKER_EXIT") == "fast":
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)  # the notebook has every answer; a lost CUDA context needs no orderly teardown
    return 0  # an orderly exit: a sanitizer wrapping this process reports when it ends


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
