"""``--check``: compare what the kernel wrote with a reference, after the cell ran.

Syntax (each ``--check`` may be repeated; expressions are Python, evaluated in the notebook's
namespace after the cell):

- ``ACTUAL : EXPECTED`` e.g. ``--check "out: x + y"``: compare with tolerances;
- ``ACTUAL == EXPECTED``: the same comparison (with tolerances, not exact equality);
- any other expression: passes when it is true (``all()`` of a tensor), e.g.
  ``--check "torch.allclose(out, x + y)"``.

Tolerances: ``--atol``/``--rtol``; by default torch.testing's for the actual dtype (float32:
rtol 1.3e-6, atol 1e-5; float16: 1e-3, 1e-5; bfloat16: 1.6e-2, 1e-5); integers and bools exact.
An element fails when ``|actual - expected| > atol + rtol * |expected|`` (NaN never matches).
"""

from __future__ import annotations

import ast
import io
import math
import tokenize
from dataclasses import dataclass
from typing import Any

__all__ = ["CheckSpec", "evaluate", "parse_check", "skipped", "tolerance"]

_DEFAULT_TOL = {
    "float16": (1e-3, 1e-5),
    "bfloat16": (1.6e-2, 1e-5),
    "float32": (1.3e-6, 1e-5),
    "float64": (1e-7, 1e-7),
    "complex64": (1.3e-6, 1e-5),
    "complex128": (1e-7, 1e-7),
    "float8_e4m3fn": (0.125, 0.0625),
    "float8_e5m2": (0.25, 0.125),
}


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


def _num(x: float | None) -> float | None:
    if x is None or not isinstance(x, float) or math.isfinite(x):
        return x
    return None


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
    spec: CheckSpec, namespace: dict[str, Any], atol: float | None = None, rtol: float | None = None
) -> dict[str, Any]:
    """Evaluate one check in ``namespace``; never raises (status 'error' carries the reason)."""
    import torch

    def ev(src: str) -> Any:
        return eval(compile(src, "<--check>", "eval"), namespace)  # noqa: S307 - the user's own expression

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
            actual, expected = ev(spec.actual), ev(spec.expected)
    except Exception as e:
        return _error(spec, f"{type(e).__name__}: {e}")
    try:
        return _compare(spec, actual, expected, atol, rtol)
    except Exception as e:
        return _error(spec, f"cannot compare {spec.actual} with {spec.expected}: {type(e).__name__}: {e}")


def tolerance(dtype: str, atol: float | None, rtol: float | None) -> tuple[float, float, str]:
    """(rtol, atol, a sentence saying which and why) for comparing outputs of ``dtype``."""
    d_rtol, d_atol = _DEFAULT_TOL.get(dtype, (0.0, 0.0))
    exact = dtype not in _DEFAULT_TOL
    src = "exact: integer/bool" if exact else f"{dtype} default"
    if atol is not None or rtol is not None:
        src = "--atol/--rtol" if atol is not None and rtol is not None else f"--atol/--rtol, else the {src}"
    rtol = d_rtol if rtol is None else rtol
    atol = d_atol if atol is None else atol
    return rtol, atol, f"|actual - expected| <= {atol:.3g} + {rtol:.3g}*|expected|, {src}"


def compare(label: str, actual: Any, expected: Any, atol: float | None = None, rtol: float | None = None
            ) -> dict[str, Any]:
    """``actual`` against ``expected`` with the tolerances of ``actual``'s dtype (or those given), as a check
    named ``label``: status "passed"/"failed", the errors and the first mismatch."""
    return _compare(CheckSpec(label, label, "expected"), actual, expected, atol, rtol)


def _compare(spec: CheckSpec, actual: Any, expected: Any, atol: float | None, rtol: float | None) -> dict[str, Any]:
    import torch

    a = torch.as_tensor(actual)
    e = torch.as_tensor(expected)
    if a.device.type != "cpu":
        a = a.detach().cpu()
    if e.device.type != "cpu":
        e = e.detach().cpu()
    dname = str(a.dtype).replace("torch.", "")
    rtol, atol, why = tolerance(dname, atol, rtol)
    out = skipped(spec, "")
    out.update(atol=atol, rtol=rtol, total=int(a.numel()), tolerance=why)
    if tuple(a.shape) != tuple(e.shape):
        if e.numel() == 1:
            e = e.reshape(()).expand(a.shape)
        else:
            out.update(status="failed", message=f"shape {tuple(a.shape)} != expected shape {tuple(e.shape)}")
            return out
    if a.is_complex() or e.is_complex():
        a64, e64 = a.to(torch.complex128), e.to(torch.complex128)
    else:
        a64, e64 = a.to(torch.float64), e.to(torch.float64)
    diff = (a64 - e64).abs()
    bad = ~(diff <= atol + rtol * e64.abs())  # NaN in either side -> bad
    n_bad = int(bad.sum())
    finite = diff[torch.isfinite(diff)]
    max_abs = float(finite.max()) if finite.numel() else (0.0 if diff.numel() == 0 else None)
    denom = e64.abs()
    rel = diff[denom > 0] / denom[denom > 0]
    rel = rel[torch.isfinite(rel)]
    max_rel = float(rel.max()) if rel.numel() else 0.0
    out.update(max_abs_err=_num(max_abs), max_rel_err=_num(max_rel), mismatched=n_bad)
    if n_bad == 0:
        out.update(status="passed", message=f"{a.numel()} elements match ({why})")
        return out
    idx = [int(i) for i in torch.nonzero(bad)[0].tolist()] if bad.dim() else []
    got = a64[tuple(idx)].item() if idx or a64.dim() == 0 else None
    want = e64[tuple(idx)].item() if idx or e64.dim() == 0 else None
    out.update(
        status="failed",
        first_mismatch=idx,
        message=f"{n_bad} of {a.numel()} elements differ; first at {list(idx)}: got {got!r}, expected {want!r} "
                f"({why})",
    )
    return out
