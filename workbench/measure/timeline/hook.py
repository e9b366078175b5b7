"""The scope insertion's mechanism: a TTGIR rewrite in Triton's stages hook, chained to uTLX's.

Why a pass through the stages hook and not an AST rewrite of the kernel's source:

- TLX kernels keep their roles' work in helper ``@triton.jit`` functions (the library's ``_produce``/
  ``_consume``/``store_tile``, Meta's tutorials' helpers); after inlining, TTGIR holds every barrier
  wait, TMA copy, wgmma issue and wait, and epilogue store of every role in one place. An AST
  rewrite would have to copy and rewrite each callee, per replica;
- each replica is its own ``partitionN`` region in TTGIR, so scopes get per-replica names
  (``consumer.0`` / ``consumer.1``) without constexpr string tricks in the kernel language;
- the records sit exactly around the hardware ops, after every TTGIR pass that could move them;
- it instruments whatever is compiled while it is on, including launches made by someone else's
  wrapper (an autotuner, a tutorial's ``attention()``), so the user never hands us a modified kernel.

The instrumented build is a separate compile: the hook adds its own part to Triton's cache key (and
Proton's ``instrumentation_mode`` is in the options), so the plain kernel, its stages and its line
maps are untouched. The hook is on only inside :func:`scoped`, and it CHAINS: uTLX's hook (or
whatever was installed) runs first and keeps its stages; on exit the previous hook is put back, or,
if something wrapped ours in the meantime, ours turns into a pass-through. Proton's
``enable_semantic("triton")`` is not needed: nothing is traced through Proton's language front end.
"""

from __future__ import annotations

import contextlib
import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from workbench.compile.stages_hook import chained
from workbench.compile.triton_reach import parse_in_context
from workbench.measure.timeline.scopes import Plan, instrument

HOOK_VERSION = "workbench.measure.timeline scopes v1"


def _source_digest() -> str:
    """Digest of the code that decides what is inserted: a change to it is a new build, not a cache hit."""
    from pathlib import Path

    import workbench.ir

    here, ir = Path(__file__).parent, Path(workbench.ir.__file__).parent
    h = hashlib.sha256()
    for path in (here / "hook.py", here / "scopes.py", here / "roles.py", here / "ttgir_text.py",
                 ir / "mlir.py", ir / "mlir_loc.py"):  # the reader decides where scopes go too
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


_DIGEST = _source_digest()
_KERNEL = re.compile(r"tt\.func\s+public\s+@([\w$.]+)")


@dataclass
class ScopeRecorder:
    """What the hook inserted, per kernel name (the last compile of each)."""

    level: str = "fine"
    task_names: list[str | None] | None = None
    plans: dict[str, Plan] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    def key(self) -> str:
        return f"{HOOK_VERSION} {_DIGEST} level={self.level} names={self.task_names}"

    def rewrite(self, mod: Any) -> Any:
        """The ``ttgir`` stage's module with scopes inserted (parsed back in the same MLIR context)."""
        text = str(mod)
        plan = instrument(text, self.level, self.task_names)
        m = _KERNEL.search(text)
        self.plans[m.group(1) if m else "?"] = plan
        return parse_in_context(plan.text, mod.context)


@contextlib.contextmanager
def scoped(level: str = "fine", task_names: list[str | None] | None = None) -> Iterator[ScopeRecorder]:
    """Compiles inside get the timeline's Proton scopes (``level``: task, waits, fine)."""
    rec = ScopeRecorder(level=level, task_names=task_names)
    with chained(rec.key(), {"ttgir": lambda mod, metadata: rec.rewrite(mod)}):
        yield rec
