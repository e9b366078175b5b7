"""Per-lowering state: what the trace saw (values, buffers, tasks), read back for the layout report."""

from __future__ import annotations

import contextvars
from dataclasses import dataclass, field
from typing import Any


@dataclass
class TaskCtx:
    num_warps: int
    replica: int | None = None  # replica id when the task was given replicate=
    default: bool = False
    line: int | None = None
    role: str = "default"  # timeline role name (workbench.tlx.lower.timeline.role_name)


@dataclass
class BufferRecord:
    name: str | None
    line: int | None
    shape: list[int]  # one buffer's shape
    num: int
    dtype: str
    layout: Any
    kind: str  # 'buffer' or 'barrier'
    nbytes: int
    uses: list[str] = field(default_factory=list)
    explicit: bool = False
    ttgir: str = ""

    def add_use(self, text: str) -> None:
        if text not in self.uses:
            self.uses.append(text)


@dataclass
class ValueRecord:
    name: str
    line: int | None
    shape: list[int]
    dtype: str
    layout: Any
    ttgir: str
    reason: str
    kind: str = "tensor"


@dataclass
class Pending:
    expected: int
    line: int | None
    got: int = 0
    copies: list[int] = field(default_factory=list)


class LoweringState:
    def __init__(self, filename: str | None = None) -> None:
        self.filename = filename
        self.values: dict[tuple, ValueRecord] = {}
        self.buffers: list[BufferRecord] = []
        self.tasks: list[TaskCtx] = []
        self.pending_expect: dict[tuple, Pending] = {}
        self.root_generator = None
        self.frontend_ir: str | None = None

    # -- layout report ------------------------------------------------------------------------
    def record_value(self, rec: ValueRecord) -> None:
        key = (rec.name, rec.line, rec.ttgir)
        self.values.setdefault(key, rec)

    def record_buffer(self, rec: BufferRecord) -> None:
        self.buffers.append(rec)


_STATE: contextvars.ContextVar[LoweringState | None] = contextvars.ContextVar("tlx_lowering_state", default=None)


def current() -> LoweringState | None:
    return _STATE.get()


def activate(state: LoweringState):
    return _STATE.set(state)


def deactivate(token) -> None:
    _STATE.reset(token)
