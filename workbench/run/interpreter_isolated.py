"""Triton's CPU interpreter in a worker process: a kernel that crashes it cannot take the notebook down.

The interpreter turns loads and stores into raw memory accesses in the process that runs it. Each access is
bounds-checked first (``interpreter_bounds``), so an out-of-bounds one is an error at its line; anything else
that crashes the interpreter (a segfault or an abort in C code) must not cost the user their notebook. So
``%%tlx`` runs it in the notebook's interpreter worker (``isolate.shared_worker("interpreter")``: no CUDA
context), under the watchdog (``worker.handle_interpret`` is the other side):

- the kernel and its grid travel as ``workbench.compile.portable`` bytes (a kernel written in a cell, its
  helpers and the cell's lines; one from a module, by name, found on the notebook's ``sys.path``), the tensors
  as copies (``protocol.Encoder("copy")``); the bytes the kernel
  changed come back and are written into the notebook's tensors, after an error too (the programs before the
  failing one wrote, as they would in the notebook's process);
- the kernel's error comes back as itself when it is a ``WorkbenchError`` (``OutOfBoundsError``, at its line),
  else as ``InterpretedKernelError`` at the kernel's line it came through;
- a crash is ``InterpreterCrashError`` at the line the interpreter was at (``faulthandler``'s stack in the
  worker's log) with the static checks' findings; a run past its limit is ``KernelHangError`` at the line it
  was running. Nothing of that launch is written into the notebook's tensors; the worker is replaced.

A launch that cannot be sent (an argument or a global that does not pickle), or a worker that cannot start,
runs in the notebook's process, as ``--no-isolate`` asks; the run record and a warning say why.
"""

from __future__ import annotations

import contextlib
import linecache
import os
import pickle
import re
import signal
import sys
from typing import Any

from workbench.compile import portable
from workbench.compile.tuners import base_jit
from workbench.errors import WorkbenchError
from workbench.run import isolate
from workbench.run.interpreter import interpret
from workbench.run.protocol import Encoder
from workbench.run.watchdog import LOG_TAIL_CHARS, Outcome

__all__ = ["INTERPRETER_TIMEOUT_S", "InterpretedKernelError", "InterpreterCrashError", "run_interpreted", "warm"]

INTERPRETER_TIMEOUT_S = 300.0  # the interpreter runs one program at a time, in Python: slow, but not this slow


class InterpretedKernelError(WorkbenchError):
    """A kernel run by Triton's interpreter raised an error of its own (a Python error at one of its lines)."""


class InterpreterCrashError(WorkbenchError):
    """Triton's interpreter crashed the worker process that ran a kernel; the notebook is intact."""


def warm() -> None:
    """Start the interpreter worker without waiting for it (a cell that will interpret, before it compiles)."""
    with contextlib.suppress(OSError):
        isolate.shared_worker("interpreter")


def run_interpreted(kernel: Any, args: tuple, kwargs: dict[str, Any], grid: Any, *, name: str, isolated: bool = True,
                    timeout_s: float | None = None, artifact: Any = None) -> tuple[dict[str, Any], str | None]:
    """Run ``kernel`` in Triton's interpreter: in the worker when ``isolated`` (and it can be sent), else here.

    Returns the run record's ``isolation`` entry and, when it ran here although isolation was asked for, why.
    Raises the kernel's error at its line, ``InterpreterCrashError`` or ``KernelHangError``."""
    why = "--no-isolate"
    if isolated:
        try:
            request, storages = _request(kernel, args, kwargs, grid)
        except Exception as e:  # UnsendableArgument, or a value the kernel or grid holds that does not pickle
            why = f"{type(e).__name__}: {e}"
        else:
            limit = timeout_s if timeout_s is not None else INTERPRETER_TIMEOUT_S
            out = isolate.shared_worker("interpreter").launch(request, timeout_s=limit, setup_s=isolate.SETUP_S)
            if not (out.status in ("error", "timeout") and out.phase in ("setup", "prepare")):
                _write_back(storages, out.info.get("storages") or {})
                if not out.ok:
                    raise _failure(out, kernel, name, grid, artifact)
                return dict(isolate.record(out), mode="interpreter-worker"), None
            why = out.message  # the worker, not the kernel, failed
    interpret(kernel, args, kwargs, grid)
    return {"mode": "in-process", "reason": why}, (None if why == "--no-isolate" else why)


def _request(kernel: Any, args: tuple, kwargs: dict[str, Any], grid: Any) -> tuple[dict[str, Any], dict[int, Any]]:
    """The worker's request (``interpret``: kernel and grid by value, tensors as copies) and the notebook's
    storages by the tokens the request names them with."""
    values = [*args, *kwargs.values()]
    enc = Encoder("copy")
    specs = enc.encode(values, [False] * len(values))
    sent, _ = enc.take()
    request = {"interpret": True, "kernel": portable.dumps((kernel, grid)), "args": specs[:len(args)],
               "kwargs": dict(zip(kwargs, specs[len(args):], strict=True)), "storages": sent,
               "sys_path": [os.path.abspath(p) for p in sys.path]}  # a kernel imported by reference is found
    return request, enc.copied


def _write_back(storages: dict[int, Any], changed: dict[int, bytes]) -> None:
    import torch

    for token, data in changed.items():
        dst = torch.empty(0, dtype=torch.uint8, device=storages[token].device).set_(storages[token])
        dst.copy_(torch.frombuffer(bytearray(data), dtype=torch.uint8))


def _failure(out: Outcome, kernel: Any, name: str, grid: Any, artifact: Any) -> WorkbenchError:
    """The cell's error for a run in the worker that did not complete."""
    info = out.info or {}
    if out.status == "error" and info.get("exception"):
        with contextlib.suppress(Exception):
            return pickle.loads(info["exception"])
    filename = base_jit(kernel).fn.__code__.co_filename
    g = f" (grid {tuple(grid)})" if isinstance(grid, tuple | list) else ""
    intact = ("The notebook's kernel and tensors are intact (this launch wrote nothing to them); a fresh worker "
              "was started.")
    if out.status == "error":
        line = info.get("kernel_line")
        msg = f"{name}{g} raised in Triton's interpreter: {info.get('cause') or out.message}"
        hint = ("the kernel's own error, where the interpreter ran that line (programs before it have written their "
                "outputs); --compile-only compiles it without running")
        return _at(InterpretedKernelError, msg, filename, line, hint)
    line = _stack_line(out.log_tail, filename)
    at = " It was at this line." if line else ""
    if out.status == "timeout":
        msg = f"{name}{g} did not finish within {out.timeout_s:.3g} s in Triton's interpreter.{at} {intact}"
        hint = ("the interpreter runs one program at a time, in Python: launch a smaller problem, or raise the limit "
                "with --timeout S; a loop that never ends is at the line shown")
        return _at(isolate.KernelHangError, msg, filename, line, hint)
    msg = f"{name}{g} crashed Triton's interpreter ({_how(out)}).{at} {intact}"
    findings = isolate.finding_lines(isolate.static_findings(artifact, kernel)) if artifact is not None else []
    if findings:
        msg += "\nstatic checks:\n" + "\n".join("  " + ln for ln in findings)
    hint = ("every load and store was inside its tensor, so this is a crash in the interpreter's own code; "
            "--compile-only still compiles the kernel, and on a GPU --sanitize memcheck checks its accesses")
    return _at(InterpreterCrashError, msg, filename, line, hint)


def _at(cls: type[WorkbenchError], msg: str, filename: str, line: int | None, hint: str) -> WorkbenchError:
    if not line:
        return cls(msg, hint=hint)
    return cls(msg, filename=filename, lineno=line, source_line=linecache.getline(filename, line) or None, hint=hint)


def _stack_line(log: str, filename: str) -> int | None:
    """The innermost line of ``filename`` in the last stack dump ``faulthandler`` wrote (most recent call first). A
    fatal error dumps every thread in the interpreter's order, the current one among them, not necessarily last:
    its stack is searched first, then the other threads' of that dump."""
    fatal = log.rfind("Fatal Python error")
    if fatal >= 0:
        dump = log[fatal:]
    else:  # a dump asked for (SIGUSR1, a hang): the last one
        parts = log.rsplit("most recent call first", 1)
        if len(parts) < 2:
            return None
        dump = parts[1]
    cur = dump.find("Current thread 0x")
    current = dump[cur:].split("\nThread 0x", 1)[0] if cur >= 0 else ""
    for text in (current, dump):
        for m in re.finditer(r'File "(.*)", line (\d+)', text):
            if m.group(1) == filename:
                return int(m.group(2))
    return None


def _how(out: Outcome) -> str:
    """How the worker ended: its signal, and what the C library said before it (e.g. glibc's malloc check)."""
    code = (out.info or {}).get("exit_code")
    how = f"exit code {code}"
    if isinstance(code, int) and code < 0:
        with contextlib.suppress(ValueError):
            how = signal.Signals(-code).name
    before = out.log_tail.rsplit("Fatal Python error", 1)
    lines = before[0].rstrip("\n").splitlines() if len(before) == 2 else []
    whole = len(lines) > 1 or len(out.log_tail) < LOG_TAIL_CHARS  # the first line of a cut tail is cut
    said = lines[-1].strip() if lines and whole else ""  # the line just before
    return f"{how}: {said}" if said and len(said) < 200 and not _DUMPED.search(lines[-1]) else how


_DUMPED = re.compile(r'^\s*File "|most recent call first|^Thread 0x|^Current thread|^Extension modules|^<no Python')
