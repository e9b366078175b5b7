"""Rewrite compiler stages of the compiles inside a block, on Triton's stages hook
(``knobs.runtime.add_stages_inspection_hook``), chained after the hook installed before (uTLX's stays first).

``chained(key, rewrites)``: each rewrite takes a stage's output and the compile's metadata and returns the output
to use; ``key`` joins Triton's cache key (and the workbench's, ``driver._cache_key``), so a rewritten build is a
compile and a cache entry of its own. ``chained(None, edit=...)`` hands each compile's stages to ``edit`` (which
replaces what it wants) and leaves the key as it was: for what only watches or stops a compile (``resource_gate``).
Leaving the block puts the previous hook back, or, when something else wrapped this one meanwhile, makes it
behave exactly as the previous one.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["chained", "current_key"]

Rewrite = Callable[[Any, Any], Any]


def current_key() -> str:
    """The installed hook's part of the cache key ('' without one)."""
    from triton import knobs

    hook = knobs.runtime.add_stages_inspection_hook
    return "" if hook is None else str(hook()[1])


@contextlib.contextmanager
def chained(key: str | None, rewrites: dict[str, Rewrite] | None = None,
            edit: Callable[[dict[str, Any]], None] | None = None) -> Iterator[None]:
    from triton import knobs

    prev = knobs.runtime.add_stages_inspection_hook
    state = {"active": True}

    def combined() -> tuple[str, str]:
        pkey, phash = prev() if prev is not None else ("", "")
        if key is None:
            return pkey, phash
        return pkey + "\n" + key, hashlib.sha256((phash + key).encode()).hexdigest()

    def hook(self: Any = None, stages: Any = None, options: Any = None, language: Any = None,
             capability: Any = None) -> Any:
        if not state["active"]:  # unhooked while wrapped by someone else: behave exactly like the previous hook
            if prev is None:
                return ("", "")
            return prev(self, stages, options, language, capability) if stages is not None else prev()
        if stages is None:
            return combined()
        if prev is not None:
            prev(self, stages, options, language, capability)
        for name, rewrite in (rewrites or {}).items():
            make = stages.get(name)
            if make is not None:
                stages[name] = _then(make, rewrite)
        if edit is not None:
            edit(stages)
        return combined()

    knobs.runtime.add_stages_inspection_hook = hook
    try:
        yield
    finally:
        if knobs.runtime.add_stages_inspection_hook is hook:
            knobs.runtime.add_stages_inspection_hook = prev
        else:
            state["active"] = False


def _then(make: Callable[[Any, Any], Any], rewrite: Rewrite) -> Callable[[Any, Any], Any]:
    return lambda src, metadata: rewrite(make(src, metadata), metadata)
