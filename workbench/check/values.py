"""The launch's scalar values by TTGIR argument name (``M``, ``K``, ``a_desc.shape.0``...)."""

from __future__ import annotations

from typing import Any

from workbench.compile.tuners import base_jit


def launch_values(kernel: Any, args: tuple, options: dict[str, Any]) -> dict[str, int]:
    """Integer arguments by name, each TensorDescriptor's ``.shape.i``/``.stride.i`` and each tensor's
    ``.extent`` (elements from its pointer to the end of its storage); a ``config=`` (autotuner) or keyword
    argument counts like a positional one."""
    fn = base_jit(kernel) if kernel is not None else None
    names = list(getattr(fn, "arg_names", None) or [])
    given = dict(zip(names, args))
    given.update({k: v for k, v in options.items() if k in names and k not in given})
    out: dict[str, int] = {}
    for name, value in given.items():
        if isinstance(value, bool):
            out[name] = int(value)
        elif isinstance(value, int):
            out[name] = value
        elif hasattr(value, "untyped_storage") and hasattr(value, "element_size"):
            out[f"{name}.extent"] = value.untyped_storage().nbytes() // value.element_size() - value.storage_offset()
        elif hasattr(value, "block_shape") and hasattr(value, "shape") and hasattr(value, "strides"):
            for i, d in enumerate(value.shape):
                out[f"{name}.shape.{i}"] = int(d)
            for i, d in enumerate(value.strides):
                out[f"{name}.stride.{i}"] = int(d)
    return out
