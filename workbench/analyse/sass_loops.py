"""A warp-specialized kernel's hot loops in its SASS: each task's code, its steady-state loop, the paths through it.

A warp-specialized kernel is one function that branches on the warp index; each task's code starts with a
``USETMAXREG`` to its register budget. Loops are backward branches; paths follow forward branches inside a loop.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from workbench.ir.sass import Sass


def task_regions(sass: Sass, alloc: str, regs: int) -> list[tuple[int, int]]:
    """[start, end) of each replica of one task: from its ``USETMAXREG`` (``TRY_ALLOC <regs>`` for a consumer,
    ``DEALLOC <regs>`` for the producer) to the next one."""
    instrs = sass.instrs
    marks = [i for i, x in enumerate(instrs) if x.op.startswith("USETMAXREG")] + [len(instrs)]
    return [(a, b) for a, b in zip(marks, marks[1:])
            if alloc in instrs[a].op and int(instrs[a].args.split(",")[-1], 16) == regs]


def hot_loop(sass: Sass, region: tuple[int, int], marker: str) -> tuple[int, int]:
    """(head, backedge) of a task's steady-state loop. A backward ``BRA`` (its label at or before it) closes a loop
    from the label to the branch; of the loops inside ``region`` that hold a ``marker`` (HGMMA for a consumer,
    UTMALDG for the producer), the innermost (shortest): the GEMM's K loop inside its persistent tile loop, the
    attention's KV loop. mbarrier try-wait retry loops hold neither, so they never win."""
    instrs, labels = sass.instrs, sass.labels
    loops = [(labels[x.target], i) for i, x in enumerate(instrs[region[0]:region[1]], region[0])
             if x.target and region[0] <= labels[x.target] <= i]
    loops = [(h, b) for h, b in loops if any(x.op.startswith(marker) for x in instrs[h:b])]
    if not loops:
        raise ValueError(f"no loop with {marker} in the task's code")
    return min(loops, key=lambda hb: hb[1] - hb[0])


def paths(sass: Sass, head: int, back: int, limit: int = 64) -> list[list[int]]:
    """Every path through the loop body from ``head`` to the backedge, as instruction indices. Fast paths only:
    a conditional branch out of the loop (the out-of-line retry of an mbarrier try-wait) or backward inside it (a
    retry loop) is not taken; a forward conditional branch inside it (``if`` arms: the mask, ``k > 0``) forks."""
    instrs, labels = sass.instrs, sass.labels
    done: list[list[int]] = []
    todo: list[tuple[int, list[int]]] = [(head, [])]
    while todo and len(done) < limit:
        i, path = todo.pop()
        while i <= back:
            path.append(i)
            x = instrs[i]
            t = labels.get(x.target or "")
            if i == back or t == head:
                done.append(path)
                break
            if x.op == "EXIT" or (t is not None and not x.pred and not i < t <= back):
                break  # leaves the loop for good
            if t is not None and i < t <= back and x.pred:
                todo.append((t, list(path)))
            i = t if t is not None and i < t <= back and not x.pred else i + 1
    return done


def steady_path(sass: Sass, candidates: list[list[int]], excluded: Sequence[tuple[str, int, int]]) -> list[int]:
    """The path a steady iteration runs: the longest that runs no ``excluded`` source line (file, first, last).
    ``excluded`` names the code only edge iterations run (attention: ``dev.mask_scores``, the KV tail; the
    non-causal loop never masks); guarded work every later iteration does (the GEMM's ``k > 0`` slot release)
    stays in."""
    def hits(p: list[int]) -> bool:
        return any(Path(loc.file).name == Path(xf).name and lo <= loc.line <= hi
                   for i in p for loc in sass.instrs[i].src for xf, lo, hi in excluded)

    return max([p for p in candidates if not hits(p)] or candidates, key=len)
