"""What ``workbench.export`` needs from a live ``%%tlx`` cell run, kept on its Report (``Report.launch``).

A Report's JSON says what ran (kernel source, argument shapes and dtypes, options). A reproducer needs more,
which only the cell run has: the kernel object (to find the ``@triton.jit`` helpers and constants it uses),
which notebook names in ``--check``/``--bench-ref`` are which kernel arguments (``c1`` is the storage of
``c_desc.base``), the exact specialization Triton compiled (signature, constexprs, divisibility attributes),
and the tensors' values where they are small enough to save. :func:`record_launch` takes all that at the end
of the cell, the tensors as a ``launch_record.Record``: held by weak reference only (a Report must not keep GPU
memory alive), so values are saved only while the notebook still holds them, else the reproducer makes inputs
from shape, dtype and seed.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

from workbench.compile.binding import _OPTION_NAMES, bind
from workbench.compile.targets import parse_target
from workbench.compile.tuners import resolved
from workbench.errors import WorkbenchError
from workbench.run.fresh import _names
from workbench.run.launch_record import Record, View, is_tensor, tensors_in
from workbench.run.verify import parse_check

__all__ = ["Launch", "option_number", "record_launch", "unquote"]


@dataclass
class Launch:
    """The last launch of one kernel in a cell, and the cell's expressions resolved against the notebook."""

    kernel: Any  # the JITFunction
    grid: tuple[int, ...] | None
    record: Record  # the parameters' values (a storage of its own for each tensor an expression names, too)
    options: dict[str, Any]  # launch options: num_warps, num_stages, ...
    signature: dict[str, str]  # Triton's specialization of this launch (for a compile without a GPU)
    constexprs: dict[str, Any]
    attrs: dict[tuple, Any]
    target: str
    checks: list[str] = field(default_factory=list)  # --check expressions, as written
    atol: float | None = None
    rtol: float | None = None
    bench_ref: str | None = None
    flops: float | None = None
    bytes: float | None = None
    names: dict[str, Any] = field(default_factory=dict)  # expression text -> value (tensors as the record's View)
    outputs: set = field(default_factory=set)  # the record's storages that the checks' ACTUAL sides evaluate to
    compile_only: bool = False  # the cell said --compile-only: its reproducer compiles and launches nothing


def unquote(s: str) -> str:
    """A ``%%tlx`` option's text without the quotes around it."""
    s = s.strip()
    return s[1:-1] if len(s) >= 2 and s[0] == s[-1] and s[0] in "\"'" else s


def option_number(option: str, expr: str, ns: dict[str, Any]) -> float:
    """A ``%%tlx`` count option's expression (``--flops 2*M*N*K``) evaluated in the notebook's namespace, as a number;
    an error (a WorkbenchError) names the option."""
    text = unquote(expr)
    try:
        return float(eval(compile(text, f"<{option}>", "eval"), ns))  # noqa: S307 - the user's own expression
    except Exception as e:
        raise WorkbenchError(f"{option} {text!r} raised {type(e).__name__}: {e}") from e


def _number(option: str, expr: str | None, ns: dict[str, Any]) -> float | None:
    try:
        return option_number(option, expr, ns) if expr else None
    except WorkbenchError:
        return None


def _expression_names(exprs: list[str], ns: dict[str, Any], rec: Record) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for expr in exprs:
        try:
            found = _names(expr, ns)
        except SyntaxError:
            continue
        for text, value in found:
            out.setdefault(text, rec.view(value) if is_tensor(value) else value)
    return out


def _outputs(actual: str | None, ns: dict[str, Any], rec: Record) -> set[int]:
    """The storages a check's ACTUAL side evaluates to (what ``--check`` poisons before its fresh run)."""
    if not actual:
        return set()
    if any(isinstance(n, ast.Call) for n in ast.walk(ast.parse(actual, mode="eval"))):
        # evaluating a call could launch again: the tensors it names stand for what it returns
        return {v.storage for v in _expression_names([actual], ns, rec).values() if isinstance(v, View)}
    try:
        value = eval(compile(actual, "<--check>", "eval"), ns)  # noqa: S307 - the user's own expression
    except Exception:
        return set()
    return {rec.view(t).storage for t in tensors_in(value)}


def _specialization(fn: Any, bound: dict[str, Any], options: dict[str, Any],
                    target: str) -> tuple[dict[str, str], dict[str, Any], dict[tuple, Any]]:
    from triton.compiler import make_backend

    args = tuple(bound[n] for n in fn.arg_names if n in bound)
    b = bind(fn, make_backend(parse_target(target)), args, dict(options))
    names = list(fn.arg_names)
    consts = {names[k[0]] if len(k) == 1 and k[0] < len(names) else k: v for k, v in b.constexprs.items()}
    attrs = {k: v for k, v in b.attrs.items() if v}  # paths with no attribute say nothing
    return dict(b.signature), consts, attrs


def record_launch(entry: Any, args: Any, ns: dict[str, Any]) -> Launch | None:
    """The Launch of a captured kernel (``workbench.run.capture.Captured``) under the cell's options ``args``;
    None when the kernel was never bound to arguments (or anything here failed: a cell never fails for it)."""
    if not entry.bound:
        return None
    try:
        return _record(entry, args, ns)
    except Exception:
        return None


def _record(entry: Any, args: Any, ns: dict[str, Any]) -> Launch:
    fn, bound = resolved(entry.kernel, entry.bound)  # a direct workbench.compile(tuner, config=...) too
    names = list(getattr(fn, "arg_names", []) or [])
    rec = Record.of({n: bound[n] for n in names if n in bound})
    options = {k: v for k, v in bound.items() if k not in names and k in _OPTION_NAMES}
    target = getattr(args, "target", None) or "sm_90"
    try:
        signature, constexprs, attrs = _specialization(fn, bound, options, target)
    except Exception:
        signature, constexprs, attrs = {}, {}, {}
    checks = [unquote(c) for c in (getattr(args, "check", None) or [])]
    exprs, outputs = [], set()
    for c in checks:
        try:
            spec = parse_check(c)
        except SyntaxError:
            continue
        exprs += [e for e in (spec.actual, spec.expected) if e] if spec.actual else [spec.expr]
        outputs |= _outputs(spec.actual, ns, rec)
    bench_ref = unquote(args.bench_ref) if getattr(args, "bench_ref", None) else None
    exprs += [bench_ref] if bench_ref else []
    return Launch(kernel=fn, grid=tuple(entry.grid) if entry.grid else None, record=rec, options=options,
                  signature=signature, constexprs=constexprs, attrs=attrs, target=target, checks=checks,
                  atol=getattr(args, "atol", None), rtol=getattr(args, "rtol", None), bench_ref=bench_ref,
                  flops=_number("--flops", getattr(args, "flops", None), ns),
                  bytes=_number("--bytes", getattr(args, "bytes", None), ns),
                  names=_expression_names(exprs, ns, rec), outputs=outputs,
                  compile_only=bool(getattr(args, "compile_only", False)))
