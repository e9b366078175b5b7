"""Where the ``%%tlx`` launch capture reaches into Triton's runtime (and the workbench's own compile driver).

Triton 3.8's public launch hooks (``knobs.runtime.launch_enter_hook`` / ``launch_exit_hook``) fire inside
the compiled kernel's launcher, after ``JITFunction.run`` has asked the driver for the current device and
compiled for it: on a machine without a GPU nothing reaches them, and they cannot turn a launch into a
compile for another target. So while a cell runs, :func:`install` replaces, and its returned function
restores:

- ``JITFunction.run`` and the ``run`` of every subclass that defines its own (uTLX's kernel class does):
  every ``kernel[grid](...)`` of a ``@triton.jit`` / ``@gluon.jit`` kernel, autotuned and heuristics-wrapped
  ones included, goes to ``capture.on_launch`` with a zero-argument "launch as Triton would" and a
  ``jit_compile(mode)`` that runs the JIT's own compile (``warmup=True``) without launching;
- ``Autotuner.run`` and the ``run`` of every subclass that defines its own (a library's tuner: FlagGems'
  ``LibTuner`` times configs through its own policy and cache): without a GPU (or with ``--compile-only`` /
  ``--interpret``) the capture compiles each config instead of timing it (``capture._autotune_without_gpu``);
- ``Autotuner._bench``: counted in ``capture.benchmarking`` while the autotuner times its configs;
- ``workbench.compile.driver.compile_kernel``: direct ``workbench.compile`` calls in the cell
  (``capture._direct_compile``).

``tests/run/test_launch_patches.py`` pins the signatures these replacements assume and checks that every
patch is undone.

:func:`gpu_launches` is the other way in, for a judge that must see every GPU launch: a library may keep the
``CompiledKernel`` of a first call and launch it directly afterwards (FlagGems' ``LibEntry`` does), past
``JITFunction.run``; Triton's public ``launch_enter_hook`` fires for those too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["current_stream", "gpu_launches", "install", "subclasses_with_run"]

Active = Callable[[], Any]  # the capture of the cell running now, or None


def subclasses_with_run(cls: type) -> list[type]:
    """Every subclass of ``cls`` (at any depth) whose class body defines ``run``."""
    out, todo = [], list(cls.__subclasses__())
    while todo:
        c = todo.pop()
        todo.extend(c.__subclasses__())
        if "run" in c.__dict__ and c not in out:
            out.append(c)
    return out


def install(active: Active) -> Callable[[], None]:
    """Patch Triton's launch path for ``active()``'s capture; returns the function that undoes it all."""
    from triton.runtime.jit import JITFunction

    restore: list[Callable[[], None]] = []
    for cls in [JITFunction, *subclasses_with_run(JITFunction)]:
        restore.append(_patch_jit_run(cls, active))
    restore += _patch_autotuner(active)
    restore += _patch_driver(active)

    def undo() -> None:
        while restore:
            restore.pop()()

    return undo


def current_stream() -> int:
    """The handle of torch's current CUDA stream (where a Triton launch made now goes: compare ``gpu_launches``')."""
    import torch

    return int(torch.cuda.current_stream().cuda_stream)


@contextmanager
def gpu_launches() -> Iterator[list[tuple[str, int]]]:
    """Every compiled Triton kernel launched on a GPU inside the block, as (kernel name, CUDA stream handle), in
    launch order: through the JIT or through a ``CompiledKernel`` a library keeps (Triton's ``launch_enter_hook``,
    which its launcher calls with the launch's metadata: name, function, stream)."""
    from triton import knobs

    seen: list[tuple[str, int]] = []

    def hook(metadata: Any) -> None:
        data = getattr(metadata, "data", None) or {}  # LazyDict.data: the eager part, without the kernel's extras
        seen.append((str(data.get("name", "?")), int(data.get("stream") or 0)))

    knobs.runtime.launch_enter_hook.add(hook)
    try:
        yield seen
    finally:
        knobs.runtime.launch_enter_hook.remove(hook)


def _patch_jit_run(cls: type, active: Active) -> Callable[[], None]:
    orig_run = cls.__dict__["run"]

    def run(fn_self, *args, grid, warmup, **kwargs):
        cap = active()
        if cap is None or cap.suspended:
            return orig_run(fn_self, *args, grid=grid, warmup=warmup, **kwargs)
        if cap.record_only:  # %%tlx --search: the launch is recorded for the search, not compiled or run
            return cap.record(fn_self, args, kwargs, grid)

        def jit_compile(mode: str | None = None):  # the JIT's own compile (a Triton cache hit), no launch
            if mode is None:
                return orig_run(fn_self, *args, grid=grid, warmup=True, **kwargs)
            from triton import knobs

            with knobs.compilation.scope():
                knobs.compilation.instrumentation_mode = mode
                return orig_run(fn_self, *args, grid=grid, warmup=True, **kwargs)

        return cap.on_launch(fn_self, args, kwargs, grid, warmup,
                             lambda: orig_run(fn_self, *args, grid=grid, warmup=warmup, **kwargs),
                             jit_compile=jit_compile)

    run.__wrapped__ = orig_run  # type: ignore[attr-defined]
    cls.run = run
    return lambda: setattr(cls, "run", orig_run)


def _patch_tuner_run(cls: type, active: Active) -> Callable[[], None]:
    """``cls.run`` of ``Autotuner`` or of a subclass with its own ``run`` (a library's tuner, e.g. FlagGems'
    ``LibTuner``, which times configs its own way): without a GPU the capture compiles the configs instead."""
    orig_run = cls.__dict__["run"]

    def run(at_self, *args, **kwargs):
        cap = active()
        if cap is not None and not cap.suspended and cap.record_only:
            kw = dict(kwargs)
            return cap.record(at_self, args, kw, kw.pop("grid", None))
        if cap is None or cap.suspended or cap.runs_on_gpu_default():
            return orig_run(at_self, *args, **kwargs)
        return cap._autotune_without_gpu(at_self, args, kwargs)

    run.__wrapped__ = orig_run  # type: ignore[attr-defined]
    cls.run = run
    return lambda: setattr(cls, "run", orig_run)


def _patch_autotuner(active: Active) -> list[Callable[[], None]]:
    from triton.runtime.autotuner import Autotuner

    orig_bench = Autotuner._bench
    restore = [_patch_tuner_run(cls, active) for cls in [Autotuner, *subclasses_with_run(Autotuner)]]

    def bench(at_self, *args, **kwargs):  # the autotuner timing its configs
        cap = active()
        if cap is None:
            return orig_bench(at_self, *args, **kwargs)
        cap.benchmarking += 1
        try:
            return orig_bench(at_self, *args, **kwargs)
        finally:
            cap.benchmarking -= 1

    Autotuner._bench = bench
    return [*restore, lambda: setattr(Autotuner, "_bench", orig_bench)]


def _patch_driver(active: Active) -> list[Callable[[], None]]:
    from workbench.compile import driver

    orig_compile = driver.compile_kernel

    def compile_kernel(kernel, *args, **kw):
        cap = active()
        if cap is None or cap.suspended:
            return orig_compile(kernel, *args, **kw)
        return cap._direct_compile(orig_compile, kernel, args, kw)

    driver.compile_kernel = compile_kernel
    return [lambda: setattr(driver, "compile_kernel", orig_compile)]
