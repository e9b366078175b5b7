"""Timeline builds: Proton instrumentation scopes the TLX lowering inserts at role and orchestration points.

A timeline build is the kernel compiled while Proton's instrumentation is on (``proton.start(...,
backend="instrumentation")``, or ``workbench.timeline.instrumentation()`` for a compile without a GPU).
Only then do the scopes below exist; Triton puts ``instrumentation_mode`` into the compile options, so
instrumented and plain builds never share a cache entry.

Scope names are ``"<role>/<activity>"`` or ``"<role>/<activity>:<detail>"``; ``workbench.timeline`` parses
them back. Roles: the task's ``name=`` (ours, not TLX's), else ``"default"`` for the trunk task and
``"task<i>"`` for the i-th other task, with the replica id appended for replicated tasks (``"consumer0"``,
``"task1_0"``). Activities:

- ``task``: the whole task body;
- ``wait:<barrier>``: ``tlx.barrier_wait`` (time blocked on another role);
- ``tma_load``: issuing ``tlx.async_descriptor_load``;
- ``mma``: issuing ``tlx.async_dot``; ``mma_wait``: ``tlx.async_dot_wait``;
- ``tma_store`` / ``store_wait``: the epilogue's ``tlx.async_descriptor_store`` and its wait.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from workbench.tlx.lower import state as S

SEP = "/"
ACTIVITIES = ("task", "wait", "tma_load", "mma", "mma_wait", "tma_store", "store_wait")


def enabled() -> bool:
    """True while a TLX lowering runs with Proton's instrumentation on (a timeline build)."""
    if S.current() is None:
        return False
    try:
        from triton.profiler.flags import flags
    except Exception:  # pragma: no cover - Proton missing from the wheel
        return False
    return bool(flags.instrumentation_on)


def role_name(name: str | None, default: bool, index: int, replica: int | None) -> str:
    """The role of a task: ``name=``, else ``default`` / ``task<index>``, plus the replica id."""
    base = name or ("default" if default else f"task{index}")
    if replica is None:
        return base
    return f"{base}_{replica}" if base[-1:].isdigit() else f"{base}{replica}"


def current_role() -> str:
    st = S.current()
    task = st.tasks[-1] if st is not None and st.tasks else None
    return getattr(task, "role", None) or "default"


def scope_name(activity: str, detail: str | None = None, role: str | None = None) -> str:
    name = f"{role or current_role()}{SEP}{activity}"
    return f"{name}:{detail}" if detail else name


def record(sem: Any, is_start: bool, name: str) -> None:
    from triton.profiler import language as pl

    pl.record(is_start=is_start, scope_name=name, semantic=sem)


@contextlib.contextmanager
def scope(sem: Any, activity: str, detail: str | None = None) -> Iterator[None]:
    """Wrap what the block emits in a Proton scope when this is a timeline build (else nothing)."""
    if sem is None or not enabled():
        yield
        return
    name = scope_name(activity, detail)
    record(sem, True, name)
    yield
    record(sem, False, name)
