"""Turn launch-style arguments into a Triton specialization, exactly as the JIT would."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

from workbench.compile.triton_reach import jit_file_line, specialize
from workbench.errors import ArgumentError

_OPTION_NAMES = {"num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion", "debug",
                 "launch_cooperative_grid", "launch_pdl", "sanitize_overflow", "ptx_options",
                 "ir_override", "instrumentation_mode", "ctas_per_cga"}


@dataclass
class Bound:
    signature: dict[str, str]
    constexprs: dict[Any, Any]
    attrs: dict[Any, Any]
    options: Any  # backend options dataclass


def _where(fn) -> tuple[str | None, int | None]:
    try:
        return jit_file_line(fn)
    except Exception:
        return None, None


def _cluster_options(kwargs: dict[str, Any]) -> dict[str, Any]:
    """TLX's ``ctas_per_cga=(N, 1, 1)`` is Triton's ``num_ctas=N`` (uTLX converts it the same way at launch)."""
    kwargs = dict(kwargs)
    cga = kwargs.pop("ctas_per_cga", None)
    if cga is not None:
        dims = tuple(int(d) for d in cga)
        if len(dims) != 3 or dims[1:] != (1, 1):
            raise ArgumentError(f"ctas_per_cga={cga!r}: only (N, 1, 1) clusters exist on upstream Triton",
                                hint="use ctas_per_cga=(2, 1, 1) or similar")
        if dims[0] != 1:
            kwargs["num_ctas"] = dims[0]
    return kwargs


def bind(fn, backend, args: tuple, kwargs: dict[str, Any]) -> Bound:
    """Bind ``args``/``kwargs`` against JITFunction ``fn`` and compute signature, constexprs, attrs."""
    kwargs = _cluster_options(kwargs)
    filename, line = _where(fn)
    names = [p.name for p in fn.params]
    unknown = [k for k in kwargs if k not in names and k not in _OPTION_NAMES]
    if unknown:
        raise ArgumentError(
            f"{fn.__name__}() got unexpected keyword argument(s) {', '.join(map(repr, unknown))}",
            filename=filename, lineno=line,
            hint=f"the kernel's parameters are: {', '.join(names)}; compile options: "
                 + ", ".join(sorted(_OPTION_NAMES)),
        )
    try:
        inspect.signature(fn.fn).bind(*args, **{k: v for k, v in kwargs.items() if k in names})
    except TypeError as e:
        raise ArgumentError(
            f"arguments do not match {fn.__name__}({', '.join(names)}): {e}",
            filename=filename, lineno=line,
            hint="pass every parameter the kernel declares, constexprs as keywords or positionally",
        ) from None
    for i, (p, value) in enumerate(zip(fn.params, list(args) + [kwargs.get(n) for n in names[len(args):]])):
        if p.is_constexpr or value is None:
            continue
        if hasattr(value, "data_ptr") and not hasattr(value, "dtype"):
            raise ArgumentError(f"argument {p.name!r} (#{i}) has data_ptr() but no dtype",
                                filename=filename, lineno=line)
    opts = dict(kwargs)
    # what JITFunction.run adds to every launch, so the Triton cache key is the launch's own
    opts["debug"] = opts.get("debug", fn.debug) or _knobs().runtime.debug
    opts.setdefault("instrumentation_mode", _knobs().compilation.instrumentation_mode)
    try:
        options, signature, constexprs, attrs = specialize(fn, backend, args, opts)
    except (TypeError, ValueError, KeyError, AttributeError) as e:
        bad = _first_unsupported(fn, args, kwargs)
        raise ArgumentError(
            f"cannot build a kernel signature for {fn.__name__}: {e}" + (f" (argument {bad})" if bad else ""),
            filename=filename, lineno=line,
            hint="pass torch tensors (CPU tensors are fine), TensorDescriptors, ints, floats, bools, "
                 "or constexprs (as keywords); or give signature={...}",
        ) from None
    return Bound(signature, constexprs, attrs, options)


def _knobs():
    from triton import knobs

    return knobs


def _first_unsupported(fn, args, kwargs) -> str | None:
    names = [p.name for p in fn.params]
    values = dict(zip(names, args)) | {k: v for k, v in kwargs.items() if k in names}
    for p in fn.params:
        v = values.get(p.name)
        if p.is_constexpr:
            continue
        if not isinstance(v, (int, float, bool, type(None))) and not hasattr(v, "data_ptr") \
                and not hasattr(v, "base"):
            return f"{p.name!r} of type {type(v).__name__}"
    return None


def bind_signature(fn, backend, signature: dict[str, str], constexprs: dict[str, Any],
                   kwargs: dict[str, Any]) -> Bound:
    """The ``signature=`` form: {'x_ptr': '*fp32', 'n': 'i32', 'BLOCK': 'constexpr'} + constexpr values."""
    filename, line = _where(fn)
    names = [p.name for p in fn.params]
    missing = [n for n in names if n not in signature and n not in constexprs]
    extra = [n for n in signature if n not in names]
    if missing or extra:
        raise ArgumentError(
            f"signature does not match {fn.__name__}({', '.join(names)})"
            + (f"; missing: {', '.join(missing)}" if missing else "")
            + (f"; unknown: {', '.join(extra)}" if extra else ""),
            filename=filename, lineno=line,
            hint="give a type for every parameter, e.g. {'x_ptr': '*fp32', 'n': 'i32'}, "
                 "and constexpr values as keywords",
        )
    sig = {n: ("constexpr" if n in constexprs else signature[n]) for n in names}
    consts = {(names.index(n),): v for n, v in constexprs.items()}
    opts = {k: v for k, v in _cluster_options(kwargs).items() if k in _OPTION_NAMES}
    options = backend.parse_options(opts)
    return Bound(sig, consts, {}, options)
