"""Compiles that will fail for shared memory fail right after TTGIR, not after LLVM and ptxas; and each stage
says when it starts (``progress``: the ``%%tlx`` status line).

A ``tl.dot`` with 512x512 tiles stages 1 MiB of operands in shared memory; Triton compiled it for 49 s on a
laptop core (LLVM and ptxas on a huge unrolled kernel) before the launch would have been refused. ``gate``
chains a step onto Triton's stages hook (uTLX's stays first, as ``measure.timeline.hook`` chains it) that reads
the TTGIR module's shared-memory allocations (``ttg.local_alloc``: TLX buffers and what Triton stages itself)
and stops the compile when one alone is larger than a block may use on the target: no allocator can make that
fit. The error lists the allocations biggest first, each at its line.

The hook's key is the one it chains to: a compile that passes is the same compile (and the same Triton cache
entry) as without the gate.
"""

from __future__ import annotations

import contextlib
import math
import re
from collections.abc import Iterator
from typing import Any

from workbench.compile import progress
from workbench.compile.targets import smem_limit
from workbench.errors import CompileError
from workbench.ir.mlir import parse_ttgir, walk

__all__ = ["allocations", "gate"]

_MEMDESC = re.compile(r"->\s*!ttg\.memdesc<([\dx]+)x([a-z]+)(\d+)\b")


def allocations(ttgir: str, filename: str) -> list[tuple[int, int | None, str]]:
    """(bytes, line in ``filename`` or None, description) of each shared-memory allocation, biggest first."""
    module = parse_ttgir(ttgir)
    out = []
    for op in walk(module.regions[0]):
        m = _MEMDESC.search(op.body) if op.name == "ttg.local_alloc" else None
        if m is None:
            continue
        dims = [int(d) for d in m.group(1).split("x")]
        nbytes = math.prod(dims) * max(int(m.group(3)) // 8, 1)
        line = next((loc.line for loc in op.locs if loc.file == filename), None)
        name = op.value_name or op.results[0].lstrip("%")
        out.append((nbytes, line, f"`{name}`: {'x'.join(map(str, dims))} {m.group(2)}{m.group(3)} = "
                                  f"{nbytes / 1024:g} KiB" + (f" (line {line})" if line else "")))
    return sorted(out, key=lambda a: -a[0])


def _check(ttgir: str, limit: int, target: str, filename: str) -> None:
    allocs = allocations(ttgir, filename)
    if not allocs or allocs[0][0] <= limit:
        return
    total = sum(a[0] for a in allocs)
    err = CompileError(
        f"{allocs[0][2].split(':')[0]} alone needs {allocs[0][0] / 1024:g} KiB of shared memory, more than the "
        f"{limit / 1024:g} KiB a block can use on {target}: the compile stopped after TTGIR (the launch would be "
        f"refused). Shared-memory allocations, biggest first ({total / 1024:g} KiB in all): "
        + "; ".join(a[2] for a in allocs[:4]),
        filename=filename, lineno=allocs[0][1],
        hint="smaller tiles (BLOCK sizes) or fewer stages; a tl.dot stages both operand tiles in shared memory")
    err.config_rejected = True  # on a GPU the launch raises OutOfResources, which Triton's autotuner skips
    raise err


def _stage(name: str, make: Any, limit: int, target: str, filename: str) -> Any:
    """The stage, said out loud first (``progress``); the TTGIR one checked after."""
    def run(src: Any, metadata: Any) -> Any:
        progress.note(f"compiling: {name}")
        mod = make(src, metadata)
        if name == "ttgir":
            _check(str(mod), limit, target, filename)
        return mod

    return run


@contextlib.contextmanager
def gate(target: str, filename: str) -> Iterator[None]:
    """Inside the block, a compile for ``target`` whose TTGIR allocates more shared memory in one piece than a
    block may use raises ``CompileError`` after its TTGIR stage (nothing when no stages hook is installed:
    adding one would change Triton's cache key)."""
    from triton import knobs

    prev = knobs.runtime.add_stages_inspection_hook
    limit = smem_limit(target)
    if prev is None or limit is None:
        yield
        return

    def hook(*args: Any) -> Any:
        if not args:
            return prev()  # the cache key: the chained hook's own
        prev(*args)
        stages = args[1]
        for name in list(stages):
            stages[name] = _stage(name, stages[name], limit, target, filename)
        return None

    knobs.runtime.add_stages_inspection_hook = hook
    try:
        yield
    finally:
        if knobs.runtime.add_stages_inspection_hook is hook:
            knobs.runtime.add_stages_inspection_hook = prev
