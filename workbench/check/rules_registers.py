"""Register budgets Triton cannot give: ``async_task(..., registers=R)`` against what the compile made
of it (the Artifact's ``metadata.tasks``: ``requested_registers`` and ``registers`` per task).

How Triton 3.8 turns the requests into ``setmaxnreg`` (its allocate-warp-groups pass, checked
against compiles on this toolchain): the tasks' warps are padded to whole warp groups (4 warps);
each warp group gets the largest request of its tasks, rounded up to a multiple of 8; the CTA works
with ``maxnreg = 65536 / threads`` per thread (rounded down to a multiple of 8) and the default task
gets what the warp groups leave, if that is at least 24 per thread. Otherwise every request is
dropped without a word: no ``setmaxnreg`` at all. The lowering caps every budget at 256, and a
budget below 24 fails the compile. ``registers=`` on the default task is not passed on at all.
Last, ptxas: when a task's code needs more registers than its budget it ignores every ``setmaxnreg``
of the kernel (remark C7507, kept in the Artifact's ptxas report): no task gets its budget.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from workbench.analyse.orchestration import Task
from workbench.check.context import Context
from workbench.check.findings import Finding, related

MIN_REGS, MAX_REGS, STEP = 24, 256, 8  # setmaxnreg's range and granularity (per thread)
REGS_PER_CTA = 64 * 1024
_DEFAULT_REGS = re.compile(r"""async_task\(\s*["']default["'][^:]*?\b(?:registers|num_regs)\s*=\s*([^,)]+)""")


def _ceil8(n: int) -> int:
    return -(-n // STEP) * STEP


@dataclass
class Plan:
    """Triton's arithmetic for one set of requests (task index -> registers per thread)."""

    maxnreg: int  # per thread, before any setmaxnreg
    threads: int  # the CTA's threads: the kernel's warps and the tasks' warp groups
    groups: list[tuple[int, int]]  # (registers per thread, threads) per warp group of the tasks
    default_threads: int
    leftover: int  # per thread, for the default task

    @property
    def fits(self) -> bool:
        return self.leftover >= MIN_REGS

    @property
    def pool(self) -> int:
        return self.maxnreg * self.threads


def plan(ctx: Context, requests: dict[int, int]) -> Plan | None:
    tasks = ctx.model.tasks
    parts = tasks[1:]
    if not parts or any(t.start_warp is None for t in parts):
        return None
    base = tasks[0].num_warps
    extra = -(-sum(t.num_warps for t in parts) // 4) * 4
    given = ctx.model.module.attribute("ttg.maxnreg") if ctx.model.module else None
    maxnreg = given if given is not None else REGS_PER_CTA // (base + extra) // 32 // STEP * STEP
    groups: dict[int, list[int]] = {}
    for t in parts:
        g = groups.setdefault(t.start_warp // 4, [0, 0])
        g[0] = max(g[0], _ceil8(requests.get(t.index, MIN_REGS)))
        g[1] += t.num_warps
    sized = [(regs, -(-warps // 4) * 4 * 32) for regs, warps in groups.values()]
    budget = maxnreg * base * 32 + sum((maxnreg - regs) * threads for regs, threads in sized)
    leftover = budget // (base * 32) // STEP * STEP if budget > 0 else 0
    return Plan(maxnreg, (base + extra) * 32, sized, base * 32, leftover)


def register_budget(ctx: Context) -> None:
    model = ctx.model
    if not model.warp_specialized or len(model.tasks) < 2:
        return
    _default_registers(ctx)
    asked = [t for t in model.tasks[1:] if t.requested_registers]
    if not asked:
        return
    if all(t.registers is None for t in model.tasks):
        _dropped(ctx, asked)
        return
    for t in asked:
        _adjusted(ctx, t)
    _ignored_by_ptxas(ctx, asked)


def _adjusted(ctx: Context, task: Task) -> None:
    req, got = task.requested_registers, task.registers
    if got is None or req is None:
        return
    if req > MAX_REGS:
        why = f"setmaxnreg allows at most {MAX_REGS}"
    elif req < MIN_REGS:
        why = f"setmaxnreg allows at least {MIN_REGS} (its warp group's largest request sets it)"
    elif req % STEP:
        why = f"setmaxnreg takes multiples of {STEP}"
    else:
        return
    cost = ""
    if req > MAX_REGS:
        now = plan(ctx, _requests(ctx))
        capped = plan(ctx, _requests(ctx, cap=True))
        if now and capped and now.fits and capped.fits and min(capped.leftover, MAX_REGS) > min(now.leftover, MAX_REGS):
            cost = (f" Triton still counts {_ceil8(req)} for it when it shares out the 64K, so the default task "
                    f"gets {min(now.leftover, MAX_REGS)} per thread instead of {min(capped.leftover, MAX_REGS)}.")
    ctx.add(Finding(
        "register-budget", "warning", task.with_line or task.first_line,
        f"{_who(ctx, task)} asked for {req} registers; {why}; Triton gave {got}, without a word.{cost} "
        f"Ask for what setmaxnreg can give.",
        [], f"registers= a multiple of {STEP} in [{MIN_REGS}, {MAX_REGS}]: e.g. 232 or 240 for a consumer warp group, "
            f"24-56 for a producer"))


def _who(ctx: Context, task: Task) -> str:
    """'The task at line 141 (2 replicas)': the with-line, which all replicas of the task share."""
    if not task.with_line:
        return ctx.Task(task.index)
    n = sum(1 for t in ctx.model.tasks[1:] if t.with_line == task.with_line)
    return f"The task at line {task.with_line}" + (f" ({n} replicas)" if n > 1 else "")


def _requests(ctx: Context, cap: bool = False) -> dict[int, int]:
    return {t.index: min(t.requested_registers, MAX_REGS) if cap else t.requested_registers
            for t in ctx.model.tasks[1:] if t.requested_registers}


def _dropped(ctx: Context, asked: list[Task]) -> None:
    p = plan(ctx, _requests(ctx))
    if p is None or p.fits:  # Triton dropped them for a reason this arithmetic does not see: say nothing
        return
    top = max(asked, key=lambda t: t.requested_registers or 0)
    line = top.with_line or top.first_line
    want = sum(regs * threads for regs, threads in p.groups)
    most = _most(ctx, top)
    fix = (f" At most {most} for this task fits with the others as they are." if most else
           " Even 24 for this task does not fit with the others as they are: use fewer warps or lower them too.")
    lines = sorted({t.with_line for t in asked if t.with_line and t.with_line != line})
    ctx.add(Finding(
        "register-budget", "warning", line,
        f"The tasks' register requests do not fit the CTA: Triton shares out {p.pool:,} registers ({p.maxnreg} per "
        f"thread x {p.threads} threads), the tasks' warp groups ask for "
        f"{' + '.join(f'{r} x {n}' for r, n in p.groups)} = {want:,}, which leaves {max(p.leftover, 0)} per thread for "
        f"the default task's {p.default_threads} threads, under setmaxnreg's minimum of {MIN_REGS}. Triton then drops "
        f"every request without a word: no setmaxnreg, and every thread gets at most {p.maxnreg} registers, this task "
        f"too (it asked for {top.requested_registers}).{fix}",
        related([(ln, f"also asks for {_asked_at(ctx, ln)} registers") for ln in lines]),
        f"sum over warp groups of 128 threads x registers, plus the default task's threads x at least {MIN_REGS}, "
        f"must fit in {p.pool:,}"))


def _asked_at(ctx: Context, line: int) -> int | None:
    return next((t.requested_registers for t in ctx.model.tasks if t.with_line == line), None)


def _most(ctx: Context, top: Task) -> int | None:
    """The largest request for ``top``'s with-line (all its replicas) that fits with the others unchanged."""
    requests = _requests(ctx)
    mine = [t.index for t in ctx.model.tasks if t.with_line == top.with_line] or [top.index]
    for regs in range(min(_ceil8(top.requested_registers or MIN_REGS), MAX_REGS), MIN_REGS - 1, -STEP):
        p = plan(ctx, requests | {i: regs for i in mine})
        if p is not None and p.fits:
            return regs
    return None


def _default_registers(ctx: Context) -> None:
    task = ctx.model.tasks[0]
    if not task.with_line:
        return
    statement = _statement(ctx.model.source_lines, task.with_line)
    m = _DEFAULT_REGS.search(statement)
    if not m or "replicate" in statement:  # replicas of the default task are partitions: they get theirs
        return
    gets = f"{task.registers} per thread here" if task.registers else "no setmaxnreg at all here"
    ctx.add(Finding(
        "register-budget", "warning", task.with_line,
        f"`registers={m.group(1).strip()}` on the default task is not passed on: Triton sets the budgets of the other "
        f"tasks only, and the default task gets what they leave ({gets}). Set the other tasks' registers= "
        f"to leave it what it needs.",
        [], "async_task('default') takes no budget; lower the producer's registers= to leave the default task more"))


def _statement(lines: list[str], line: int) -> str:
    """The text of the ``with`` statement starting at ``line`` (up to its colon, across lines)."""
    out = []
    for text in lines[line - 1: line + 5]:
        out.append(text.split("#", 1)[0].strip())
        if out[-1].endswith(":"):
            break
    return " ".join(out)


def _ignored_by_ptxas(ctx: Context, asked: list[Task]) -> None:
    """ptxas's C7507: a budget under what the code needs makes it drop every setmaxnreg."""
    model = ctx.model
    if "C7507" not in model.ptxas_log or not model.registers_used:
        return
    used = model.registers_used
    short = [t for t in asked if t.registers is not None and t.registers < used] or asked[:1]
    default = model.tasks[0].registers
    for line in dict.fromkeys(t.with_line or t.first_line for t in short):
        task = next(t for t in short if (t.with_line or t.first_line) == line)
        ctx.add(Finding(
            "register-budget", "warning", line,
            f"{_who(ctx, task)} asked for {task.requested_registers} registers, less than the code of the kernel "
            f"needs (ptxas used {used} per thread): ptxas then ignores every setmaxnreg of the kernel (remark C7507, "
            f"'setmaxnreg ignored to maintain minimum register requirements'), so no task gets its budget"
            + (f": the default task runs with {used}, not {default}" if default and default > used else "")
            + ". Raise this budget to what the code needs, or make the code need less.",
            [], f"registers= at least what the task's code needs: at most {_ceil8(used)} (ptxas used {used} for the "
                f"whole kernel)"))
