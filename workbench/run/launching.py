"""A ``%%tlx`` cell's GPU launch: in the isolated worker (default) or in the notebook's process.

``on_gpu`` is what ``Capture.on_launch`` calls for a launch that runs on the GPU:

- isolated (default): the JIT compiles (``JITFunction.run(warmup=True)``: a cache hit after
  ``workbench.compile``) and the worker launches that kernel on the notebook's tensors, under the
  watchdog; a hang or a fault raises ``KernelHangError``/``KernelFaultError`` with the static
  checks' findings. The run record gets ``isolation`` (where it ran, what isolation cost).
- in the notebook's process: with ``--no-isolate``, for arguments that cannot be shared with a
  worker, and for the autotuner's timed launches of a kernel that already completed in the worker
  (timing needs the notebook's own stream; ``--bench`` and ``--timeline`` also time in-process,
  after the cell's launch completed in the worker).

``--sanitize`` adds one sanitized launch per kernel per cell (``sanitize``). Every launch the cell
made is kept as a ``Replay`` (``--check`` runs them again with fresh inputs).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from workbench.compile.snapshot import snapshot_build
from workbench.compile.tuners import base_jit
from workbench.run import isolate
from workbench.run.launch_record import tensors_in
from workbench.run.protocol import UnsendableArgument

__all__ = ["MAX_REPLAYS", "Replay", "launch_grid", "on_gpu"]

MAX_REPLAYS = 64


@dataclass
class Replay:
    """One launch of the cell, ready to run again; ``tensors`` are its tensor arguments (descriptor bases too)."""

    name: str
    again: Callable[[], None]
    tensors: list[Any] = field(default_factory=list)


def launch_values(kernel: Any, bound: dict[str, Any]) -> tuple[list[str], list[bool], list[Any]]:
    """The kernel's parameters in order, which are constexpr, and their values in this launch."""
    base = base_jit(kernel)
    names = list(base.arg_names)
    consts = {p.name for p in base.params if p.is_constexpr}
    return names, [n in consts for n in names], [bound.get(n) for n in names]


def launch_grid(grid: tuple[int, ...], bound: dict[str, Any]) -> tuple[int, int, int]:
    """The grid Triton's launcher takes. With TLX's ``ctas_per_cga=(N, 1, 1)`` the cell's grid counts CTAs;
    uTLX turns that into ``num_ctas=N`` and a grid of clusters (its ``JITFunction.run``), and so do we."""
    g = [int(v) for v in grid] + [1] * (3 - len(grid))
    cga = bound.get("ctas_per_cga")
    if cga is not None and int(tuple(cga)[0]) > 1:
        g[0] //= int(tuple(cga)[0])
    return g[0], g[1], g[2]


def _synchronize() -> None:
    import torch

    torch.cuda.synchronize()


def on_gpu(cap: Any, entry: Any, kernel: Any, bound: dict[str, Any], grid: tuple[int, ...] | None,
           run: dict[str, Any], real: Callable[[], Any], jit_compile: Callable[[str | None], Any] | None) -> Any:
    """Launch on the GPU; returns what ``kernel[grid](...)`` returns (the CompiledKernel)."""
    key = entry.artifact.key
    timing = cap.benchmarking and isolate.completed(key)
    sanitize = bool(cap.sanitize) and key not in cap.sanitized and jit_compile is not None and not cap.benchmarking
    names, consts, values = launch_values(kernel, bound)
    g3 = launch_grid(grid, bound) if grid is not None else (1, 1, 1)
    if not cap.isolate or jit_compile is None or timing or grid is None:
        why = ("--no-isolate" if not cap.isolate else "a timed launch of a kernel that completed in the worker"
               if timing else "the grid could not be evaluated" if grid is None else "no JIT compile hook")
        if cap.snapshot and not timing:
            cap.diagnostics.append({"severity": "warning", "source": "run", "line": None, "col": None, "hint": None,
                                    "message": f"--snapshot: not taken, the launch ran in the notebook's process "
                                               f"({why}); the snapshot is read by the isolated worker"})
        if sanitize:
            cap.sanitized.add(key)
            with cap.suspend():
                compiled = jit_compile(None)
            _sanitize(cap, entry, kernel, compiled, jit_compile, (names, consts, values), g3, run, hung=False)
        return _in_process(cap, entry, run, real, why, record=not cap.benchmarking)
    with cap.suspend(), (snapshot_build() if cap.snapshot else contextlib.nullcontext()):
        compiled = jit_compile(None)
    snap = {"warps_per_cta": _warps_per_cta(entry.artifact)} if cap.snapshot else None
    if snap:
        cap.diagnostics.append({"severity": "info", "source": "run", "line": None, "col": None, "hint": None,
                                "message": "--snapshot: ran a build whose warps record where they wait (its "
                                           "registers and time may differ from the plain build's)"})
    try:
        out = isolate.launch(compiled, names, consts, values, g3, key=key, timeout_s=cap.timeout, snapshot=snap)
    except UnsendableArgument as e:
        cap.diagnostics.append({"severity": "warning", "source": "run", "line": None, "col": None,
                                "message": isolate.unsendable(e), "hint": None})
        return _in_process(cap, entry, run, real, str(e), record=not cap.benchmarking)
    if out.status == "error" and out.phase in ("setup", "prepare"):  # the worker, not the kernel, failed
        cap.diagnostics.append({"severity": "warning", "source": "run", "line": None, "col": None, "hint": None,
                                "message": f"launched in the notebook's process, not isolated: {out.message}"})
        return _in_process(cap, entry, run, real, out.message, record=not cap.benchmarking)
    run["isolation"] = isolate.record(out)
    if sanitize:
        cap.sanitized.add(key)
        hung = out.status == "timeout" and out.phase == "run"
        _sanitize(cap, entry, kernel, compiled, jit_compile, (names, consts, values), g3, run, hung=hung)
    if not out.ok:
        findings = isolate.captured_findings(entry)
        where = _where_they_wait(out, compiled, entry.artifact) if snap else None
        if where is not None:
            run["snapshot"] = {"when_s": out.info.get("snapshot_s"), "waits": where[0]}
        err = isolate.failure_error(out, name=entry.name, grid=grid, findings=findings, timeline=cap.timeline,
                                    sanitizer=[f for f in entry.sanitizer_findings if f.get("line") is not None],
                                    snapshot=where[1] if where is not None else None)
        err.captured_key = key  # the magic shows this kernel's Report before the error, with these findings
        err.findings = findings
        raise err
    run["ran"], run["device"] = True, cap.device.name
    entry.worker_launch = (compiled, names, consts, values, g3)

    def in_process() -> Any:
        with cap.suspend():
            return real()

    entry.relaunch = in_process

    def again() -> None:
        o = isolate.launch(compiled, names, consts, values, g3, key=key, timeout_s=cap.timeout)
        if not o.ok:
            raise isolate.failure_error(o, name=entry.name, grid=grid, findings=[])

    if not cap.benchmarking:
        _remember(cap, entry, again, values)
    return compiled


def _warps_per_cta(artifact: Any) -> int:
    """Warps of one CTA, every task's: the snapshot's slots are laid out by them."""
    tasks = artifact.metadata.tasks
    return sum(int(t.get("num_warps") or 0) for t in tasks) if tasks else int(artifact.metadata.num_warps or 4)


def _where_they_wait(out: Any, compiled: Any, artifact: Any) -> tuple[list[dict[str, Any]], list[str]]:
    """The last live snapshot of a hung launch: who waits where (``run.snapshot.waiting``) and it in words."""
    from workbench.analyse.orchestration import build_model
    from workbench.compile.snapshot import snapshot_sites
    from workbench.run.snapshot import describe, waiting

    rows = out.info.get("snapshot")
    if rows is None:
        return [], ["no snapshot arrived before the limit (the worker reads one every 0.5 s once the launch runs)"]
    asm = getattr(compiled, "asm", {}) or {}
    sites = snapshot_sites(asm.get("ptx", ""), artifact.source.filename, asm.get("ttgir")).sites
    try:
        model = build_model(artifact)
        tasks, text = model.tasks, model.line_text
    except Exception:  # no orchestration model (Gluon, no TTGIR): warps by number
        tasks, text = [], None
    return waiting(rows, sites, tasks), describe(rows, sites, tasks, text)


def _in_process(cap: Any, entry: Any, run: dict[str, Any], real: Callable[[], Any], why: str, record: bool) -> Any:
    with cap.suspend():
        result = real()
    run["ran"], run["device"] = True, cap.device.name
    run["isolation"] = {"mode": "in-process", "reason": why}

    def relaunch() -> Any:
        with cap.suspend():
            return real()

    entry.relaunch = relaunch
    if record:
        def again() -> None:
            relaunch()
            _synchronize()

        _remember(cap, entry, again, list(entry.bound.values()))
    return result


def _remember(cap: Any, entry: Any, again: Callable[[], None], values: list[Any]) -> None:
    if len(cap.sequence) <= MAX_REPLAYS:  # one past the limit marks "too many to replay"
        cap.sequence.append(Replay(entry.name, again, [t for v in values for t in tensors_in(v)]))


def _sanitize(cap: Any, entry: Any, kernel: Any, compiled: Any, jit_compile: Callable[[str | None], Any],
              launch: tuple[list[str], list[bool], list[Any]], grid: tuple[int, int, int],
              run: dict[str, Any], hung: bool) -> None:
    from workbench.run import sanitize
    from workbench.run.sanitize_findings import source_of

    tool = cap.sanitize
    if hung and tool != "consan":  # it would hang under the sanitizer too, for minutes
        entry.sanitizer_findings = [{
            "rule": f"{tool}-not-run", "severity": "info", "line": None, "source": source_of(tool), "related": [],
            "message": f"{tool}: not run, the kernel hung (it would hang under the sanitizer too)",
            "hint": "--sanitize consan reports a deadlock at the waiting line instead of hanging"}]
        run["sanitizer"] = {"tool": tool, "status": "skipped", "reason": "the kernel hung"}
        return
    try:
        if tool == "consan":
            with cap.suspend():
                compiled = jit_compile("consan")
        static = isolate.captured_findings(entry)
        same = tool != "consan" and (cap.device.arch or "").rstrip("a") == str(entry.artifact.target).rstrip("a")
        res = sanitize.run(tool, compiled, *launch, grid, artifact=entry.artifact, static=static, same_device=same,
                           timeout_s=60.0 if hung else None)
    except Exception as e:  # a diagnostic run: its own failure is reported, never raised
        res = {"record": {"tool": tool, "status": "error", "reason": f"{type(e).__name__}: {e}"}, "findings": []}
    entry.sanitizer_findings = list(res["findings"])
    run["sanitizer"] = res["record"]
