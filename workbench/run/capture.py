"""Capture every kernel a ``%%tlx`` cell compiles or launches.

While a cell runs, ``Capture`` has Triton's launch path patched (``workbench.run.launch_patches``: every
``kernel[grid](...)`` of a ``@triton.jit`` or ``@gluon.jit`` kernel, autotuned and heuristics-wrapped ones
included, the autotuner's config timing, and direct ``workbench.compile`` calls come here). Each launch is
compiled with ``workbench.compile`` from its own arguments (that gives the Artifact); then, by mode:

- ``gpu``: launched for real on the local GPU;
- ``interpreter``: executed on the CPU by Triton's interpreter (plain ``tl.*`` kernels only), in the
  interpreter worker process (``interpreter_isolated``; ``--no-isolate``: in the notebook's process);
- ``compile``: nothing runs (no GPU, ``--compile-only``, a Gluon/TLX kernel with no GPU, or a kernel the
  interpreter would compute wrongly: ``workbench.run.interpreter_limits``).

TLX kernels are ``@triton.jit`` functions, so they are captured like any other.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from workbench.compile import progress
from workbench.compile.kernel_kinds import kernel_kind
from workbench.compile.tuners import arg_names
from workbench.run import interpreter_isolated, launch_patches
from workbench.run.arguments import bind_arguments, describe_arguments, launch_spec
from workbench.run.device import Device
from workbench.run.interpreter_limits import interpreter_blocker

__all__ = ["Capture", "Captured", "active", "describe_arguments"]

MAX_RUNS = 16  # launches recorded per kernel (all are counted)
MAX_AUTOTUNE_CONFIGS = 8

_ACTIVE: Capture | None = None


def active() -> Capture | None:
    """The capture of the ``%%tlx`` cell running now, if any."""
    return _ACTIVE


@dataclass
class Captured:
    """One compiled kernel (one artifact key) and the launches that used it."""

    kernel: Any
    artifact: Any
    compile_ms: float | None
    runs: list[dict[str, Any]] = field(default_factory=list)
    launches: int = 0
    relaunch: Callable[[], Any] | None = None  # zero-arg re-launch in the notebook's process, for --bench
    sanitizer_findings: list[dict[str, Any]] = field(default_factory=list)  # --sanitize
    # (compiled, arg names, constexpr flags, values, grid) of its last isolated launch: a worker can launch it
    # again under a tool (--stalls)
    worker_launch: tuple | None = None
    bound: dict[str, Any] = field(default_factory=dict)
    grid: tuple[int, ...] | None = None
    order: int = 0
    last_launch: int = 0  # the capture's launch counter at this kernel's latest launch (0: never launched)
    tuning_only: bool = False  # compiled only, as one more config of an autotuner run without a GPU

    @property
    def name(self) -> str:
        return str(self.artifact.name)

    @property
    def ran(self) -> bool:
        return any(r["ran"] for r in self.runs)

    @property
    def scalars(self) -> dict[str, Any]:
        """The launch's own arguments by name: ``bound`` without the artifact, kernel and grid the capture adds."""
        return {k: v for k, v in self.bound.items() if k not in ("artifact", "kernel", "grid")}


@dataclass
class Recorded:
    """A launch as the cell made it (the object launched: a kernel or an autotuner), not compiled or run."""

    kernel: Any
    args: tuple
    kwargs: dict[str, Any]
    grid: Any


def _run_record(mode: str, reason: str | None, grid: tuple[int, ...] | None,
                arguments: list[dict[str, Any]] | None) -> dict[str, Any]:
    """A launch's run record (the schema's ``runs`` item) before it ran."""
    return {"mode": mode, "ran": False, "reason": reason, "device": None,
            "grid": list(grid) if grid is not None else None, "elapsed_ms": None, "arguments": arguments,
            "checks": []}


def _grid_tuple(grid: Any, bound: dict[str, Any]) -> tuple[int, ...] | None:
    try:
        g = grid(bound) if callable(grid) else grid
        if isinstance(g, int):
            g = (g,)
        return tuple(int(x) for x in g)
    except Exception:
        return None


class Capture:
    """Captures the launches of one cell (a context manager: Triton's launch path is patched inside it)."""

    def __init__(
        self,
        *,
        device: Device,
        target: str = "sm_90",
        compile_only: bool = False,
        interpret: bool = False,
        auto_interpret: bool = False,
        isolate: bool = True,
        timeout: float | None = None,
        sanitize: str | None = None,
        timeline: bool = False,
        record_only: bool = False,
        snapshot: bool = False,
    ) -> None:
        self.device = device
        self.record_only = record_only  # launches are recorded (``recorded``), not compiled or run: --search
        self.recorded: list[Recorded] = []
        self.isolate = isolate  # GPU launches in the worker process (workbench.run.launching)
        self.timeout = timeout  # seconds per isolated launch (None: isolate.default_timeout)
        self.sanitize = sanitize
        self.snapshot = snapshot  # launch snapshot builds: a hang says where the warps wait (run.snapshot)
        self.timeline = timeline
        self.sanitized: set[str] = set()  # artifact keys run under the sanitizer in this cell
        self.sequence: list[Any] = []  # launching.Replay of every launch, in order (--check re-runs them)
        self.benchmarking = 0  # inside the autotuner's timing of configs
        self.target = target
        self.compile_only = compile_only
        self.interpret = interpret
        self.auto_interpret = auto_interpret
        self._launch_seq = 0
        self.entries: dict[str, Captured] = {}  # artifact key -> Captured, in capture order
        self._by_sig: dict[Any, Captured] = {}
        self._kinds: dict[int, tuple[Any, str]] = {}  # id(kernel) -> (kernel, its kind)
        self.suspended = 0
        self._force_compile = 0
        self.compiling: Any = None  # the kernel being compiled now (for error locations)
        self.failed_kernel: Any = None  # the kernel whose compile raised
        self.compile_ms_total = 0.0
        self.diagnostics: list[dict[str, Any]] = []
        self._undo: Callable[[], None] = lambda: None

    # ------------------------------------------------------------------ patching
    def __enter__(self) -> Capture:
        global _ACTIVE
        self._undo = launch_patches.install(active)
        self._prev = _ACTIVE
        _ACTIVE = self
        if self.isolate and not (self.compile_only or self.record_only) and (
                self.interpret or (self.auto_interpret and not self.device.available)):
            interpreter_isolated.warm()  # its process starts while the cell compiles
        return self

    def __exit__(self, *exc: Any) -> None:
        global _ACTIVE
        _ACTIVE = self._prev
        self._undo()

    def record(self, kernel: Any, args: tuple, kwargs: dict[str, Any], grid: Any) -> None:
        self.recorded.append(Recorded(kernel, tuple(args), dict(kwargs), grid))

    @contextlib.contextmanager
    def suspend(self) -> Iterator[None]:
        self.suspended += 1
        try:
            yield
        finally:
            self.suspended -= 1

    # ------------------------------------------------------------------ modes
    def runs_on_gpu_default(self) -> bool:
        return self.device.available and not self.compile_only and not self.interpret

    def _kind(self, kernel: Any) -> str:
        """``kernel_kind``, once per kernel object of the cell (it reads the kernel's source)."""
        known = self._kinds.get(id(kernel))
        if known is None or known[0] is not kernel:
            known = self._kinds[id(kernel)] = (kernel, kernel_kind(kernel))
        return known[1]

    def mode_for(self, kernel: Any, interpretable: bool = True, blocked: str | None = None) -> tuple[str, str | None]:
        """How a launch runs and why; ``blocked``: why Triton's interpreter would compute this kernel wrongly."""
        kind = self._kind(kernel)
        can_interp = interpretable and kind == "triton"
        no_gpu = f"no GPU ({self.device.reason})" if not self.device.available else ""
        refused = f"{no_gpu}; not interpreted: {blocked}; compile-only"
        if self.compile_only:
            return "compile", "--compile-only: the launch was compiled from its arguments, nothing ran"
        if self.interpret:
            if can_interp and not blocked:
                return "interpreter", "--interpret"
            if self.device.available:
                return "gpu", None
            if can_interp:
                return "compile", refused
            return "compile", (
                f"{no_gpu}; Triton's interpreter runs only plain tl.* kernels, not "
                f"{kind} kernels: compiled from the launch arguments, nothing ran"
            )
        if self.device.available:
            return "gpu", None
        if self.auto_interpret and can_interp:
            return ("compile", refused) if blocked else ("interpreter", f"{no_gpu}; --check needs outputs")
        return "compile", f"{no_gpu}: compiled from the launch arguments, nothing ran"

    # ------------------------------------------------------------------ compiling
    @contextlib.contextmanager
    def _compiling(self, kernel: Any, note: str) -> Iterator[list[float]]:
        """Around one compile of ``kernel``: the status line, the failed kernel, and the time (ms, into the list)."""
        prev, self.compiling = self.compiling, kernel
        took: list[float] = []
        t0 = time.perf_counter()
        progress.note(f"compiling {getattr(kernel, '__name__', 'the kernel')}{note}")
        try:
            with self.suspend():
                yield took
        except BaseException:
            self.failed_kernel = kernel
            raise
        finally:
            self.compiling = prev
        took.append((time.perf_counter() - t0) * 1e3)
        self.compile_ms_total += took[0]

    def _compile(self, kernel: Any, args: tuple, kwargs: dict[str, Any], target: str | None = None) -> Any:
        from workbench.compile import compile as wb_compile

        with self._compiling(kernel, f" for {target or self.target}") as took:
            art = wb_compile(kernel, *args, target=target or self.target, **kwargs)
        return art, took[0]

    def _entry(self, kernel: Any, art: Any, ms: float | None) -> Captured:
        entry = self.entries.get(art.key)
        if entry is None:
            entry = Captured(kernel=kernel, artifact=art, compile_ms=ms, order=len(self.entries))
            self.entries[art.key] = entry
        return entry

    def _direct_compile(self, orig: Callable, kernel: Any, args: tuple, kw: dict[str, Any]) -> Any:
        with self._compiling(kernel, "") as took:
            art = orig(kernel, *args, **kw)
        entry = self._entry(kernel, art, took[0])
        entry.bound = bind_arguments(kernel, args, {k: v for k, v in kw.items() if k not in ("target", "signature")})
        return art

    # ------------------------------------------------------------------ launching
    def on_launch(
        self,
        kernel: Any,
        args: tuple,
        kwargs: dict[str, Any],
        grid: Any,
        warmup: bool,
        real: Callable[[], Any],
        interpretable: bool = True,
        jit_compile: Callable[[str | None], Any] | None = None,
    ) -> Any:
        bound = bind_arguments(kernel, args, kwargs)
        sig = (id(kernel), launch_spec(kernel, bound), self.target)
        entry = self._by_sig.get(sig)
        if entry is None:
            art, ms = self._compile(kernel, args, kwargs)
            entry = self._entry(kernel, art, ms)
            self._by_sig[sig] = entry
        if self._force_compile:  # one more config compiled only, autotuning without a GPU: no launch of the cell's
            return self._tuning_compile(entry, kernel, bound, grid)
        if warmup:  # kernel.warmup(...): a compile
            if self.runs_on_gpu_default():
                with self.suspend():
                    return real()
            return entry.artifact.compiled
        wants_interpreter = (self.interpret or (self.auto_interpret and not self.device.available)) \
            and not self.compile_only
        blocked = interpreter_blocker(entry.artifact.stages.get("ttir", "")) if wants_interpreter else None
        mode, reason = self.mode_for(kernel, interpretable, blocked)
        gtuple = _grid_tuple(grid, bound)
        kept = len(entry.runs) < MAX_RUNS  # past that, a launch's record is not kept: skip describing it
        run = _run_record(mode, reason, gtuple, describe_arguments(kernel, bound) if kept else None)
        entry.launches += 1
        self._launch_seq += 1
        entry.last_launch = self._launch_seq
        entry.bound, entry.grid, entry.tuning_only = bound, gtuple, False
        if kept:
            entry.runs.append(run)
        result = None
        t0 = time.perf_counter()
        if mode == "gpu":
            from workbench.run.launching import on_gpu

            result = on_gpu(self, entry, kernel, bound, gtuple, run, real, jit_compile)
        elif mode == "interpreter":
            grid = gtuple if gtuple is not None else grid
            self._interpret(entry, kernel, args, kwargs, grid, run)
            run["ran"], run["device"] = True, "cpu (Triton interpreter)"
            self._remember_interpreted(entry, kernel, args, kwargs, grid, bound)
        else:
            result = entry.artifact.compiled
            if self.sanitize and not self.sanitized:
                self.sanitized.add("")  # said once per cell
                self.diagnostics.append({"severity": "info", "source": "run", "line": None, "col": None, "hint": None,
                                         "message": f"--sanitize {self.sanitize}: nothing was sanitized, nothing "
                                                    f"ran on a GPU ({reason})"})
        run["elapsed_ms"] = (time.perf_counter() - t0) * 1e3
        return result

    def _tuning_compile(self, entry: Captured, kernel: Any, bound: dict[str, Any], grid: Any) -> Any:
        """A config the autotuner's loop compiled only: its entry says so, the launch counter (which names the
        config that ran) does not move."""
        if not entry.bound:
            entry.bound, entry.grid, entry.tuning_only = bound, _grid_tuple(grid, bound), True
        if len(entry.runs) < MAX_RUNS:
            entry.runs.append(_run_record("compile", "autotuning without a GPU: this config was compiled only",
                                          entry.grid, describe_arguments(kernel, bound)))
        return entry.artifact.compiled

    def _interpret(self, entry: Captured, kernel: Any, args: tuple, kwargs: dict[str, Any], grid: Any,
                   run: dict[str, Any] | None = None) -> None:
        progress.note(f"running {entry.name} in Triton's interpreter" + (" (isolated worker)" if self.isolate else ""))
        with self.suspend():
            record, fallback = interpreter_isolated.run_interpreted(
                kernel, args, kwargs, grid, name=entry.name, isolated=self.isolate, timeout_s=self.timeout,
                artifact=entry.artifact)
        if run is not None:
            run["isolation"] = record
            if fallback:
                self.diagnostics.append({"severity": "warning", "source": "run", "line": None, "col": None,
                                         "hint": None, "message": "ran in Triton's interpreter in the notebook's "
                                         f"process, not isolated: {fallback}"})

    def _remember_interpreted(self, entry: Captured, kernel: Any, args: tuple, kwargs: dict[str, Any], grid: Any,
                              bound: dict[str, Any]) -> None:
        from workbench.run.launch_record import tensors_in
        from workbench.run.launching import MAX_REPLAYS, Replay

        def again() -> None:
            self._interpret(entry, kernel, args, kwargs, grid)

        if len(self.sequence) <= MAX_REPLAYS:
            self.sequence.append(Replay(entry.name, again, [t for v in bound.values() for t in tensors_in(v)]))

    def _autotune_without_gpu(self, tuner: Any, args: tuple, kwargs: dict[str, Any]) -> Any:
        """Each of the tuner's configs (after its own pruning, as Triton's ``Autotuner.run`` prunes) compiled instead
        of timed, up to ``MAX_AUTOTUNE_CONFIGS``; the first that compiles "runs". A config the autotuner would skip
        on a GPU (a failed ``tl.static_assert``, ptxas refusing it, too much shared memory:
        ``CompileError.config_rejected``) is skipped here too, and said once."""
        from workbench.errors import CompileError

        names = list(getattr(tuner, "arg_names", []) or arg_names(tuner))
        configs = self._pruned(tuner, names, args, kwargs)
        label = getattr(tuner.fn, "__name__", "the kernel")
        if len(configs) > MAX_AUTOTUNE_CONFIGS:
            self.diagnostics.append(
                {
                    "severity": "info",
                    "source": "magic",
                    "message": f"autotuning without a GPU: compiled the first {MAX_AUTOTUNE_CONFIGS} of "
                    f"{len(configs)} configs of {label}",
                    "hint": None,
                    "line": None,
                }
            )
        result, chosen, rejected = None, None, []
        for cfg in configs[:MAX_AUTOTUNE_CONFIGS]:
            kw = dict(kwargs)
            kw.update(cfg.all_kwargs())
            nargs = dict(zip(names, args, strict=False)) | {k: v for k, v in kw.items() if k in names}
            if getattr(cfg, "pre_hook", None) is not None:
                cfg.pre_hook(nargs)
            tuner.nargs = nargs
            later = chosen is not None
            self._force_compile += later  # only the first config that compiles runs (in the interpreter)
            failed_before = self.failed_kernel
            try:
                r = tuner.fn.run(*args, **kw)
            except CompileError as e:
                if not e.config_rejected:
                    raise
                self.failed_kernel = failed_before
                rejected.append((cfg, e))
                continue
            finally:
                self._force_compile -= later
                tuner.nargs = None
            if chosen is None:
                result, chosen = r, cfg
        if rejected:
            first = rejected[0][1]
            self.diagnostics.append({
                "severity": "info" if chosen is not None else "error", "source": "magic", "line": None, "hint": None,
                "message": f"autotuning without a GPU: {len(rejected)} config(s) of {label} skipped as Triton's "
                           f"autotuner skips them ({first.message.splitlines()[0][:200]})"})
            if chosen is None:
                raise first
        if chosen is not None:  # the config that "ran", as Triton's Autotuner.run leaves it (a library reads it)
            tuner.best_config = chosen
        return result

    @staticmethod
    def _pruned(tuner: Any, names: list[str], args: tuple, kwargs: dict[str, Any]) -> list[Any]:
        """The tuner's configs after its ``early_config_prune`` / ``perf_model`` pruning (all of them when that
        pruning needs what only a GPU has)."""
        configs = list(tuner.configs)
        if not (getattr(tuner, "early_config_prune", None) or getattr(tuner, "perf_model", None)):
            return configs
        tuner.nargs = dict(zip(names, args, strict=False))
        try:
            return list(tuner.prune_configs(dict(kwargs))) or configs
        except Exception:
            return configs
        finally:
            tuner.nargs = None
