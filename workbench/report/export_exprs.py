"""A ``--check`` or ``--bench-ref`` expression of the notebook, rewritten for a reproducer script.

The expression names notebook values: tensors (which are launch arguments, or views of them), modules,
functions, constants. Each name or attribute chain is replaced, outermost first, by what the script calls the
same value (``workbench.report.export_launch`` resolved them in the notebook when the cell ran):

- a tensor: its variable in the script (``export_inputs.Inputs.var``);
- a chain whose root is an installed module (``torch.nn.functional.softmax``): kept, the module imported;
- a function, class or module that is not installed library code (``W.sdpa`` of ``tlx_kernels``): its source
  is copied into the script and the chain becomes its name (``sdpa``);
- a number, string or tuple (``S.B``, ``FLOPS``): a constant of the script;
- anything else: its parts are rewritten instead (``x.float().sum(1)``: ``x``); a name that is none of these
  makes the expression one the script cannot evaluate, and says why.
"""

from __future__ import annotations

import ast
import builtins
import inspect
import re
import types
from collections.abc import Callable
from typing import Any

from workbench.report.export_sources import Sources, literal, portable
from workbench.run.launch_record import View

__all__ = ["rewrite"]


class _Rewriter(ast.NodeTransformer):
    def __init__(self, names: dict[str, Any], sources: Sources, tensor_var: Callable[[View, str], str | None],
                 used_by: str) -> None:
        self.names, self.sources, self.tensor_var, self.used_by = names, sources, tensor_var, used_by
        self.problems: list[str] = []

    def _root(self, node: ast.AST) -> ast.AST:
        while isinstance(node, ast.Attribute):
            node = node.value
        return node

    def _chain(self, node: ast.Attribute | ast.Name) -> ast.AST:
        text = ast.unparse(node)
        root = self._root(node)
        if not isinstance(root, ast.Name):
            return self.generic_visit(node)
        if root.id not in self.names:
            if not hasattr(builtins, root.id):
                self.problems.append(f"{root.id} is not defined in the notebook")
            return self.generic_visit(node) if isinstance(node, ast.Attribute) else node
        if isinstance(self.names[root.id], types.ModuleType) and portable(self.names[root.id]):
            self.sources.need(root.id, self.names[root.id], self.used_by)
            return node
        if text not in self.names:
            return self.generic_visit(node)
        value = self.names[text]
        preferred = re.sub(r"\W", "_", text)
        if isinstance(value, View):
            var = self.tensor_var(value, preferred)
            if var is None:
                self.problems.append(f"{text}: no such tensor in the script")
                return node
            return ast.copy_location(ast.Name(var, ast.Load()), node)
        nameable = isinstance(value, types.ModuleType) or inspect.isfunction(value) or inspect.isclass(value) \
            or inspect.isbuiltin(value) or hasattr(value, "arg_names") or literal(value) is not None
        if not nameable:
            return self.generic_visit(node) if isinstance(node, ast.Attribute) else self._unknown(node, value)
        name = self.sources.any_name(preferred, value, self.used_by)
        if name is None:
            self.problems.append(f"{text} cannot be written into the script")
            return node
        return ast.copy_location(ast.Name(name, ast.Load()), node)

    def _unknown(self, node: ast.AST, value: Any) -> ast.AST:
        self.problems.append(f"{ast.unparse(node)} is a {type(value).__name__}, which the script cannot make")
        return node

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        return self._chain(node)

    def visit_Name(self, node: ast.Name) -> ast.AST:
        return self._chain(node)


def rewrite(expr: str, names: dict[str, Any], sources: Sources,
            tensor_var: Callable[[View, str], str | None], used_by: str) -> tuple[str | None, list[str]]:
    """(the expression as the script writes it, or None; why not)."""
    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError as e:
        return None, [f"{expr!r} is not a Python expression: {e.msg}"]
    r = _Rewriter(names, sources, tensor_var, used_by)
    out = r.visit(tree)
    if r.problems:
        return None, r.problems
    return ast.unparse(ast.fix_missing_locations(out)), []
