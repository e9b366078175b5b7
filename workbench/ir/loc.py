"""A source location, the one value every IR reader maps a stage line to."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Loc:
    """A source location a stage line came from. ``inlined`` marks a call site of an inlined callee."""

    file: str
    line: int
    col: int = 0
    inlined: bool = False
