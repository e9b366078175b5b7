"""Launch arguments: bound to the kernel's parameters, described for the Report (as their
``launch_record``), and reduced to a cheap stand-in for Triton's specialization (to tell launches of one
compiled kernel apart)."""

from __future__ import annotations

import functools
import inspect
from typing import Any

from workbench.compile.tuners import arg_names, base_jit
from workbench.run.launch_record import Record, is_tensor

__all__ = ["bind_arguments", "describe_arguments"]


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
    for name, default in _defaults(getattr(base, "fn", base)):
        bound.setdefault(name, default)
    return bound


@functools.lru_cache(maxsize=256)
def _defaults(fn: Any) -> tuple[tuple[str, Any], ...]:
    """(parameter, default) of a kernel's Python function (``inspect.signature`` is most of a launch's capture
    cost: it is read once per function)."""
    try:
        return tuple((p.name, p.default) for p in inspect.signature(fn).parameters.values()
                     if p.default is not inspect.Parameter.empty)
    except (TypeError, ValueError):
        return ()


def describe_arguments(kernel: Any, bound: dict[str, Any]) -> list[dict[str, Any]]:
    """The schema's run ``arguments`` for bound launch arguments."""
    return Record.of(bound).arguments(_constexpr_names(kernel))


def launch_spec(kernel: Any, bound: dict[str, Any]) -> tuple[Any, ...]:
    """What tells two launches of ``kernel`` apart for compiling: each bound argument's specialization (``_spec``),
    constexprs and launch options (``num_warps``, ``num_stages``, ...: names that are not parameters) by value, so
    two autotune configs that differ only in their options are two launches."""
    consts = _constexpr_names(kernel)
    params = set(arg_names(kernel))
    return tuple((k, _spec(v, k in consts or k not in params)) for k, v in bound.items())


def _spec(v: Any, constexpr: bool) -> Any:
    """A cheap stand-in for Triton's specialization of one argument (for de-duplicating launches)."""
    if constexpr:
        return ("c", repr(v))
    if is_tensor(v):
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
