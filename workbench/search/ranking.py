"""How candidates are ranked: by their ratio to the reference where there is one (each candidate is timed in the
same rounds as the reference, so a clock that drifts between candidates cancels out), else by time."""

from __future__ import annotations

from typing import Any

__all__ = ["score"]


def score(row: dict[str, Any]) -> float | None:
    """Higher is better; None for a row that was not timed."""
    if row.get("status") != "ok" or not row.get("ms"):
        return None
    return float(row["ratio"]) if row.get("ratio") else 1.0 / float(row["ms"])
