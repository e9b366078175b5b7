"""``--check``: compare what the kernel wrote with a reference, after the cell ran.

Syntax (each ``--check`` may be repeated; expressions are Python, evaluated in the notebook's
namespace after the cell):

- ``ACTUAL : EXPECTED`` e.g. ``--check "out: x + y"``: compare with tolerances;
- ``ACTUAL == EXPECTED``: the same comparison (with tolerances, not exact equality);
- any other expression: passes when it is true (``all()`` of a tensor), e.g.
  ``--check "torch.allclose(out, x + y)"``.

The verdict is ``workbench.run.judge``'s: by default EXPECTED is evaluated again with its low-precision inputs
upcast (fp16/bf16/fp8 to float32, float32 to float64) and the output must be within a few ulps of the kernel's
working precision at the output's scale, elementwise and in norm (the rule is stated with every verdict);
``--atol``/``--rtol`` give the classic ``|actual - expected| <= atol + rtol * |expected|`` instead. Integers and
bools are compared exactly; NaN matches only NaN.
"""

from __future__ import annotations

import ast
import io
import tokenize
from dataclasses import dataclass
from typing import Any

from workbench.run.judge import judge, reference_at_high_precision

__all__ = ["CheckSpec", "compare", "evaluate", "expected_value", "parse_check", "skipped"]


@dataclass
class CheckSpec:
    expr: str  # as the user wrote it
    actual: str | None  # for comparisons
    expected: str | None
    col: int = 0  # where expr starts in the magic line (for carets)


def _top_level_colon(expr: str) -> int | None:
    depth = 0
    try:
        for tok in tokenize.generate_tokens(io.StringIO(expr).readline):
            if tok.type == tokenize.OP:
                if tok.string in "([{":
                    depth += 1
                elif tok.string in ")]}":
                    depth -= 1
                elif tok.string == ":" and depth == 0:
                    return tok.start[1]
            elif tok.type == tokenize.NAME and tok.string == "lambda" and depth == 0:
                return None
    except (tokenize.TokenError, IndentationError):
        return None
    return None


def parse_check(expr: str) -> CheckSpec:
    """Split a ``--check`` expression; raises SyntaxError for invalid Python."""
    text = expr.strip()
    pos = _top_level_colon(text)
    if pos is not None:
        actual, expected = text[:pos].strip(), text[pos + 1 :].strip()
        for part in (actual, expected):
            ast.parse(part, mode="eval")
        return CheckSpec(expr, actual, expected)
    tree = ast.parse(text, mode="eval")
    body = tree.body
    if isinstance(body, ast.Compare) and len(body.ops) == 1 and isinstance(body.ops[0], ast.Eq):
        return CheckSpec(expr, ast.unparse(body.left), ast.unparse(body.comparators[0]))
    return CheckSpec(expr, None, None)


def skipped(spec: CheckSpec, why: str) -> dict[str, Any]:
    return {
        "expr": spec.expr,
        "actual": spec.actual,
        "expected": spec.expected,
        "status": "skipped",
        "message": why,
        "atol": None,
        "rtol": None,
        "max_abs_err": None,
        "max_rel_err": None,
        "mismatched": None,
        "total": None,
        "first_mismatch": None,
    }


def _error(spec: CheckSpec, msg: str) -> dict[str, Any]:
    d = skipped(spec, "")
    d.update(status="error", message=msg)
    return d


def evaluate(
    spec: CheckSpec, namespace: dict[str, Any], atol: float | None = None, rtol: float | None = None, *,
    tf32: bool = False,
) -> dict[str, Any]:
    """Evaluate one check in ``namespace``; never raises (status 'error' carries the reason). ``tf32``: the
    cell's kernels round fp32 dot operands to tf32 (the rule's working precision)."""
    import torch

    def ev(src: str) -> Any:
        return eval(compile(src, "<--check>", "eval"), namespace)  # noqa: S307 - the user's own expression

    note, inputs = None, []
    try:
        if spec.actual is None:
            value = ev(spec.expr)
            if isinstance(value, tuple) and len(value) == 2:
                actual, expected = value
            else:
                ok = bool(torch.as_tensor(value).all()) if not isinstance(value, bool) else value
                d = skipped(spec, "")
                d.update(status="passed" if ok else "failed", message="true" if ok else f"{spec.expr} is false")
                return d
        else:
            actual = ev(spec.actual)
            expected, note, inputs = expected_value(spec.expected, namespace, actual)
    except Exception as e:
        return _error(spec, f"{type(e).__name__}: {e}")
    try:
        out = _compare(spec, actual, expected, atol, rtol, inputs=inputs, tf32=tf32)
    except Exception as e:
        return _error(spec, f"cannot compare {spec.actual} with {spec.expected}: {type(e).__name__}: {e}")
    if note and out["status"] != "error":
        out["reference_note"] = note
    return out


def _expected_inputs(expr: str, ns: dict[str, Any]) -> dict[str, Any]:
    """The names EXPECTED uses whose values hold floating-point tensors (what is upcast)."""
    tree = ast.parse(expr, mode="eval")
    names = dict.fromkeys(n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id in ns)
    return {n: ns[n] for n in names if _floating_tensors(ns[n])}


def _floating_tensors(v: Any) -> list[Any]:
    if hasattr(v, "is_floating_point") and hasattr(v, "dtype"):
        return [v] if v.is_floating_point() else []
    if isinstance(v, tuple | list):
        return [t for x in v for t in _floating_tensors(x)]
    return []


def expected_value(expr: str, ns: dict[str, Any], actual: Any = None) -> tuple[Any, str | None, list[Any]]:
    """EXPECTED's value at a higher precision where it allows it (its low-precision inputs upcast, ``judge``'s
    rule), else as written; with why not (or None) and the dtypes of the floating inputs it names."""
    code = compile(expr, "<--check>", "eval")
    inputs = _expected_inputs(expr, ns)
    dtypes = [t.dtype for v in inputs.values() for t in _floating_tensors(v)]

    def low() -> Any:
        return eval(code, ns)  # noqa: S307 - the user's own expression

    if not inputs or not hasattr(actual, "shape"):
        return low(), None, dtypes
    value, why = reference_at_high_precision(
        lambda up: eval(code, {**ns, **{k: up(v) for k, v in inputs.items()}}), actual)  # noqa: S307 - the user's
    return (value, None, dtypes) if why is None else (low(), why, dtypes)


def compare(label: str, actual: Any, expected: Any, atol: float | None = None, rtol: float | None = None, *,
            inputs: list[Any] | tuple = (), tf32: bool = False) -> dict[str, Any]:
    """``actual`` against ``expected`` under ``judge``'s rule (``inputs``: the floating inputs' dtypes), as a check
    named ``label``: status "passed"/"failed", the rule, the error distribution and the first mismatch."""
    return _compare(CheckSpec(label, label, "expected"), actual, expected, atol, rtol, inputs=inputs, tf32=tf32)


def _compare(spec: CheckSpec, actual: Any, expected: Any, atol: float | None, rtol: float | None, *,
             inputs: list[Any] | tuple = (), tf32: bool = False) -> dict[str, Any]:
    v = judge(actual, expected, label=spec.actual or spec.expr, inputs=inputs, tf32=tf32, atol=atol, rtol=rtol)
    out = skipped(spec, "")
    out.update(v.to_dict())
    return out
