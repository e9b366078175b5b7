"""Autotuner and Heuristics wrappers: the one place that looks through them to the ``JITFunction``."""

from __future__ import annotations

from typing import Any


def base_jit(kernel: Any) -> Any:
    """The ``JITFunction`` under any ``Autotuner``/``Heuristics`` wrappers (``kernel`` itself if none)."""
    for _ in range(16):
        if hasattr(kernel, "params") and hasattr(kernel, "arg_names"):
            return kernel
        inner = getattr(kernel, "fn", None)
        if inner is None or inner is kernel:
            return kernel
        kernel = inner
    return kernel


def arg_names(kernel: Any) -> list[str]:
    base = base_jit(kernel)
    return list(getattr(base, "arg_names", None) or [])


def unwrap(kernel: Any, args: tuple, options: dict[str, Any], config: Any = None,
           pre_hook: bool = True) -> tuple[Any, dict[str, Any], Any]:
    """Apply what the wrappers would on a launch: heuristics' values, one autotune config (``config``:
    a ``triton.Config``, an index, or None for the first) and its ``pre_hook`` (unless ``pre_hook=False``).

    Returns ``(jit_function, options, chosen_config_or_None)``; ``options`` gains the config's kwargs
    (num_warps, num_stages, constexprs...), without overriding what the caller passed."""
    from triton.runtime.autotuner import Autotuner, Heuristics

    options = dict(options)
    chosen = None
    while isinstance(kernel, (Autotuner, Heuristics)):
        names = arg_names(kernel)
        nargs = dict(zip(names, args)) | {k: v for k, v in options.items() if k in names}
        if isinstance(kernel, Heuristics):
            for name, rule in kernel.values.items():
                options.setdefault(name, rule(nargs))
        else:
            cfgs = kernel.configs
            cfg = config if config is not None and not isinstance(config, int) else cfgs[config or 0]
            chosen = cfg
            for k, v in cfg.all_kwargs().items():
                options.setdefault(k, v)
            if pre_hook and cfg.pre_hook is not None:
                cfg.pre_hook(nargs | {k: v for k, v in options.items() if k in names})
        kernel = kernel.fn
    return kernel, options, chosen


def resolved(kernel: Any, bound: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """``(jit_function, bound)`` as a launch or compile of ``kernel`` with these bound arguments compiled: the
    ``config`` entry a ``workbench.compile(tuner, config=...)`` call takes (the first config when it has none) and
    heuristics' values filled in where ``bound`` has none; no ``pre_hook`` runs (it ran at that compile)."""
    bound = dict(bound)
    config = bound.pop("config", None) if "config" not in arg_names(kernel) else None
    jit, options, _ = unwrap(kernel, (), bound, config, pre_hook=False)
    return jit, options
