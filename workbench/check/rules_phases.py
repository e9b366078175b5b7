"""Rules on the phases waits use, from the simulated run: a first wait that passes on a fresh
barrier, and a phase that does not flip."""

from __future__ import annotations

from workbench.check.context import Context
from workbench.check.findings import Finding, related

FirstWait = tuple[int | None, int, int]  # (line, parity, phases the task knew had completed)


def first_waits(ctx: Context) -> dict[tuple[int, tuple[int, int]], FirstWait]:
    """(task, barrier instance) -> (line, parity, known phases) of the task's first wait on it (passed or blocked)."""
    out: dict[tuple[int, tuple[int, int]], FirstWait] = {}
    tr = ctx.trace
    if tr is None:
        return out
    for w in tr.waits:
        if w.ordinal == 0:
            out.setdefault((w.task, w.barrier), (w.line, w.parity, w.known))
    for b in tr.blocked:
        if b.kind == "wait" and b.ordinal == 0 and b.barrier is not None:
            out.setdefault((b.task, b.barrier), (b.line, b.parity or 0, b.known))
    return out


def first_wait_passes(ctx: Context) -> None:
    """A first wait with parity 1 on a barrier that says 'data ready' passes before the data lands,
    unless the task already knows (happens-before, through any barrier the run follows: another wait,
    a named-barrier hand-over) that the barrier completed a phase: then it is not fresh when the task
    waits, and the data it reads landed in a phase ordered before it or in the one it waits for (a
    second consumer taking its turn on a ring another one started)."""
    done: set[tuple[int, int | None]] = set()
    for (task, key), (line, parity, known) in sorted(first_waits(ctx).items(), key=lambda kv: kv[1][0] or 0):
        if parity != 1 or known > 0 or (key[0], line) in done:
            continue
        data = ctx.data_of_barrier(key[0], except_task=task)
        read = sorted(set(data) & ctx.reads_of_task(task))
        if not read:
            continue  # a 'slot free' barrier: a producer's first wait passing at once is the idiom
        done.add((key[0], line))
        bs, buf = ctx.model.barriers[key[0]], ctx.model.buffers[read[0]]
        reader = next((o.line for o in ctx.model.tasks[task].ops if buf.id in o.buffers and o.line), None)
        f = Finding(
            "first-wait-passes", "error", line,
            f"The first wait of {ctx.task(task)} on `{ctx.bar(key)}` uses phase 1, which a fresh barrier reports "
            f"as already complete: it passes at once, before the data for `{buf.name}` lands, so the read at "
            f"line {reader} sees a stale or empty slot. A first wait on a 'data ready' barrier must use phase 0.",
            related([(data[buf.id], f"{buf.name} is filled here"), (reader, f"{buf.name} is read here"),
                     (bs.line, f"{bs.name} allocated here")]),
            "consumer: phase = (k // NUM_STAGES) & 1 (0 first); only a producer waiting for a free slot starts at "
            "phase 1 (p ^ 1)")
        f.barrier_set = key[0]
        ctx.add(f)


def phase_flip(ctx: Context) -> None:
    """The same wait, with the same phase, passing twice on the same completed phase of a barrier
    that is re-armed in a loop, the waiter having released the slot in between (arrived on the barrier
    its filler waits on before refilling): the second pass does not wait for the new data."""
    tr = ctx.trace
    if tr is None:
        return
    rearmed = {o.barrier for _, o in ctx.model.ops() if o.in_loop and o.kind in ("arrive", "expect", "warp_arrive",
                                                                                 "tma_load", "tc_commit")}
    last: dict[tuple[int, tuple[int, int]], object] = {}
    flagged: set[int | None] = set()
    for w in tr.waits:
        k = (w.task, w.barrier)
        prev = last.get(k)
        last[k] = w
        if (prev is None or (prev.line, prev.parity, prev.completed) != (w.line, w.parity, w.completed)
                or w.barrier[0] not in rearmed or w.line in flagged):
            continue
        released = set(tr.arrive_logs.get(w.task, [])[prev.released:w.released])
        if not released & ctx.guards(w.barrier[0]):
            continue  # waiting again for the same phase without having released the slot: harmless
        flagged.add(w.line)
        bs = ctx.model.barriers[w.barrier[0]]
        f = Finding(
            "phase-flip", "error", w.line,
            f"{ctx.Task(w.task)} waits on `{ctx.bar(w.barrier)}` with phase {w.parity} again, though the barrier "
            f"completes a new phase every round: the phase does not flip, so this wait passes on the phase it "
            f"already consumed and does not wait for the next one. Flip the phase each time the ring wraps.",
            related([(bs.line, f"{bs.name} allocated here")]),
            "phase = (k // NUM_STAGES) & 1, or p ^= (buf == NUM_STAGES - 1) after each use")
        f.barrier_set = w.barrier[0]
        ctx.add(f)
