"""Compiles that will fail for shared memory fail right after TTGIR (one allocation too large) or, in a search,
right after LLVM IR (all of them, as Triton's allocator placed them), not after PTX and ptxas; and each stage says
when it starts (``progress``: the ``%%tlx`` status line).

A ``tl.dot`` with 512x512 tiles stages 1 MiB of operands in shared memory; Triton compiled it for 49 s on a
laptop core (LLVM and ptxas on a huge unrolled kernel) before the launch would have been refused. ``gate``
chains a step onto Triton's stages hook (uTLX's stays first, as ``measure.timeline.hook`` chains it) that reads
the TTGIR module's shared-memory allocations (``ttg.local_alloc``: TLX buffers and what Triton stages itself)
and stops the compile when one alone is larger than a block may use on the target: no allocator can make that
fit. After the LLVM IR stage Triton's allocator has placed every buffer (``metadata["shared"]``): inside
``stop_over_total`` (a search's compiles) a total over the limit stops the compile there, before PTX and ptxas
(0.39 s instead of 0.67 s for a 128x256x64 fp16 tl.dot GEMM of 5 stages on this machine's CPU). The error lists
the allocations biggest first, each at its line.

The hook's key is the one it chains to: a compile that passes is the same compile (and the same Triton cache
entry) as without the gate.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import re
from collections.abc import Iterator
from typing import Any

from workbench.compile import progress
from workbench.compile.stages_hook import chained
from workbench.compile.targets import smem_limit
from workbench.errors import CompileError
from workbench.ir.mlir import parse_ttgir, walk

__all__ = ["allocations", "gate", "stop_over_total"]

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
    raise _rejected(err)


def _rejected(err: CompileError) -> CompileError:
    """A config that cannot fit: Triton's autotuner skips it (on a GPU the launch raises OutOfResources), and a
    search shows it as the static checks' smem-limit finding would (``err.finding``)."""
    err.config_rejected = True
    err.finding = {"rule": "smem-limit", "severity": "error", "line": err.lineno, "message": err.message}
    return err


def _check_total(metadata: Any, ttgir: str, limit: int, target: str, filename: str) -> None:
    """After the LLVM IR stage (Triton's allocator has placed every buffer): the block's total shared memory."""
    need = int((metadata or {}).get("shared") or 0)
    if need <= limit:
        return
    allocs = allocations(ttgir, filename) if ttgir else []
    err = CompileError(
        f"the kernel needs {need / 1024:g} KiB of shared memory (Triton's allocation of all its buffers), more than "
        f"the {limit / 1024:g} KiB a block can use on {target}: the compile stopped before PTX and ptxas (the "
        "launch would be refused). Shared-memory allocations, biggest first: "
        + ("; ".join(a[2] for a in allocs[:4]) or "none named in the TTGIR (Triton's own scratch)"),
        filename=filename, lineno=allocs[0][1] if allocs else None,
        hint="smaller tiles (BLOCK sizes) or fewer stages; a tl.dot stages both operand tiles in shared memory")
    raise _rejected(err)


def _stage(name: str, make: Any, limit: int, target: str, filename: str, seen: dict[str, str]) -> Any:
    """The stage, said out loud first (``progress``); the TTGIR one checked after (one allocation too large), the
    LLVM IR one too (all of them together, as Triton placed them)."""
    def run(src: Any, metadata: Any) -> Any:
        progress.note(f"compiling: {name}")
        mod = make(src, metadata)
        if name == "ttgir":
            seen["ttgir"] = str(mod)
            _check(seen["ttgir"], limit, target, filename)
        elif name == "llir" and _TOTALS.get():
            _check_total(metadata, seen.get("ttgir", ""), limit, target, filename)
        return mod

    return run


_TOTALS: contextvars.ContextVar[bool] = contextvars.ContextVar("workbench_smem_totals", default=False)


@contextlib.contextmanager
def stop_over_total() -> Iterator[None]:
    """Inside the block, compiles also stop after LLVM IR when all their buffers together need more shared memory
    than a block may use (a search's candidates: that one cannot run is all it needs to know). A ``%%tlx`` cell
    compiles on: its Report shows the stages and the smem-limit finding at the allocations' lines."""
    token = _TOTALS.set(True)
    try:
        yield
    finally:
        _TOTALS.reset(token)


@contextlib.contextmanager
def gate(target: str, filename: str) -> Iterator[None]:
    """Inside the block, a compile for ``target`` whose TTGIR allocates more shared memory in one piece than a
    block may use raises ``CompileError`` after its TTGIR stage (nothing when no stages hook is installed:
    adding one would change Triton's cache key)."""
    from triton import knobs

    limit = smem_limit(target)
    if knobs.runtime.add_stages_inspection_hook is None or limit is None:
        yield
        return

    def edit(stages: dict[str, Any]) -> None:
        seen: dict[str, str] = {}  # this compile's TTGIR, for the LLVM IR stage's message
        for name in list(stages):
            stages[name] = _stage(name, stages[name], limit, target, filename, seen)

    with chained(None, edit=edit):
        yield
