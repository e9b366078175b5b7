"""Indices outside their allocation: a ``tlx.local_view(bufs_or_bars, i)`` (TTGIR ``ttg.memdesc_index``)
whose index, as the simulated run computed it, is not in ``[0, count)``, used by an op the run follows.
An index the run does not know says nothing."""

from __future__ import annotations

from workbench.analyse.orchestration_sim_ops import BadIndex
from workbench.check.context import Context
from workbench.check.findings import Finding, iteration_text, related

_USES = {"wait": "waits on it", "arrive": "arrives on it", "warp_arrive": "arrives on it",
         "expect": "expects bytes on it", "tma_load": "loads into it (TMA)", "cp_async": "copies into it",
         "mma": "reads it in an MMA", "local_load": "reads it", "local_store": "writes it",
         "tma_store": "stores from it (TMA)", "tc_mma": "uses it in an MMA", "tc_commit": "commits to it"}


def index_out_of_range(ctx: Context) -> None:
    tr = ctx.trace
    if tr is None:
        return
    for bad in tr.bad_indices:
        ctx.add(_finding(ctx, bad))


def bad_lines(ctx: Context) -> set[tuple[int, int | None]]:
    """(task, line) where a task stopped at an out-of-range index: not a 'could not follow' case."""
    return {(b.task, b.use_line) for b in ctx.trace.bad_indices} if ctx.trace is not None else set()


def _finding(ctx: Context, bad: BadIndex) -> Finding:
    where = bad.where
    if bad.kind == "bar":
        s = ctx.model.barriers[bad.set_id]
        name, what, unit = s.name, "mbarriers", "another allocation's memory, not an mbarrier of"
        notes = [(s.line, f"{s.name} allocated here ({s.count} mbarrier(s), arrive_count={s.arrive_count})")]
    else:
        b = ctx.model.buffers[bad.set_id]
        name, what, unit = b.name, "slots", "another allocation's memory (or past the end of shared memory), not"
        notes = [(b.line, f"{b.name} allocated here ({b.count} x {'x'.join(map(str, b.shape))} {b.dtype})")]
    count = where.count
    when = iteration_text(bad.loops)
    use = _USES.get(bad.use_kind, "uses it")
    if where.own_line and where.own_line != where.line:
        notes.append((where.own_line, f"the index is computed here, in a function called at line {where.line}"))
    at = ""
    if bad.use_line != where.line:
        notes.append((bad.use_line, f"the view is used here ({bad.use_kind})"))
        at = f" at line {bad.use_line}" if bad.use_line else ""
    return Finding(
        "index-out-of-range", "error", where.line,
        f"`{name}` has {count} {what} (indices 0 to {count - 1}), but {ctx.task(bad.task)} indexes it with "
        f"{bad.index} here{when} and {use}{at}: that is {unit} `{name}`. Keep the index in [0, {count}).",
        related(notes), _hint(ctx, bad, name, count))


def _hint(ctx: Context, bad: BadIndex, name: str, count: int) -> str:
    """The modulo form of a ring index; and when a ring of the other kind (slots for barriers, barriers for slots)
    is larger and holds the index, that the two may be sized apart (one barrier short of the slots it guards)."""
    modulo = (f"slot = k % NUM_STAGES; phase = (k // NUM_STAGES) & 1; tlx.local_view({name}, slot) "
              f"(NUM_STAGES = {count} here)")
    others = ctx.model.buffers if bad.kind == "bar" else ctx.model.barriers
    pair = next((o for o in others if o.count > count and 0 <= bad.index < o.count), None)
    if pair is None:
        return modulo
    theirs = "slots" if bad.kind == "bar" else "mbarriers"
    return (f"`{pair.name}` (line {pair.line}) has {pair.count} {theirs}: if `{name}` pairs with it, allocate "
            f"`{name}` with {pair.count} as well; else keep the index in range: {modulo}")
