"""Rules on barrier phases that cannot complete (or complete too often), from the simulated run:
expect-bytes that do not match the copies, arrive counts that do not add up, and other hangs."""

from __future__ import annotations

from workbench.analyse.orchestration_sim_ops import Blocked
from workbench.analyse.orchestration_state import MBarrier
from workbench.check.context import COMPLETES, PROTOCOL_RULES, RACE_RULES, Context
from workbench.check.findings import Finding, iteration_text, related
from workbench.check.rules_phases import first_waits


def expect_bytes(ctx: Context) -> None:
    tr = ctx.trace
    if tr is None:
        return
    for key, bar in sorted(tr.barriers.items()):
        phases = list(bar.byte_mismatches)
        if tr.hung and bar.pending <= 0 and bar.tx > 0 and bar.cur.copies:
            phases.append(bar.cur)
        if not phases:
            continue
        ph = phases[0]
        expected, copied = ph.expected, ph.copied
        lines = sorted({ln for _, ln, _ in ph.expects if ln})
        waiter = next((b for b in tr.blocked if b.barrier == key), None)
        effect = (f"the phase never completes and {ctx.task(waiter.task)} hangs at line {waiter.line}" if waiter
                  else "the phase never completes" if expected > copied
                  else "the transaction count goes negative: the phase can complete while copies are in flight")
        f = Finding(
            "expect-bytes", "error", lines[0] if lines else None,
            f"`barrier_expect_bytes` announces {expected} bytes on `{ctx.bar(key)}` per phase, but the copies that "
            f"complete on it bring {copied} bytes: {effect}. Expect exactly the bytes of those copies ({copied}).",
            related([(ln, f"copy of {n} bytes completing on {ctx.bar(key)}") for _, ln, n in ph.copies]
                    + [(ln, "also expects bytes on it") for ln in lines[1:]]),
            "nbytes = BLOCK_M * BLOCK_K * tlx.size_of(tlx.dtype_of(desc)), summed over every copy on the barrier")
        f.barrier_set = key[0]
        ctx.add(f)


def expect_elsewhere(ctx: Context) -> None:
    """A copy whose bytes landed before any expect announced them, while the same task, in the same loop iteration,
    announced bytes on another barrier and none on the copy's: the expect names the wrong barrier (e.g. the next
    slot's). Per phase the bytes may still add up, so ``expect_bytes`` says nothing; the phases go out of step."""
    tr = ctx.trace
    if tr is None:
        return
    said: set[int | None] = {f.line for f in ctx.findings if f.rule == "expect-bytes"}
    for task, loops, bar, copy_line in tr.early_copies:
        expects = tr.expects.get((task, loops), [])
        if not expects or bar in {b for b, _ in expects}:
            continue
        other, line = expects[0]
        if line in said:
            continue
        said.add(line)
        f = Finding(
            "expect-bytes", "error", line,
            f"{ctx.Task(task)} announces bytes on `{ctx.bar(other)}` here, but its copy at line {copy_line} in the "
            f"same iteration{iteration_text(loops)} completes on `{ctx.bar(bar)}`, where nothing announced them: "
            f"each phase of `{ctx.bar(bar)}` gets its bytes before its expect, and the phases of the two barriers "
            f"go out of step with their waits. Announce the bytes on the barrier the copy completes on.",
            related([(copy_line, f"the copy, completing on {ctx.bar(bar)}")]),
            "tlx.barrier_expect_bytes(full[s], nbytes) then tlx.async_descriptor_load(desc, bufs[s], coords, full[s]): "
            "the same barrier, the same index")
        f.barrier_set = other[0]
        ctx.add(f)


def _arrive_count(ctx: Context, key: tuple[int, int], bar: MBarrier, blocked: Blocked | None) -> None:
    bs = ctx.model.barriers[key[0]]
    total = sum(bar.per_call.values())
    who = ", ".join(f"{ctx.task(t)} x{n}" for t, n in sorted(bar.per_call.items()))
    lines = [(o.line, f"arrives on {bs.name} ({t.name})") for t, o in ctx.ops_on_barrier(bs.id, COMPLETES - {"opaque"})]
    if total < bs.arrive_count:
        effect = (f"its phase never completes and {ctx.task(blocked.task)} hangs at line {blocked.line}" if blocked
                  else "its phases complete only every few rounds")
    else:
        effect = ("it completes several phases per round, so waits on it pass early or, once the parity wraps, "
                  "never pass" + (f" ({ctx.task(blocked.task)} hangs at line {blocked.line})" if blocked else ""))
    f = Finding(
        "arrive-count", "error", bs.line,
        f"`{bs.name}` is allocated with arrive_count={bs.arrive_count}, but each round {total} arrival(s) reach "
        f"`{ctx.bar(key)}` ({who}): {effect}. Make arrive_count the number of arrivals per phase ({total} here), "
        f"or make every arriving task arrive once per phase.",
        related(lines + ([(blocked.line, "waits here")] if blocked else [])),
        "arrive_count = number of tasks (replicas) that barrier_arrive once per phase; an expect_bytes counts "
        "one arrival; a warp barrier counts 32 x num_warps per arrive")
    f.barrier_set = key[0]
    ctx.add(f)


def arrive_counts(ctx: Context) -> None:
    """Arrivals per round that differ from arrive_count, where the run shows the consequence: a wait
    blocked before its phase completes (too few) or a wait that saw more phases than it waited for."""
    tr = ctx.trace
    if tr is None:
        return
    firsts = first_waits(ctx)
    for b in tr.blocked:
        if b.kind != "wait" or not tr.hung or ctx.has(PROTOCOL_RULES, b.barrier[0]):
            continue
        bar = tr.barriers[b.barrier]
        target = b.ordinal + 1 - firsts.get((b.task, b.barrier), (None, b.parity))[1]
        total = sum(bar.per_call.values())
        if bar.per_call and (bar.completed < target and total < bar.arrive_count
                             or bar.completed > target and total > bar.arrive_count):
            _arrive_count(ctx, b.barrier, bar, b)
    for w in tr.waits:
        bar = tr.barriers[w.barrier]
        target = w.ordinal + 1 - firsts.get((w.task, w.barrier), (None, w.parity))[1]
        if w.completed > target and sum(bar.per_call.values()) > bar.arrive_count \
                and not ctx.has(PROTOCOL_RULES, w.barrier[0]):
            _arrive_count(ctx, w.barrier, bar, None)


def hangs(ctx: Context) -> None:
    """Blocked waits no other rule explains: the tasks wait on each other. One finding per hang, at
    the wait that holds the others up (the one with a specific fix, else the first task's)."""
    tr = ctx.trace
    if tr is None or not tr.hung or any(f.rule in PROTOCOL_RULES | RACE_RULES for f in ctx.findings):
        return  # a broken protocol or a missing wait (races) explains the hang
    hints = {b.task: _hang_hint(ctx, b) for b in tr.blocked}
    primary = min(tr.blocked, key=lambda b: (hints[b.task] == _GENERIC_HINT, b.task))
    others = [b for b in tr.blocked if b is not primary]
    chain = "; ".join(f"{ctx.task(o.task)} waits at line {o.line}" + (f" on `{ctx.bar(o.barrier)}`" if o.barrier
                                                                        else f" at named barrier {o.named}")
                      for o in others)
    ahead = tr.named_run_ahead.get(primary.named) if primary.kind == "named_wait" else None
    if ahead is not None and ahead[0] != primary.task:
        what = (f"waits at named barrier {primary.named}, whose generations {ctx.task(ahead[0])} completed alone: it "
                f"arrived {ahead[1]} times in one generation (a named barrier counts threads, not tasks, so a task "
                f"that only arrives runs ahead of the one that waits), and this wait's generation gets no other "
                f"arrival")
        hints[primary.task] = ("order the hand-off both ways: the arriving task also waits (a named barrier or an "
                               "mbarrier the waiter releases) before it arrives again, as FA3's ping-pong does")
    elif primary.kind == "named_wait":
        what = f"waits at named barrier {primary.named}, whose other participants never arrive"
    else:
        bar = tr.barriers[primary.barrier]
        what = (f"waits for phase {primary.parity} of `{ctx.bar(primary.barrier)}`, which has completed "
                f"{bar.completed} phase(s) and still needs {max(bar.pending, 0)} arrival(s)")
    ctx.add(Finding(
        "hang", "error", primary.line,
        f"{ctx.Task(primary.task)} can wait here forever: it {what}. "
        + (f"The tasks that could complete it wait too ({chain}): they wait on each other. " if chain else "")
        + "Make the task that must go first pass its wait without the others.",
        related([(o.line, f"{ctx.task(o.task)} blocked here") for o in others]), hints[primary.task]))


_GENERIC_HINT = ("'data ready' waits use phase (k // NUM_STAGES) & 1 (0 first); 'slot free' waits use its "
                 "opposite (1 first, passing at once on a fresh barrier)")


def _hang_hint(ctx: Context, b: Blocked) -> str:
    if b.kind != "wait":
        return "every named_barrier_wait(id, n) needs arrivals from n threads in total per use"
    data = ctx.data_of_barrier(b.barrier[0], except_task=b.task)
    waiter_writes = {x for o in ctx.model.tasks[b.task].ops if o.kind in ("tma_load", "cp_async", "local_store")
                     for x in o.buffers}
    if b.ordinal == 0 and b.parity == 0 and waiter_writes and not data:
        return ("a producer's first wait on a fresh 'slot free' barrier must use phase 1 (it passes at once); "
                "with phase 0 it waits for a release that can only follow its own first copy")
    early = next((line for _, _, bar, line in ctx.trace.early_copies if bar == b.barrier), None)
    if early is not None:
        return (f"the copy at line {early} completed on `{ctx.bar(b.barrier)}` before any barrier_expect_bytes "
                "announced its bytes there: announce them on the barrier that copy completes on (the same index), "
                "before the copy")
    return _GENERIC_HINT
