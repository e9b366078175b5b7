"""A search's problem, made once in the caller's process: the kernel and its arguments as bytes and specs any
worker rebuilds, and each candidate made concrete (its options, the descriptor block shapes and constexprs its
pre_hook sets, its grid).

Pre_hooks run here on ``meta`` copies of the arguments (a hook that zeroes an output touches no data; the
caller's descriptors are never changed), exactly as Triton's autotuner calls them before a launch; GPU workers
call them again on their own tensors before each launch.
"""

from __future__ import annotations

import hashlib
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from workbench.compile import portable
from workbench.compile.tuners import base_jit
from workbench.errors import ArgumentError
from workbench.run.launch_record import Record, descriptor_shapes
from workbench.search.space import LAUNCH_OPTIONS, Candidate, configs_of, tuner_parts

__all__ = ["Problem", "prepare"]


@dataclass
class Problem:
    id: str
    name: str
    kernel: bytes  # workbench.compile.portable.dumps of the JITFunction
    arg_names: list[str]
    constexprs: list[str]
    positional: list[str]  # the names of the call's positional arguments (the reference gets them in order)
    record: Record  # the call's named values (positional arguments bound to their names), taken with data
    target: str
    reference: bytes | None = None  # portable.dumps of the reference callable
    outputs: list[str] | None = None  # argument names the kernel writes, compared with the reference's values
    atol: float | None = None
    rtol: float | None = None
    flops: float | None = None
    bytes: float | None = None
    rounds: int = 5
    timeout_s: float | None = None
    skip_on_error: bool = True
    tuner_pre_hook: bytes | None = None  # an autotuner's own pre_hook (called after the config's)
    # uTLX installs Triton's stages hook when TLX is imported (part of every compile's cache key): workers load it
    # when the caller had, so that their compiles are the caller's
    utlx: bool = field(default_factory=lambda: "triton.language.extra.tlx" in sys.modules)
    extras: dict[str, Any] = field(default_factory=dict)


def _bind(fn: Any, args: tuple, kwargs: dict[str, Any]) -> dict[str, Any]:
    names = list(fn.arg_names)
    if len(args) > len(names):
        raise ArgumentError(f"{fn.__name__} takes {len(names)} arguments, the search got {len(args)} positional ones",
                            hint=f"its parameters: {', '.join(names)}")
    named = dict(zip(names, args))
    for k, v in kwargs.items():
        if k not in names:
            raise ArgumentError(f"{fn.__name__} has no parameter {k!r}", hint=f"its parameters: {', '.join(names)}")
        if k in named:
            raise ArgumentError(f"{fn.__name__}'s {k!r} is given twice (by position and by name)")
        named[k] = v
    return named


def _concrete(cand: Candidate, record: Record, params: list[str], grid: Any, tuner_hook: Callable | None) -> None:
    """Run the candidate's pre_hook(s) on meta copies, keep what they set, evaluate its grid."""
    values, _ = record.build("meta")
    full = {**values, **cand.options}
    try:
        if cand.pre_hook is not None:
            cand.pre_hook(full)
        if tuner_hook is not None:
            tuner_hook(full)
    except Exception as e:
        cand.error = f"the config's pre_hook raised {type(e).__name__}: {e}"
        return
    cand.blocks = descriptor_shapes(full)
    for k, v in full.items():  # constexprs a hook set (e.g. NUM_SMS)
        if k in params and k not in values and k not in cand.options:
            cand.options[k] = v
    if grid is None:
        return
    try:
        g = grid(full) if callable(grid) else grid
        g = tuple(int(x) for x in (g if isinstance(g, tuple | list) else (g,)))
    except Exception as e:
        cand.error = f"grid({cand.label()}) raised {type(e).__name__}: {e}"
        return
    cand.grid = g


def _problem_id(name: str, kernel: bytes, record: Record, target: str) -> str:
    h = hashlib.sha256(kernel)
    h.update(repr(sorted((k, repr(v)) for k, v in record.args.items())).encode())
    h.update(target.encode())
    return f"{name}-{h.hexdigest()[:16]}"


def prepare(kernel: Any, space: Any, args: tuple, kwargs: dict[str, Any], *, grid: Any, target: str,
            reference: Callable | None, outputs: list[str] | None, **settings: Any) -> tuple[Problem, list[Candidate]]:
    """The problem and its candidates; raises ``ArgumentError``/``SearchSpaceError`` for input that cannot work."""
    fn = base_jit(kernel)
    if not hasattr(fn, "arg_names"):
        raise ArgumentError(f"{getattr(kernel, '__name__', kernel)!r} is not a Triton kernel",
                            hint="search a @triton.jit function (TLX too) or a triton.autotune-wrapped one")
    params = list(fn.arg_names)
    launch_opts = {k: v for k, v in kwargs.items() if k in LAUNCH_OPTIONS and k not in params}
    kwargs = {k: v for k, v in kwargs.items() if k not in launch_opts}
    named = _bind(fn, args, kwargs)
    cands = configs_of(kernel, space, params, named, {**kwargs, **launch_opts})
    for c in cands:  # the call's launch options (num_warps=...) apply to every config that does not set them
        c.options = {**launch_opts, **c.options}
    record = Record.of(named, with_data=True)
    parts = tuner_parts(kernel)
    tuner_hook = parts["pre_hook"] if parts else None
    for c in cands:
        _concrete(c, record, params, grid, tuner_hook)
    for name in outputs or []:
        if name not in params:
            raise ArgumentError(f"outputs names {name!r}, which is not a parameter of {fn.__name__}",
                                hint=f"its parameters: {', '.join(params)}")
        if record.root(name) is None:
            raise ArgumentError(f"outputs names {name!r}, which is not a tensor or descriptor argument of the call")
    try:
        data = portable.dumps(fn)
        ref = portable.dumps(reference) if reference is not None else None
        hook = portable.dumps(tuner_hook) if tuner_hook is not None else None
    except Exception as e:
        raise ArgumentError(f"the kernel, reference or hook cannot be sent to the search's workers: "
                            f"{type(e).__name__}: {e}", hint="define them at the top level of a cell or module") from e
    consts = [p.name for p in fn.params if p.is_constexpr]
    problem = Problem(_problem_id(fn.__name__, data, record, target), fn.__name__, data, params, consts,
                      params[:len(args)], record, target, ref, list(outputs) if outputs else None,
                      tuner_pre_hook=hook, **settings)
    return problem, cands


def format_exception(e: BaseException) -> str:
    return "".join(traceback.format_exception_only(type(e), e)).strip()
