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
from workbench.run.launch_record import Record, View, is_tensor, rebuild

__all__ = ["ExpressionReference", "reference_from_check"]


@dataclass
class ExpressionReference:
    """Callable as a search's reference: ``ref(*args)`` -> EXPECTED's value over those arguments."""

    expected: str
    views: dict[str, View] = field(default_factory=dict)  # of the storages of the launch's record
    values: dict[str, Any] = field(default_factory=dict)

    def __call__(self, *args: Any) -> Any:
        import torch

        rec = Record.of(dict(enumerate(args)))  # the worker's arguments alias as the caller's: storages match
        bufs = {i: rec.live(i) for i in range(len(rec.storages))}
        ns: dict[str, Any] = {"torch": torch, **self.values, **{k: rebuild(v, bufs) for k, v in self.views.items()}}
        return eval(compile(self.expected, "<--check>", "eval"), ns)  # noqa: S307 - the user's own expression


def _names(expr: str) -> list[str]:
    tree = ast.parse(expr, mode="eval")
    return list(dict.fromkeys(n.id for n in ast.walk(tree) if isinstance(n, ast.Name)))


def reference_from_check(actual: str, expected: str, ns: dict[str, Any], args: tuple,
                         arg_names: list[str]) -> tuple[ExpressionReference, list[str]]:
    """The reference and the output argument of ``--check "ACTUAL: EXPECTED"`` for a launch with ``args``."""
    rec = Record.of(dict(enumerate(args)))
    out = ns.get(actual.strip()) if actual.strip().isidentifier() else None
    view = rec.view_of(out) if is_tensor(out) else None
    position = next((i for i in rec.args if rec.root(i) is not None and rec.root(i).storage == view.storage), None) \
        if view is not None else None
    if position is None:
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
        vw = rec.view_of(v) if is_tensor(v) else None
        if vw is not None:
            ref.views[name] = vw
        else:
            ref.values[name] = v
    return ref, [arg_names[position]]
