"""What language a kernel object is written in: plain Triton, Gluon or TLX (or not a Triton kernel at all)."""

from __future__ import annotations

import re
from typing import Any

from workbench.compile.tuners import base_jit

__all__ = ["kernel_kind", "uses_tlx"]


def kernel_kind(kernel: Any) -> str:
    """'triton', 'gluon', 'tlx' or 'other' for a kernel object (a TLX kernel is a ``@triton.jit``
    function whose source uses the TLX module)."""
    base = base_jit(kernel)
    if not hasattr(base, "is_gluon"):
        return "other"
    if base.is_gluon():
        return "gluon"
    return "tlx" if uses_tlx(base) else "triton"


def uses_tlx(fn: Any) -> bool:
    """Whether a ``JITFunction``'s source names the TLX module (under any alias)."""
    try:
        import triton.language.extra.tlx as tlx_module
    except ImportError:  # pragma: no cover - triton-utlx is a dependency
        return False
    names = {k for k, v in getattr(fn, "__globals__", {}).items() if v is tlx_module}
    src = getattr(fn, "src", "")
    return any(re.search(rf"\b{re.escape(n)}\.", src) for n in names)
