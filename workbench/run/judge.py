"""One judge for every verdict: a kernel's output against a reference's, with a default rule that passes correct
low-precision kernels and fails real bugs, the error distribution behind the verdict, and guards that name the
ways an output can look right without being computed.

The default rule (no ``atol``/``rtol`` given) is written in the kernel's *working precision* ``w``: the lowest
of the output's dtype and the floating-point inputs' dtypes (fp8 inputs count as bf16: they are exact in the
reference, and the kernel works on them with wider accumulators), ``tf32`` when the kernel's dots take fp32
operands as tf32, and never finer than ``FP32_WORK_BITS`` mantissa bits (fp32 reductions round in their own
order). With ``u_w(x)`` the spacing of ``w`` at ``x`` (one ulp), each element's error is counted in ulps of
``w`` at the output's scale::

    ulps_i = |a_i - e_i| / u_w(max(|e_i|, rms(e)))

(the floor at ``rms(e)`` keeps an element that cancels to nearly zero from counting its absolute error against
a tiny ulp), and the output passes when

- every element is within ``ELEMENT_ULPS`` of those ulps, and
- the norm-relative error ``||a - e|| / ||e||`` is within ``NORM_ULPS`` ulps of 1 (``NORM_ULPS * eps_w``),

both doubled when the reference could not be computed at a higher precision than the kernel's (its own
rounding then counts too). A wrong K-loop bound, a skipped tile, a wrong scale, swapped operands, an off-by-one
mask or a race that shows all give errors of whole percents on some elements, far beyond these bounds; a
correct fp16 GEMM with a 16k-long fp32 reduction stays within one ulp.

With ``atol``/``rtol`` the rule is the classic ``|a - e| <= atol + rtol * |e|`` for every element; integer and
boolean outputs are compared exactly. NaN in the reference must be NaN in the output, infinities must match.

Every verdict (``Verdict.to_dict``) says the rule in words, the error distribution (max and p99 ulps, the
norm-relative error, where the worst element is and its values) and the guards that fired:
``all-zero``/``constant`` outputs where the reference is neither, ``nan``/``inf`` where the reference is finite,
and those the harness adds (``inputs-modified``, ``outside-write``, ``cached-output``: see ``guard``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from workbench.ir.json_values import json_num

__all__ = ["ELEMENT_ULPS", "NORM_ULPS", "Rule", "Verdict", "guard", "judge", "reference_at_high_precision",
           "rule_for", "upcast"]

ELEMENT_ULPS = 8.0  # an element may be this many working-precision ulps (at the output's scale) off
NORM_ULPS = 4.0  # the norm-relative error may be this many working-precision epsilons
FP32_WORK_BITS = 16  # fp32 work is judged as if it had this many mantissa bits (reductions, fast exp/rsqrt)
P99_SAMPLE = 1 << 22  # elements the p99 is read from (evenly strided over the output)

_MANTISSA = {"float64": 52, "float32": 23, "tf32": 10, "float16": 10, "bfloat16": 7, "complex128": 52,
             "complex64": 23, "float8_e4m3fn": 3, "float8_e4m3fnuz": 3, "float8_e5m2": 2, "float8_e5m2fnuz": 2,
             "float8_e8m0fnu": 0}
_FP8 = {k for k in _MANTISSA if k.startswith("float8")}
_HIGHER = {"float16": "float32", "bfloat16": "float32", "float32": "float64", "complex64": "complex128",
           **{k: "float32" for k in _FP8}}


def _name(dtype: Any) -> str:
    return str(dtype).replace("torch.", "")


def _floating(dtype: str) -> bool:
    return dtype in _MANTISSA


# ---------------------------------------------------------------------------------------------------- the rule
@dataclass(frozen=True)
class Rule:
    """What an output must satisfy: the default ulp rule in a working precision, or the caller's atol/rtol."""

    output: str  # the output's dtype
    working: str  # the precision the ulps are counted in ("bfloat16", "tf32", ...)
    bits: int  # its mantissa bits
    reference: str  # the precision the reference was computed in ("float32", or the output's own)
    atol: float | None = None  # the caller's tolerances: the classic rule instead of the default
    rtol: float | None = None
    why: str = ""  # how the working precision was chosen

    @property
    def exact(self) -> bool:
        return not _floating(self.output) and self.atol is None and self.rtol is None

    @property
    def classic(self) -> bool:
        return self.atol is not None or self.rtol is not None

    @property
    def same_precision(self) -> bool:
        """The reference is no more precise than the kernel: its rounding counts too (the bounds double)."""
        return _MANTISSA.get(self.reference, 0) <= self.bits

    @property
    def element_ulps(self) -> float:
        return ELEMENT_ULPS * (2 if self.same_precision else 1)

    @property
    def norm_bound(self) -> float:
        return NORM_ULPS * (2 if self.same_precision else 1) * 2.0 ** -self.bits

    def text(self) -> str:
        if self.exact:
            return f"exact ({self.output})"
        if self.classic:
            atol, rtol = self.atol or 0.0, self.rtol or 0.0
            return f"|actual - expected| <= {atol:.3g} + {rtol:.3g}*|expected| (the given atol/rtol)"
        ref = "the same precision, so the bounds are doubled" if self.same_precision else self.reference
        return (f"within {self.element_ulps:g} {self.working} ulps of max(|expected|, rms(expected)) per element "
                f"and {self.norm_bound:.2g} norm-relative ({self.why}; reference in {ref})")


def rule_for(output: Any, inputs: Iterable[Any] = (), *, reference: Any = None, tf32: bool = False,
             atol: float | None = None, rtol: float | None = None) -> Rule:
    """The rule for an output of dtype ``output`` computed from inputs of dtypes ``inputs`` by a kernel (``tf32``:
    its dots round fp32 operands to tf32), against a reference computed in ``reference`` (default: the output's)."""
    out = _name(output)
    ref = _name(reference) if reference is not None else out
    if not _floating(out):
        return Rule(out, out, 0, ref, atol, rtol, "integer or boolean")
    cands = [(out, "the output's dtype")]
    for d in dict.fromkeys(_name(x) for x in inputs):
        if _floating(d):
            cands.append(("bfloat16", "fp8 inputs, wider accumulators") if d in _FP8 else (d, f"{d} inputs"))
    if tf32:
        cands.append(("tf32", "tf32 dots"))
    working, why = min(cands, key=lambda c: _MANTISSA[c[0]])
    bits = _MANTISSA[working]
    if bits > FP32_WORK_BITS:
        bits, why = FP32_WORK_BITS, f"{why}, counted at {FP32_WORK_BITS} bits for reductions and fast math"
    return Rule(out, working, bits, ref, atol, rtol, why)


# ---------------------------------------------------------------------------------------------------- the verdict
@dataclass
class Verdict:
    """One output judged: passed or not, under which rule, with what error."""

    label: str
    passed: bool
    rule: Rule
    total: int
    mismatched: int = 0
    max_ulps: float | None = None
    p99_ulps: float | None = None
    norm_rel_err: float | None = None
    max_abs_err: float | None = None
    max_rel_err: float | None = None
    worst: dict[str, Any] | None = None  # {"index": [...], "actual": x, "expected": y}
    first: dict[str, Any] | None = None  # the first element that breaks the rule, likewise
    guards: list[dict[str, str]] = field(default_factory=list)  # {"guard": name, "message": ...}
    problem: str | None = None  # a shape mismatch and the like: the comparison could not be made

    @property
    def status(self) -> str:
        return "passed" if self.passed else "failed"

    def summary(self) -> str:
        """One sentence: the verdict, where it fails first and worst, the error distribution, the rule."""
        if self.problem:
            return self.problem
        parts = [f"{self.total} elements match" if self.passed else
                 f"{self.mismatched} of {self.total} elements differ" if self.mismatched else
                 f"the norm-relative error {_fmt(self.norm_rel_err)} is over {self.rule.norm_bound:.2g}"]
        if not self.passed and self.first is not None:
            parts.append(f"first at {self.first['index']}: got {self.first['actual']!r}, expected "
                         f"{self.first['expected']!r}")
        w = self.worst
        if not self.passed and w is not None and (self.first is None or w["index"] != self.first["index"]):
            parts.append(f"worst at {w['index']}: got {w['actual']!r}, expected {w['expected']!r}")
        parts += [g["message"] for g in self.guards]
        if self.max_ulps is not None:
            parts.append(f"max {_fmt(self.max_ulps)} ulps, p99 {_fmt(self.p99_ulps)}, norm-relative "
                         f"{_fmt(self.norm_rel_err)}")
        return f"{'; '.join(parts)} ({self.rule.text()})"

    @property
    def first_mismatch(self) -> list[int] | None:
        return self.first["index"] if self.first is not None else None

    def to_dict(self) -> dict[str, Any]:
        """The check result's fields (the Report schema's ``check``: status and numbers, ``rule``, ``error``)."""
        r = self.rule
        return {"status": self.status, "message": self.summary(), "atol": r.atol, "rtol": r.rtol,
                "max_abs_err": json_num(self.max_abs_err), "max_rel_err": json_num(self.max_rel_err),
                "mismatched": self.mismatched, "total": self.total, "first_mismatch": self.first_mismatch,
                "tolerance": r.text(), "rule": r.text(),
                "error": {"max_ulps": json_num(self.max_ulps), "p99_ulps": json_num(self.p99_ulps),
                          "norm_rel_err": json_num(self.norm_rel_err), "working": r.working, "reference": r.reference,
                          "worst": self.worst},
                "guards": list(self.guards)}


def _fmt(x: float | None) -> str:
    if x is None:
        return "?"
    if not math.isfinite(x):
        return str(x)
    return f"{x:.3g}" if x < 1e4 else f"{x:.2e}"


def guard(name: str, message: str) -> dict[str, str]:
    """A guard finding (``inputs-modified``, ``outside-write``, ``cached-output``, ...) to add to a verdict."""
    return {"guard": name, "message": message}


# ---------------------------------------------------------------------------------------------------- judging
def judge(actual: Any, expected: Any, *, label: str = "output", rule: Rule | None = None,
          inputs: Iterable[Any] = (), reference: Any = None, tf32: bool = False, atol: float | None = None,
          rtol: float | None = None) -> Verdict:
    """``actual`` against ``expected`` (tensors or numbers) under ``rule`` (default: ``rule_for`` the actual's dtype,
    the ``inputs``' dtypes, ``tf32``, the ``reference``'s precision and ``atol``/``rtol``)."""
    import torch

    a = torch.as_tensor(actual).detach()
    e = torch.as_tensor(expected).detach()
    if e.device != a.device:
        e = e.to(a.device)
    if rule is None:
        rule = rule_for(a.dtype, inputs, reference=reference if reference is not None else e.dtype, tf32=tf32,
                        atol=atol, rtol=rtol)
    if tuple(a.shape) != tuple(e.shape):
        if e.numel() == 1:
            e = e.reshape(()).expand(a.shape)
        else:
            return Verdict(label, False, rule, int(a.numel()),
                           problem=f"shape {tuple(a.shape)} != expected shape {tuple(e.shape)}")
    v = Verdict(label, True, rule, int(a.numel()))
    if a.numel() == 0:
        return v
    wide = torch.complex128 if (a.is_complex() or e.is_complex()) else torch.float64
    a64, e64 = a.to(wide), e.to(wide)
    if a64.is_complex():
        a64, e64 = torch.view_as_real(a64), torch.view_as_real(e64)
    diff = (a64 - e64).abs()
    bad = _bad(a64, e64, diff, rule)
    _errors(v, a64, e64, diff, rule)
    v.mismatched = int(bad.sum())
    if not (rule.exact or rule.classic) and v.norm_rel_err is not None and v.norm_rel_err > rule.norm_bound:
        v.passed = False
    if v.mismatched:
        v.passed = False
        i = int(torch.nonzero(bad.reshape(-1))[0])
        v.first = {"index": _unravel(i, tuple(bad.shape)), "actual": float(a64.reshape(-1)[i]),
                   "expected": float(e64.reshape(-1)[i])}
    v.guards += _value_guards(a64, e64)
    if v.guards and any(g["guard"] in ("all-zero", "all-nan", "constant", "nan", "inf") for g in v.guards):
        v.passed = False
    return v


def _bad(a: Any, e: Any, diff: Any, rule: Rule) -> Any:
    """Elements that break the rule (NaN in the output where the reference is finite breaks any rule)."""
    import torch

    same_special = (torch.isnan(a) & torch.isnan(e)) | (torch.isinf(e) & (a == e))
    if rule.exact:
        ok = (a == e) | same_special
    elif rule.classic:
        ok = (diff <= (rule.atol or 0.0) + (rule.rtol or 0.0) * e.abs()) | same_special
    else:
        ok = (_ulps(diff, e, rule) <= rule.element_ulps) | same_special
    return ~ok


def _scale_floor(e: Any) -> float:
    import torch

    f = e[torch.isfinite(e)]
    return float(f.square().mean().sqrt()) if f.numel() else 0.0


def _ulps(diff: Any, e: Any, rule: Rule) -> Any:
    """Each element's error in ulps of the working precision at max(|e|, rms(e)) (NaN where e is not finite)."""
    import torch

    scale = e.abs().clamp(min=max(_scale_floor(e), 2.0 ** -126))
    ulp = torch.exp2(torch.floor(torch.log2(scale)) - rule.bits)
    return diff / ulp


def _errors(v: Verdict, a: Any, e: Any, diff: Any, rule: Rule) -> None:
    import torch

    finite = torch.isfinite(diff)
    d = diff[finite]
    v.max_abs_err = float(d.max()) if d.numel() else None
    denom = e.abs()
    nz = finite & (denom > 0)
    v.max_rel_err = float((diff[nz] / denom[nz]).max()) if bool(nz.any()) else 0.0
    fin_e = torch.isfinite(e)
    if bool((fin_e & ~torch.isfinite(a)).any()):
        v.norm_rel_err = math.inf  # a NaN or an infinity where the reference is finite
    else:
        ef, af = e[fin_e], a[fin_e]
        norm_e, norm_d = (float(ef.norm()), float((af - ef).norm())) if ef.numel() else (0.0, 0.0)
        v.norm_rel_err = norm_d / norm_e if norm_e > 0 else (0.0 if norm_d == 0 else math.inf)
    if rule.exact:
        return
    u = _ulps(diff, e, rule)
    u = torch.where(torch.isfinite(e) & ~torch.isfinite(a), torch.full_like(u, math.inf), u)
    u = torch.where(torch.isfinite(e), u, torch.zeros_like(u))
    flat = u.reshape(-1)
    i = int(torch.argmax(torch.nan_to_num(flat, nan=math.inf)))
    v.max_ulps = float(flat[i])
    step = max(1, flat.numel() // P99_SAMPLE)
    sample = flat[::step].float()
    p99 = float(torch.quantile(torch.nan_to_num(sample, nan=3e38, posinf=3e38), 0.99)) if sample.numel() else None
    v.p99_ulps = math.inf if p99 is not None and p99 >= 3e38 else p99
    index = [int(x) for x in _unravel(i, tuple(diff.shape))]
    v.worst = {"index": index, "actual": float(a.reshape(-1)[i]), "expected": float(e.reshape(-1)[i])}


def _unravel(i: int, shape: tuple[int, ...]) -> list[int]:
    out = []
    for s in reversed(shape):
        out.append(i % s if s else 0)
        i //= s if s else 1
    return list(reversed(out))


def _elements(n: int) -> str:
    return "1 output element is" if n == 1 else f"{n} output elements are"


def _value_guards(a: Any, e: Any) -> list[dict[str, str]]:
    """Outputs that look like nothing was computed, and non-finite values where the reference has none."""
    import torch

    out = []
    fin_e = torch.isfinite(e)
    if bool(torch.isnan(a).all()) and not bool(torch.isnan(e).all()):
        return [guard("all-nan", "the output is all NaN: nothing was written to it (outputs are NaN-filled "
                                 "before the launch)")]
    if a.numel() > 1 and not bool((e == 0).all()) and bool((a == 0).all()):
        out.append(guard("all-zero", "the output is all zeros where the reference is not"))
    elif a.numel() > 1 and bool(fin_e.all()):
        first = a.reshape(-1)[0]
        if bool((a == first).all()) and not bool((e == e.reshape(-1)[0]).all()):
            out.append(guard("constant", f"the output is the constant {float(first)!r} where the reference is not"))
    nan = torch.isnan(a) & fin_e
    if bool(nan.any()):
        out.append(guard("nan", f"{_elements(int(nan.sum()))} NaN where the reference is finite"))
    inf = torch.isinf(a) & fin_e
    if bool(inf.any()):
        out.append(guard("inf", f"{_elements(int(inf.sum()))} infinite where the reference is finite"))
    return out


# ---------------------------------------------------------------------------------------------------- the reference
def upcast(value: Any) -> Any:
    """``value`` with every fp8/fp16/bf16 tensor as float32 and every float32 tensor as float64 (in tuples, lists
    and dicts too); other values as they are."""
    if hasattr(value, "dtype") and hasattr(value, "is_floating_point"):
        higher = _HIGHER.get(_name(value.dtype))
        if higher is None:
            return value
        import torch

        return value.detach().to(getattr(torch, higher))
    if isinstance(value, tuple | list):
        return type(value)(upcast(v) for v in value)
    if isinstance(value, dict):
        return {k: upcast(v) for k, v in value.items()}
    return value


def reference_at_high_precision(call: Callable[[Callable[[Any], Any]], Any], low: Any) -> tuple[Any, str | None]:
    """The reference again with its inputs upcast: ``call(upcast)`` evaluates it with ``upcast`` applied to each
    input; kept when it gives values of ``low``'s shapes. Returns (values, None) or (``low``, why not)."""
    import torch

    prev = (torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    try:
        with torch.no_grad():
            high = call(upcast)
    except Exception as e:
        return low, f"the reference raised on upcast inputs ({type(e).__name__}: {str(e).splitlines()[0][:120]})"
    finally:
        torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = prev
    lows, highs = _values(low), _values(high)
    if len(lows) != len(highs) or any(tuple(getattr(x, "shape", ())) != tuple(getattr(y, "shape", ()))
                                      for x, y in zip(lows, highs, strict=True)):
        return low, "the reference gave other shapes on upcast inputs"
    return high, None


def _values(v: Any) -> list[Any]:
    return list(v) if isinstance(v, tuple | list) else [v]
