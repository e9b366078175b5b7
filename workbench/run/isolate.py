"""Isolated launches: a ``%%tlx`` cell's GPU launches run in one persistent worker process.

The notebook keeps its tensors; the worker gets them by CUDA IPC (``protocol``, mode "ipc") and
writes them in place. The kernel travels as Triton's compiled files (``protocol.kernel_ref`` of the
``CompiledKernel`` that ``JITFunction.run(warmup=True)`` returns: the very kernel the JIT would
launch, found in Triton's cache), and the worker launches it with Triton's own launcher. Each launch
waits for the GPU in the worker (``watchdog``): a hang or a fault becomes a ``KernelHangError`` or
``KernelFaultError`` on the cell, the worker is replaced, and the notebook's kernel lives on.

The worker is started once per notebook kernel (``prestart`` at ``%load_ext workbench``) and kept
warm. Before a launch the notebook synchronises its own device (inputs it just wrote must be there);
after it, the worker has synchronised, so outputs are visible to the notebook. A second kind of worker,
without a CUDA context, runs Triton's CPU interpreter (``interpreter_isolated``).
"""

from __future__ import annotations

import atexit
from typing import Any

from workbench.check import check_artifact
from workbench.compile import progress
from workbench.errors import WorkbenchError
from workbench.run.launch_record import tensors_in
from workbench.run.protocol import Encoder, UnsendableArgument, kernel_ref
from workbench.run.watchdog import Outcome, Worker, WorkerError

__all__ = ["KernelFaultError", "KernelHangError", "default_timeout", "failure_error", "finding_lines", "launch",
           "prestart", "shared_worker"]

BASE_TIMEOUT_S = 5.0  # a launch may take this long beyond 4x its last measured time
SETUP_S = 120.0  # a cold worker: importing torch, creating its CUDA context

_WORKERS: dict[str, Worker] = {}  # kind -> the notebook's worker of that kind
_ENCODER: Encoder | None = None
_ENCODER_FOR = -1  # the worker start the encoder's storages were sent to
_EXPECTED_S: dict[str, float] = {}  # kernel key -> longest completed run in this session
_COMPLETED: set[str] = set()  # kernel keys that completed in a worker in this session


class KernelHangError(WorkbenchError):
    """A kernel did not finish within its time limit; its worker process was stopped and replaced.
    ``captured_key``: the artifact key of the launch capture's kernel that hung (its Report is shown);
    ``findings``: the static checks' findings the message names (the Report shows them, not computed again)."""

    captured_key: str | None = None
    findings: list | None = None


class KernelFaultError(WorkbenchError):
    """A kernel failed on the GPU (or its worker died); the worker process was replaced.
    ``captured_key``, ``findings``: as ``KernelHangError``'s."""

    captured_key: str | None = None
    findings: list | None = None


def shared_worker(kind: str = "gpu") -> Worker:
    """The notebook's persistent worker of a kind (started on first use, and again whenever it has died):
    "gpu" launches compiled kernels; "interpreter" runs Triton's CPU interpreter (no CUDA context)."""
    worker = _WORKERS.get(kind)
    if worker is None:
        if not _WORKERS:
            atexit.register(_shutdown)
        env = {"TLX_WORKBENCH_WORKER_EXIT": "fast"}
        if kind == "interpreter":
            env["TLX_WORKBENCH_WORKER_CPU"] = "1"
        elif kind != "gpu":
            raise ValueError(f"no worker kind {kind!r}")
        worker = _WORKERS[kind] = Worker(name="worker" if kind == "gpu" else kind, env=env)
    if not worker.alive:
        worker.start()
    return worker


def _encoder(worker: Worker) -> Encoder:
    """The IPC encoder of this worker process: a new process holds none of the storages sent before."""
    global _ENCODER, _ENCODER_FOR
    if _ENCODER is None or _ENCODER_FOR != worker.starts:
        _ENCODER, _ENCODER_FOR = Encoder("ipc"), worker.starts
    return _ENCODER


def prestart() -> None:
    """Start the worker in the background if there is a GPU (``%load_ext workbench`` calls this)."""
    from workbench.run.device import detect

    if detect().available:
        shared_worker()


def _shutdown() -> None:
    for worker in _WORKERS.values():
        worker.close()


def default_timeout(key: str | None) -> float:
    """The time limit of a launch: 5 s beyond 4x the longest time this kernel took before (5 s at first)."""
    return BASE_TIMEOUT_S + 4.0 * _EXPECTED_S.get(key or "", 0.0)


def completed(key: str) -> bool:
    """Did this kernel complete in a worker before (so an in-process launch, for timing, is not its first)?"""
    return key in _COMPLETED


def _device_index(values: list[Any]) -> int | None:
    """The GPU the launch's tensors live on (the worker launches there), else the current one."""
    for v in values:
        for t in tensors_in(v):
            if t.device.type == "cuda":
                return t.device.index
    import torch

    return torch.cuda.current_device() if torch.cuda.is_available() else None


def _synchronize() -> None:
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


def launch(compiled: Any, arg_names: list[str], constexpr: list[bool], values: list[Any],
           grid: tuple[int, ...], *, key: str, timeout_s: float | None = None,
           snapshot: dict[str, Any] | None = None) -> Outcome:
    """One launch of ``compiled`` in the shared worker; raises ``UnsendableArgument`` before sending.
    ``snapshot`` (``{"warps_per_cta": n}``, a snapshot build): the worker reports where the warps wait."""
    ref = kernel_ref(compiled, arg_names)
    limit = timeout_s if timeout_s is not None else default_timeout(key)
    progress.note(f"running {ref.name} on the GPU (isolated worker)")
    worker = shared_worker()
    for _ in range(2):
        try:
            worker.ready(SETUP_S)
        except WorkerError as e:
            worker.stop()
            return Outcome("error", str(e), "setup", timeout_s=limit)
        encoder = _encoder(worker)
        encoder.collect()
        args = encoder.encode(values, constexpr)
        storages, drop = encoder.take()
        _synchronize()
        starts = worker.starts
        request = {"kernel": ref, "grid": tuple(grid), "args": args, "storages": storages, "drop": drop,
                   "device": _device_index(values), "snapshot": snapshot}
        out = worker.launch(request, timeout_s=limit, setup_s=SETUP_S)
        if not (worker.starts != starts and out.status == "error" and out.phase == "prepare"):
            break  # else: the process was replaced before it read the request; send everything again
    if out.ok and out.run_s is not None:
        _EXPECTED_S[key] = max(_EXPECTED_S.get(key, 0.0), out.run_s)
        _COMPLETED.add(key)
    return out


def record(out: Outcome) -> dict[str, Any]:
    """The run record's ``isolation`` entry: where it ran and what isolation cost."""
    ms = lambda s: None if s is None else round(s * 1e3, 4)  # noqa: E731
    return {"mode": "worker", "status": out.status, "worker_pid": out.worker_pid, "timeout_s": out.timeout_s,
            "total_ms": ms(out.total_s), "kernel_ms": ms(out.run_s), "overhead_ms": ms(out.overhead_s),
            "prepare_ms": ms(out.prepare_s), "restarted": out.restarted}


# ---------------------------------------------------------------------- errors on the cell
_WAIT_WORDS = ("wait", "barrier", "phase", "arrive", "expect", "deadlock")


def static_findings(artifact: Any, kernel: Any, grid: tuple[int, ...] | None = None,
                    **scalars: Any) -> list[dict[str, Any]]:
    """``workbench.check``'s findings on the artifact (the launch's ``grid`` and ``scalars`` drive its simulation
    where known), to name on a launch that hung or failed (a failure of the checks themselves is one
    ``checks-failed`` info finding: ``check_artifact`` does not raise)."""
    return [f.to_dict() for f in check_artifact(artifact, kernel, grid=grid, **scalars)]


def captured_findings(entry: Any) -> list[dict[str, Any]]:
    """``static_findings`` of a captured launch (``run.capture.Captured``) with its grid and scalar arguments: what
    its Report's checks say (``magic.sections.findings`` adds the sanitizer's)."""
    return static_findings(entry.artifact, entry.kernel, entry.grid, **entry.scalars)


def finding_lines(findings: list[dict[str, Any]], words: tuple[str, ...] = ()) -> list[str]:
    chosen = [f for f in findings if f.get("severity") == "error" or
              (words and any(w in f"{f.get('rule', '')} {f.get('message', '')}".lower() for w in words))]
    return [f"line {f.get('line')}: [{f.get('rule')}] {f.get('message')}" for f in chosen[:6]]


def failure_error(out: Outcome, *, name: str, grid: tuple[int, ...] | None, findings: list[dict[str, Any]],
                  timeline: bool = False, sanitizer: list[dict[str, Any]] | None = None,
                  snapshot: list[str] | None = None) -> KernelHangError | KernelFaultError:
    """The cell's error for a launch that hung or failed in the worker."""
    g = f" (grid {tuple(grid)})" if grid else ""
    after = ("the worker process was stopped and a fresh one started" if out.restarted
             else "the worker process was stopped")
    if out.status == "timeout" and out.phase == "run":
        msg = (f"{name}{g} did not finish within {out.timeout_s:.3g} s: {after}. The notebook's kernel and "
               f"tensors are intact; this launch's outputs may be partly written.")
        cls, lines = KernelHangError, finding_lines(findings, _WAIT_WORDS)
        hint = ("the static checks above name waits that nothing completes; if the kernel is only slow, "
                "raise the limit with --timeout S" + ("" if snapshot else "; --snapshot shows where each role's "
                                                      "warps wait"))
        head = "waits that cannot complete (static checks):"
    elif out.status == "error" and out.phase in ("setup", "prepare", "launch"):
        msg = f"{name}{g} could not be launched ({out.phase}): {out.message}"
        cls, lines, head = KernelFaultError, [], ""
        hint = "Triton's launcher refused it (the kernel was not run); the same happens in the notebook's process"
    else:
        what = out.message or "the worker process ended"
        msg = (f"{name}{g} failed on the GPU: {what}. {after[0].upper()}{after[1:]}; the notebook's kernel and "
               f"tensors are intact, this launch's outputs may be partly written.")
        cls, lines = KernelFaultError, finding_lines(findings)
        hint = "run again with --sanitize memcheck to find the line of a bad memory access"
        head = "static checks:"
    extra = []
    if snapshot:
        when = out.info.get("snapshot_s")
        extra += [f"where the warps wait (live snapshot{f', {when:.3g} s into the run' if when else ''}):",
                  *("  " + ln for ln in snapshot)]
    if lines:
        extra += [head, *("  " + ln for ln in lines)]
    for f in (sanitizer or [])[:6]:
        extra.append(f"sanitizer, line {f.get('line')}: {f.get('message')}")
    if timeline:
        extra.append("--timeline: no per-role timeline for a launch that did not complete (Proton reads its "
                     "buffer after the kernel ends)")
    text = msg + ("\n" + "\n".join(extra) if extra else "")
    return cls(text, hint=hint)


def unsendable(exc: UnsendableArgument) -> str:
    return f"launched in the notebook's process, not isolated: {exc}"
