"""What every rule reads: the model, the simulation trace, and names for what they point at."""

from __future__ import annotations

from dataclasses import dataclass, field

from workbench.analyse.orchestration import Orchestration, SyncOp, Task
from workbench.analyse.orchestration_sim import Trace
from workbench.check.findings import Finding

COMPLETES = {"arrive", "warp_arrive", "expect", "tma_load", "tc_mma", "tc_commit", "opaque"}
WRITES = {"tma_load", "cp_async", "local_store", "opaque"}
READS = {"mma", "local_load", "tma_store", "tc_mma"}
RACE_RULES = {"slot-reuse", "read-before-write"}
PROTOCOL_RULES = {"wait-never-completes", "first-wait-passes", "phase-flip", "expect-bytes", "arrive-count"}


@dataclass
class Context:
    model: Orchestration
    trace: Trace | None
    findings: list[Finding] = field(default_factory=list)

    def add(self, finding: Finding) -> None:
        self.findings.append(finding)

    def has(self, rules: set[str], barrier_set: int | None = None) -> bool:
        return any(f.rule in rules and (barrier_set is None or f.barrier_set == barrier_set)
                   for f in self.findings)

    # names ---------------------------------------------------------------------------------
    def task(self, index: int) -> str:
        tasks = self.model.tasks
        return tasks[index].name if 0 <= index < len(tasks) else f"task {index}"

    def Task(self, index: int) -> str:  # noqa: N802 - the name, capitalised to start a sentence
        name = self.task(index)
        return name[:1].upper() + name[1:]

    def bar(self, key: tuple[int, int]) -> str:
        s = self.model.barriers[key[0]]
        return f"{s.name}[{key[1]}]" if s.count > 1 else s.name

    def buf(self, key: tuple[int, int]) -> str:
        b = self.model.buffers[key[0]]
        return f"{b.name}[{key[1]}]" if b.count > 1 else b.name

    # static queries ------------------------------------------------------------------------
    def ops_on_barrier(self, set_id: int, kinds: set[str]) -> list[tuple[Task, SyncOp]]:
        return [(t, o) for t, o in self.model.ops() if o.barrier == set_id and o.kind in kinds]

    def ops_on_buffer(self, buf_id: int, kinds: set[str]) -> list[tuple[Task, SyncOp]]:
        return [(t, o) for t, o in self.model.ops() if buf_id in o.buffers and o.kind in kinds]

    def reads_of_task(self, task: int) -> set[int]:
        return {b for o in self.model.tasks[task].ops if o.kind in READS for b in o.buffers}

    def data_of_barrier(self, set_id: int, except_task: int | None = None) -> dict[int, int | None]:
        """Buffer sets whose contents a phase of this barrier set announces: copies completing on
        it, and what the tasks that arrive on it write. Buffer set id -> a line that writes it."""
        out: dict[int, int | None] = {}
        for _, o in self.ops_on_barrier(set_id, {"tma_load"}):
            for b in o.buffers:
                out.setdefault(b, o.line)
        arrivers = {t.index for t, _ in self.ops_on_barrier(set_id, {"arrive", "warp_arrive", "expect"})}
        for index in arrivers - {except_task}:
            for o in self.model.tasks[index].ops:
                if o.kind in WRITES - {"opaque"}:
                    for b in o.buffers:
                        out.setdefault(b, o.line)
        return out

    def guards(self, set_id: int) -> set[int]:
        """Barrier sets a task waits on right before it fills what ``set_id`` announces (the wait
        before an expect or copy on it): the slot-free barriers paired with a data-ready one."""
        out: set[int] = set()
        for task in self.model.tasks:
            last = None
            for o in task.ops:
                if o.kind == "wait":
                    last = o.barrier
                elif o.kind in ("expect", "tma_load", "arrive") and o.barrier == set_id and last is not None:
                    out.add(last)
        return out

    def first_line(self, pairs: list[tuple[Task, SyncOp]]) -> int | None:
        lines = [o.line for _, o in pairs if o.line]
        return min(lines) if lines else None
