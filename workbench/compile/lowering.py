"""The contract between front ends that lower to Triton (the TLX layer) and ``workbench.compile``.

A kernel object that is not a plain ``triton.jit``/``gluon.jit`` function plugs into
``workbench.compile`` by having a method ``__workbench_lower__(args, kwargs, target) -> Lowering``.
``workbench.compile`` then binds ``lowering.args``/``lowering.kwargs`` against ``lowering.fn`` and
checks its cache; on a miss it compiles with Triton (from ``lowering.source``, when given) inside
``lowering.context()`` (which may add the stages that only exist once the front end has run, e.g. the
generated Gluon-level IR, to ``stages``/``line_maps`` as it exits), maps every Triton stage's line info back to
the user's lines through ``lowering.to_user_line``, prepends ``lowering.stages`` to the stages and
finally calls ``lowering.finish(artifact)`` (which may fill ``artifact.layouts.values``,
``artifact.diagnostics`` and ``artifact.extra``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Lowering:
    fn: Any  # a triton JITFunction or gluon GluonJITFunction
    args: tuple
    kwargs: dict[str, Any]
    # Stages shown before Triton's own, in order (e.g. {"tlx": user source, "gluon": generated}).
    stages: dict[str, str] = field(default_factory=dict)
    # For those stages: user line -> 1-based stage lines.
    line_maps: dict[str, dict[int, list[int]]] = field(default_factory=dict)
    # (filename, line) as Triton's locations name them -> the user's line, or None when not user code.
    to_user_line: Callable[[str, int], int | None] | None = None
    # Entered around triton.compile (install hooks, patched semantics...); may fill stages on exit.
    context: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext
    # Mixed into the artifact cache key (e.g. the lowering's own version).
    cache_salt: str = ""
    # The user's source file/cell and the kernel's first line in it.
    user_filename: str | None = None
    finish: Callable[[Any], None] | None = None
    # The Triton source class, called as (fn, signature, constexprs, attrs); default: (Gluon)ASTSource.
    source: Callable[..., Any] | None = None
