"""Capture every kernel a ``%%tlx`` cell compiles or launches.

While a cell runs, ``Capture`` patches ``triton.runtime.jit.JITFunction.run`` (every
``kernel[grid](...)`` of a ``@triton.jit`` or ``@gluon.jit`` kernel goes through it, autotuned
and heuristics-wrapped ones included), ``Autotuner.run`` (without a GPU: compile each config
instead of benchmarking), and ``workbench.compile.driver.compile_kernel`` (direct
``workbench.compile`` calls). Each launch is compiled with ``workbench.compile`` from its own
arguments (that gives the Artifact); then, by mode:

- ``gpu``: launched for real on the local GPU;
- ``interpreter``: executed on the CPU by Triton's interpreter (plain ``tl.*`` kernels only);
- ``compile``: nothing runs (no GPU, ``--compile-only``, or a Gluon/TLX kernel with no GPU).

TLX kernels are ``@triton.jit`` functions, so they are captured like any other.
"""

from __future__ import annotations

import contextlib
import inspect
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from workbench.compile.tuners import arg_names, base_jit
from workbench.report.report import jsonable, kernel_kind
from workbench.run.device import Device

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
    relaunch: Callable[[], Any] | None = None  # zero-arg re-launch (GPU mode), for --bench
    bound: dict[str, Any] = field(default_factory=dict)
    grid: tuple[int, ...] | None = None
    order: int = 0

    @property
    def name(self) -> str:
        return str(self.artifact.name)

    @property
    def ran(self) -> bool:
        return any(r["ran"] for r in self.runs)


def _subclasses_with_run(cls: type) -> list[type]:
    out, todo = [], list(cls.__subclasses__())
    while todo:
        c = todo.pop()
        todo.extend(c.__subclasses__())
        if "run" in c.__dict__ and c not in out:
            out.append(c)
    return out




def _constexpr_names(kernel: Any) -> set[str]:
    base = base_jit(kernel)
    try:
        return {p.name for p in base.params if p.is_constexpr}
    except Exception:
        return set()


def bind_arguments(kernel: Any, args: tuple, kwargs: dict[str, Any]) -> dict[str, Any]:
    names = arg_names(kernel)
    bound = dict(zip(names, args, strict=False))
    for k, v in kwargs.items():
        bound.setdefault(k, v)
    base = base_jit(kernel)
    try:
        for p in inspect.signature(getattr(base, "fn", base)).parameters.values():
            if p.name not in bound and p.default is not inspect.Parameter.empty:
                bound[p.name] = p.default
    except (TypeError, ValueError):
        pass
    return bound


def _describe(name: str, v: Any, constexpr: bool) -> dict[str, Any]:
    if hasattr(v, "data_ptr") and hasattr(v, "dtype") and hasattr(v, "shape"):
        return {
            "name": name,
            "kind": "tensor",
            "dtype": str(v.dtype).replace("torch.", ""),
            "shape": [int(s) for s in v.shape],
            "strides": [int(s) for s in v.stride()] if hasattr(v, "stride") else None,
            "device": str(getattr(v, "device", None)),
        }
    if type(v).__name__ == "TensorDescriptor":
        base = getattr(v, "base", None)
        return {
            "name": name,
            "kind": "descriptor",
            "dtype": str(getattr(base, "dtype", None)).replace("torch.", ""),
            "shape": [int(s) for s in getattr(v, "shape", [])],
            "device": str(getattr(base, "device", None)),
            "value": {"block_shape": jsonable(list(getattr(v, "block_shape", []) or []))},
        }
    if constexpr:
        return {"name": name, "kind": "constexpr", "value": jsonable(getattr(v, "value", v))}
    if v is None:
        return {"name": name, "kind": "none", "value": None}
    if isinstance(v, bool):
        return {"name": name, "kind": "bool", "value": v}
    if isinstance(v, int):
        return {"name": name, "kind": "int", "value": v}
    if isinstance(v, float):
        return {"name": name, "kind": "float", "value": jsonable(v)}
    if isinstance(v, tuple):
        return {"name": name, "kind": "tuple", "value": jsonable(v)}
    return {"name": name, "kind": "other", "value": repr(v)[:200]}


def describe_arguments(kernel: Any, bound: dict[str, Any]) -> list[dict[str, Any]]:
    """The schema's run ``arguments`` for bound launch arguments."""
    consts = _constexpr_names(kernel)
    return [_describe(k, v, k in consts) for k, v in bound.items()]


def _spec(v: Any, constexpr: bool) -> Any:
    """A cheap stand-in for Triton's specialization of one argument (for de-duplicating launches)."""
    if constexpr:
        return ("c", repr(v))
    if hasattr(v, "data_ptr") and hasattr(v, "dtype"):
        try:
            return ("t", str(v.dtype), v.data_ptr() % 16 == 0, str(getattr(v, "device", "")))
        except Exception:
            return ("t", str(v.dtype))
    if isinstance(v, bool):
        return ("b", v)
    if isinstance(v, int):
        return ("i", v == 1, v % 16 == 0, -(2**31) <= v < 2**31, v >= 2**63)
    if isinstance(v, float):
        return ("f",)
    if isinstance(v, tuple):
        return ("u", tuple(_spec(x, False) for x in v))
    if v is None:
        return ("n",)
    return ("o", type(v).__name__, repr(v)[:80])


def _grid_tuple(grid: Any, bound: dict[str, Any]) -> tuple[int, ...] | None:
    try:
        g = grid(bound) if callable(grid) else grid
        if isinstance(g, int):
            g = (g,)
        return tuple(int(x) for x in g)
    except Exception:
        return None


class Capture:
    """Patches Triton's launch path for the duration of one cell (a context manager)."""

    def __init__(
        self,
        *,
        device: Device,
        target: str = "sm_90",
        compile_only: bool = False,
        interpret: bool = False,
        auto_interpret: bool = False,
    ) -> None:
        self.device = device
        self.target = target
        self.compile_only = compile_only
        self.interpret = interpret
        self.auto_interpret = auto_interpret
        self.entries: dict[str, Captured] = {}  # artifact key -> Captured, in capture order
        self._by_sig: dict[Any, Captured] = {}
        self.suspended = 0
        self._force_compile = 0
        self.compiling: Any = None  # the kernel being compiled now (for error locations)
        self.failed_kernel: Any = None  # the kernel whose compile raised
        self.compile_ms_total = 0.0
        self.diagnostics: list[dict[str, Any]] = []
        self._restore: list[Callable[[], None]] = []

    # ------------------------------------------------------------------ patching
    def __enter__(self) -> Capture:
        global _ACTIVE
        from triton.runtime.autotuner import Autotuner
        from triton.runtime.jit import JITFunction

        # JITFunction and every subclass that defines its own run (the TLX kernel class does)
        for cls in [JITFunction, *_subclasses_with_run(JITFunction)]:
            self._patch_run(cls)

        orig_at_run = Autotuner.run

        def at_run(at_self, *args, **kwargs):
            cap = _ACTIVE
            if cap is None or cap.suspended or cap.runs_on_gpu_default():
                return orig_at_run(at_self, *args, **kwargs)
            return cap._autotune_without_gpu(at_self, args, kwargs)

        Autotuner.run = at_run
        self._restore.append(lambda: setattr(Autotuner, "run", orig_at_run))

        try:
            from workbench.compile import driver
        except ImportError:
            driver = None
        if driver is not None:
            orig_compile = driver.compile_kernel

            def compile_kernel(kernel, *args, **kw):
                cap = _ACTIVE
                if cap is None or cap.suspended:
                    return orig_compile(kernel, *args, **kw)
                return cap._direct_compile(orig_compile, kernel, args, kw)

            driver.compile_kernel = compile_kernel
            self._restore.append(lambda: setattr(driver, "compile_kernel", orig_compile))

        self._prev = _ACTIVE
        _ACTIVE = self
        return self

    def _patch_run(self, cls: type) -> None:
        orig_run = cls.__dict__["run"]

        def run(fn_self, *args, grid, warmup, **kwargs):
            cap = _ACTIVE
            if cap is None or cap.suspended:
                return orig_run(fn_self, *args, grid=grid, warmup=warmup, **kwargs)
            return cap.on_launch(
                fn_self,
                args,
                kwargs,
                grid,
                warmup,
                lambda: orig_run(fn_self, *args, grid=grid, warmup=warmup, **kwargs),
            )

        run.__wrapped__ = orig_run  # type: ignore[attr-defined]
        cls.run = run
        self._restore.append(lambda: setattr(cls, "run", orig_run))

    def __exit__(self, *exc: Any) -> None:
        global _ACTIVE
        _ACTIVE = self._prev
        while self._restore:
            self._restore.pop()()

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

    def mode_for(self, kernel: Any, interpretable: bool = True) -> tuple[str, str | None]:
        kind = kernel_kind(kernel)
        can_interp = interpretable and kind == "triton"
        no_gpu = f"no GPU ({self.device.reason})" if not self.device.available else ""
        if self.compile_only:
            return "compile", "--compile-only: the launch was compiled from its arguments, nothing ran"
        if self._force_compile:
            return "compile", "autotuning without a GPU: this config was compiled only"
        if self.interpret:
            if can_interp:
                return "interpreter", "--interpret"
            if self.device.available:
                return "gpu", None
            return "compile", (
                f"{no_gpu}; Triton's interpreter runs only plain tl.* kernels, not "
                f"{kind} kernels: compiled from the launch arguments, nothing ran"
            )
        if self.device.available:
            return "gpu", None
        if self.auto_interpret and can_interp:
            return "interpreter", f"{no_gpu}; --check needs outputs"
        return "compile", f"{no_gpu}: compiled from the launch arguments, nothing ran"

    # ------------------------------------------------------------------ compiling
    def _compile(self, kernel: Any, args: tuple, kwargs: dict[str, Any], target: str | None = None) -> Any:
        from workbench.compile import compile as wb_compile

        prev = self.compiling
        self.compiling = kernel
        t0 = time.perf_counter()
        try:
            with self.suspend():
                art = wb_compile(kernel, *args, target=target or self.target, **kwargs)
        except BaseException:
            self.failed_kernel = kernel
            raise
        finally:
            self.compiling = prev
        ms = (time.perf_counter() - t0) * 1e3
        self.compile_ms_total += ms
        return art, ms

    def _entry(self, kernel: Any, art: Any, ms: float | None) -> Captured:
        entry = self.entries.get(art.key)
        if entry is None:
            entry = Captured(kernel=kernel, artifact=art, compile_ms=ms, order=len(self.entries))
            self.entries[art.key] = entry
        return entry

    def _direct_compile(self, orig: Callable, kernel: Any, args: tuple, kw: dict[str, Any]) -> Any:
        prev = self.compiling
        self.compiling = kernel
        t0 = time.perf_counter()
        try:
            with self.suspend():
                art = orig(kernel, *args, **kw)
        except BaseException:
            self.failed_kernel = kernel
            raise
        finally:
            self.compiling = prev
        ms = (time.perf_counter() - t0) * 1e3
        self.compile_ms_total += ms
        entry = self._entry(kernel, art, ms)
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
    ) -> Any:
        consts = _constexpr_names(kernel)
        bound = bind_arguments(kernel, args, kwargs)
        sig = (id(kernel), tuple((k, _spec(v, k in consts)) for k, v in bound.items()), self.target)
        entry = self._by_sig.get(sig)
        if entry is None:
            art, ms = self._compile(kernel, args, kwargs)
            entry = self._entry(kernel, art, ms)
            self._by_sig[sig] = entry
        if warmup:  # kernel.warmup(...): a compile
            if self.runs_on_gpu_default():
                with self.suspend():
                    return real()
            return entry.artifact.compiled
        mode, reason = self.mode_for(kernel, interpretable)
        gtuple = _grid_tuple(grid, bound)
        run: dict[str, Any] = {
            "mode": mode,
            "ran": False,
            "reason": reason,
            "device": None,
            "grid": list(gtuple) if gtuple is not None else None,
            "elapsed_ms": None,
            "arguments": describe_arguments(kernel, bound),
            "checks": [],
        }
        entry.launches += 1
        entry.bound, entry.grid = bound, gtuple
        if len(entry.runs) < MAX_RUNS:
            entry.runs.append(run)
        result = None
        t0 = time.perf_counter()
        if mode == "gpu":
            with self.suspend():
                result = real()
            run["ran"], run["device"] = True, self.device.name

            def relaunch() -> Any:
                with self.suspend():
                    return real()

            entry.relaunch = relaunch
        elif mode == "interpreter":
            with self.suspend():
                interpret(kernel, args, kwargs, grid)
            run["ran"], run["device"] = True, "cpu (Triton interpreter)"
        else:
            result = entry.artifact.compiled
        run["elapsed_ms"] = (time.perf_counter() - t0) * 1e3
        return result

    def _autotune_without_gpu(self, tuner: Any, args: tuple, kwargs: dict[str, Any]) -> Any:
        configs = list(tuner.configs)
        if len(configs) > MAX_AUTOTUNE_CONFIGS:
            self.diagnostics.append(
                {
                    "severity": "info",
                    "source": "magic",
                    "message": f"autotuning without a GPU: compiled the first {MAX_AUTOTUNE_CONFIGS} of "
                    f"{len(configs)} configs of {getattr(tuner.fn, '__name__', 'the kernel')}",
                    "hint": None,
                    "line": None,
                }
            )
        names = list(getattr(tuner, "arg_names", []) or arg_names(tuner))
        result = None
        for i, cfg in enumerate(configs[:MAX_AUTOTUNE_CONFIGS]):
            kw = dict(kwargs)
            kw.update(cfg.all_kwargs())
            nargs = dict(zip(names, args, strict=False)) | {k: v for k, v in kw.items() if k in names}
            if getattr(cfg, "pre_hook", None) is not None:
                cfg.pre_hook(nargs)
            tuner.nargs = nargs
            self._force_compile += i > 0  # only the first config runs (in the interpreter)
            try:
                r = tuner.fn.run(*args, **kw)
            finally:
                self._force_compile -= i > 0
                tuner.nargs = None
            result = r if i == 0 else result
        return result


# ---------------------------------------------------------------------- interpreter
def interpret(kernel: Any, args: tuple, kwargs: dict[str, Any], grid: Any) -> None:
    """Run a plain ``@triton.jit`` kernel on CPU tensors with Triton's interpreter."""
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    base = base_jit(kernel)
    fn = base.fn
    helpers: dict[Any, InterpretedFunction] = {}
    orig_call = JITFunction.__call__

    def call(self, *a, **k):  # device-function calls made by the kernel
        f = helpers.get(self.fn)
        if f is None:
            f = helpers[self.fn] = InterpretedFunction(self.fn)
        return f(*a, **k)

    # The interpreter rewrites functions into their own __globals__ and adds its module's globals there;
    # take those out again so the user's namespace is left as it was.
    globs = [fn.__globals__]
    before = {id(g): set(g) for g in globs}
    JITFunction.__call__ = call
    try:
        InterpretedFunction(fn).run(*args, grid=grid, warmup=False, **kwargs)
    finally:
        JITFunction.__call__ = orig_call
        for g in [fn.__globals__] + [h.fn.__globals__ for h in helpers.values()]:
            keep = before.get(id(g))
            if keep is None:
                continue
            for name in set(g) - keep:
                del g[name]
        for f in [fn] + list(helpers):
            InterpretedFunction.rewritten_fn.pop(f, None)
