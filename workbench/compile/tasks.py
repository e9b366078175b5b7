"""The async tasks of a warp-specialized kernel, read from its TTGIR: warps and register budget of each.

TLX's ``tlx.async_tasks()`` becomes one ``ttg.warp_specialize`` op: a ``default`` region (the
``async_task("default")`` body, run by the kernel's own ``num_warps``) and one ``partitionN`` region
per other task and replica, each with ``num_warps(N)``. The budgets are the ``setmaxnreg`` values
Triton's allocate-warp-groups pass computes (``actualRegisters``, default task first).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from workbench.analyse.srcmap import stage_locations
from workbench.compile.triton_reach import warp_groups

MAX_REGISTERS = 256  # setmaxnreg's ceiling per thread
_MODULE_WARPS = re.compile(r'"ttg\.num-warps"\s*=\s*(\d+)')
_DEFAULT = re.compile(r"^\s*default\s*\{\s*$")
_PARTITION = re.compile(r"^\s*partition(\d+)\(.*\)\s*num_warps\((\d+)\)\s*\{\s*$")


def tasks_of(ttgir: str, gpu_target: Any, to_user_line: Callable[[str, int], int | None]) -> list[dict[str, Any]]:
    """One dict per task: ``partition`` (None for the default task), ``num_warps``, ``registers``
    (the budget, None when unknown), ``requested_registers``, ``start_warp`` and ``first_line`` (the
    first user line of its body). Empty for kernels without warp specialization."""
    if "ttg.warp_specialize" not in ttgir:
        return []
    lines = ttgir.splitlines()
    m = _MODULE_WARPS.search(ttgir)
    module_warps = int(m.group(1)) if m else None
    starts: list[tuple[int, int | None, int]] = []  # (line index, partition, warps)
    for i, text in enumerate(lines):
        if _DEFAULT.match(text):
            starts.append((i, None, module_warps or 0))
        elif pm := _PARTITION.match(text):
            starts.append((i, int(pm.group(1)), int(pm.group(2))))
    groups = warp_groups(ttgir, gpu_target)
    regs = groups[0] if groups else {}
    actual = regs.get("actualRegisters", [])
    requested = regs.get("requestedRegisters", [])
    start_ids = regs.get("warpGroupStartIds", [])
    locs = stage_locations("ttgir", ttgir)
    tasks = []
    for n, (begin, part, warps) in enumerate(starts):
        end = starts[n + 1][0] if n + 1 < len(starts) else len(lines)
        slot = 0 if part is None else part + 1
        tasks.append({
            "partition": part,
            "num_warps": warps,
            # the pass may hand the default task more than setmaxnreg can give (256); the lowering caps it there
            "registers": min(actual[slot], MAX_REGISTERS) if slot < len(actual) else None,
            "requested_registers": None if part is None or part >= len(requested) else requested[part],
            "start_warp": 0 if part is None else (start_ids[part] if part < len(start_ids) else None),
            "first_line": _first_user_line(locs, begin, end, to_user_line),
        })
    return tasks


def _first_user_line(locs, begin: int, end: int, to_user_line) -> int | None:
    """The user line of the first located op in the region (its body's first statement)."""
    for stage_line in range(begin + 1, end + 1):
        for loc in locs.get(stage_line, []):
            ln = to_user_line(loc.file, loc.line)
            if ln:
                return ln
    return None
