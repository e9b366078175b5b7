"""A ``--check "ACTUAL: EXPECTED"`` as a search's reference: EXPECTED evaluated on each GPU worker's fresh inputs.

The names EXPECTED uses that are tensors of the launch (an argument, a descriptor's base, or a view of one) are
bound on the worker to the same view of its fresh copy of that argument; other names travel by value (numbers,
modules, functions, small tensors). ACTUAL must name a tensor of the launch: the argument it names is the
output compared with EXPECTED's value.
"""

from __future__ import annotations

import ast
import builtins
from dataclasses import dataclass, field
from typing import Any

from workbench.errors import CheckError
from workbench.run.tensors import is_tensor, storage_key

__all__ = ["ExpressionReference", "reference_from_check"]


@dataclass
class _View:
    position: int  # of the argument among the launch's positional arguments
    attr: str | None  # "base" for a descriptor
    offset: int
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    dtype: str


@dataclass
class ExpressionReference:
    """Callable as a search's reference: ``ref(*args)`` -> EXPECTED's value over those arguments."""

    expected: str
    views: dict[str, _View] = field(default_factory=dict)
    values: dict[str, Any] = field(default_factory=dict)

    def __call__(self, *args: Any) -> Any:
        import torch

        ns: dict[str, Any] = {"torch": torch, **self.values}
        for name, v in self.views.items():
            base = args[v.position] if v.attr is None else getattr(args[v.position], v.attr)
            ns[name] = torch.empty(0, dtype=getattr(torch, v.dtype), device=base.device).set_(
                base.untyped_storage(), v.offset, v.shape, v.stride)
        return eval(compile(self.expected, "<--check>", "eval"), ns)  # noqa: S307 - the user's own expression


def _arg_tensors(args: tuple) -> list[tuple[int, str | None, Any]]:
    out = []
    for i, a in enumerate(args):
        if is_tensor(a):
            out.append((i, None, a))
        elif is_tensor(getattr(a, "base", None)) and hasattr(a, "block_shape"):
            out.append((i, "base", a.base))
    return out


def _view_of(t: Any, args: tuple) -> _View | None:
    for pos, attr, a in _arg_tensors(args):
        if storage_key(a) == storage_key(t):
            return _View(pos, attr, int(t.storage_offset()), tuple(t.shape), tuple(t.stride()),
                         str(t.dtype).replace("torch.", ""))
    return None


def _names(expr: str) -> list[str]:
    tree = ast.parse(expr, mode="eval")
    return list(dict.fromkeys(n.id for n in ast.walk(tree) if isinstance(n, ast.Name)))


def reference_from_check(actual: str, expected: str, ns: dict[str, Any], args: tuple,
                         arg_names: list[str]) -> tuple[ExpressionReference, list[str]]:
    """The reference and the output argument of ``--check "ACTUAL: EXPECTED"`` for a launch with ``args``."""
    out = ns.get(actual.strip()) if actual.strip().isidentifier() else None
    view = _view_of(out, args) if is_tensor(out) else None
    if view is None:
        raise CheckError(f"--check {actual}: {expected}: with --search, ACTUAL must name a tensor the launch writes "
                         f"(an argument or a descriptor's base); {actual.strip()!r} is not one",
                         hint='e.g. --check "c: a @ b" where c is the output tensor the cell passes to the kernel')
    ref = ExpressionReference(expected)
    for name in _names(expected):
        if name not in ns:
            if hasattr(builtins, name):
                continue
            raise CheckError(f"--check: {name!r} is not defined in the notebook")
        v = ns[name]
        vw = _view_of(v, args) if is_tensor(v) else None
        if vw is not None:
            ref.views[name] = vw
        else:
            ref.values[name] = v
    return ref, [arg_names[view.position]]
