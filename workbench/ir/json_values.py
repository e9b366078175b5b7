"""JSON-safe values: what every payload (run records, Reports, measurements) holds instead of Python objects."""

from __future__ import annotations

import math
from typing import Any

__all__ = ["json_num", "jsonable"]


def json_num(x: float | None) -> float | None:
    """A float for JSON: None for None, NaN and infinities."""
    if x is None:
        return None
    x = float(x)
    return x if math.isfinite(x) else None


def jsonable(value: Any) -> Any:
    """Make ``value`` JSON-safe: NaN/inf -> None, tuples -> lists, unknown objects -> repr."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [jsonable(v) for v in value]
    if hasattr(value, "to_dict"):
        try:
            return jsonable(value.to_dict())
        except Exception:
            pass
    try:  # numpy / torch scalars
        item = value.item()
        if isinstance(item, (int, float, bool)):
            return jsonable(item)
    except Exception:
        pass
    return repr(value)
