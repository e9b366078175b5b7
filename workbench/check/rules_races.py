"""Rules on buffer slots, from the simulated run's happens-before tracking: a slot written again
before the release of its last read, and a read not ordered after the write that fills it."""

from __future__ import annotations

from workbench.analyse.orchestration_state import Access
from workbench.check.context import WRITES, Context
from workbench.check.findings import Finding, related

_WHAT = {"tma_load": "TMA copy", "cp_async": "async load", "local_store": "local_store", "mma": "async_dot",
         "local_load": "local_load", "tma_store": "TMA store", "tc_mma": "MMA"}


def _desc(ctx: Context, acc: Access) -> str:
    return f"the {_WHAT.get(acc.kind, acc.kind)} at line {acc.line} ({ctx.task(acc.task)})"


def races(ctx: Context) -> None:
    tr = ctx.trace
    if tr is None or ctx.has({"wait-never-completes", "first-wait-passes", "phase-flip", "arrive-count",
                              "expect-bytes"}):
        return  # a broken barrier protocol explains the races it causes; report it alone
    unread = {id(r.first) for r in tr.races if r.kind == "RAW"}  # writes whose reader never synchronised
    for race in tr.races:
        key = (race.buffer, race.slot)
        if race.kind == "WAW" and id(race.first) in unread:
            continue  # the unsynchronised read is the cause; reported as read-before-write
        first, second = race.first, race.second
        if race.kind == "RAW":
            via = f" (it completes on `{ctx.bar(first.barrier)}`)" if first.barrier else ""
            ctx.add(Finding(
                "read-before-write", "error", second.line,
                f"{ctx.Task(second.task)} reads `{ctx.buf(key)}` here, but nothing orders this read after "
                f"{_desc(ctx, first)} that fills it{via}: the read can see the slot before the data lands. "
                f"Wait for that write to complete before reading.",
                related([(first.line, "the write this read is not ordered after")]),
                "barrier_wait(full[i], phase) on the barrier the copy completes on; async_load_wait_group for "
                "async_load"))
        elif race.kind == "WAR":
            early = [(ln, f"released here while the {_WHAT.get(first.kind, first.kind)} at line {first.line} still "
                          f"reads the slot: arrive after its wait") for task, ln, reads in tr.early_releases
                     if task == first.task and first.line in reads]
            ctx.add(Finding(
                "slot-reuse", "error", second.line,
                f"{ctx.Task(second.task)} writes `{ctx.buf(key)}` again here while {_desc(ctx, first)} may still "
                f"read it: nothing orders the end of that read before this write, so the slot can be overwritten "
                f"under its reader. Wait on the slot's release barrier before writing, and release it only after "
                f"the last read has finished.",
                related(early[:1] + [(first.line, "the read this write is not ordered after")]),
                "producer: barrier_wait(empty[i], phase ^ 1) before the copy; consumer: async_dot_wait, then "
                "barrier_arrive(empty[i])"))
        else:
            ctx.add(Finding(
                "slot-reuse", "error", second.line,
                f"{ctx.Task(second.task)} writes `{ctx.buf(key)}` again here, but nothing orders this after "
                f"{_desc(ctx, first)} has been read and released: the earlier data can be overwritten before "
                f"anyone reads it. Wait on the slot's release barrier before writing.",
                related([(first.line, "the earlier write into the same slot")]),
                "producer: barrier_wait(empty[i], phase ^ 1) before each copy into slot i"))
    writers = {b for _, o in ctx.model.ops() if o.kind in WRITES for b in o.buffers}
    seen: set = set()
    for key, acc in tr.unwritten_reads:
        if key[0] not in writers or (acc.line, key[0]) in seen:
            continue  # nothing writes the set at all: unwritten-buffer says so
        seen.add((acc.line, key[0]))
        ctx.add(Finding(
            "read-before-write", "error", acc.line,
            f"{ctx.Task(acc.task)} reads `{ctx.buf(key)}` here before anything has written it: nothing orders this "
            f"read after the copy that fills the slot. Wait for that copy to complete before reading.",
            [], "barrier_wait(full[i], phase) on the barrier the copy completes on"))
