"""What the orchestration simulator tracks while the tasks run: mbarriers, named barriers, buffer slots.

Ordering is tracked with vector clocks (happens-before, as race detectors do): every task has a
clock component, and every (issuing task, barrier) pair of TMA copies has one (the async proxy).
An arrive, expect or copy releases the task's clock into the barrier's current phase; a wait that
passes acquires the clock of the phases completed so far. A buffer access is ordered after another
when the accessing task's clock covers the other access's epoch. Accesses still in flight (a wgmma
before its ``async_dot_wait``, a ``cp.async`` before its wait group, a TMA store before its store
wait) have no epoch yet and are ordered before nothing. Each completed phase of an mbarrier keeps
the clock of what completed it, so a task can tell which phases it knows completed before it waits
(:meth:`MBarrier.known`), whichever way it learned it (that barrier, another mbarrier, a named barrier).
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass, field

VC = dict[int, int]
_ORDER = itertools.count()  # the order in which phases start and complete, across every barrier of a run


def join(into: VC, other: VC) -> None:
    for k, v in other.items():
        if v > into.get(k, 0):
            into[k] = v


@dataclass
class Access:
    """One read or write of a buffer slot."""

    task: int
    line: int | None
    kind: str  # the SyncOp kind that made it: tma_load, cp_async, local_store, mma, local_load, tma_store...
    write: bool
    epoch: tuple[int, int] | None = None  # None while in flight
    barrier: tuple[int, int] | None = None  # a TMA write: the barrier instance it completes on

    def before(self, vc: VC) -> bool:
        return self.epoch is not None and vc.get(self.epoch[0], 0) >= self.epoch[1]


@dataclass
class Race:
    kind: str  # 'RAW' (read not ordered after the write), 'WAR', 'WAW'
    buffer: int
    slot: int
    first: Access
    second: Access


@dataclass
class _Slot:
    write: Access | None = None
    reads: list[Access] = field(default_factory=list)


class Memory:
    """Buffer slots: the last write and the reads since, checked against the accessor's clock."""

    def __init__(self) -> None:
        self.slots: dict[tuple[int, int], _Slot] = {}
        self.races: list[Race] = []
        self.unwritten: list[tuple[tuple[int, int], Access]] = []  # reads of a slot never written (yet)
        self._seen: set[tuple] = set()

    def _race(self, kind: str, key: tuple[int, int], first: Access, second: Access) -> None:
        sig = (kind, first.line, second.line, first.task, second.task)
        if sig not in self._seen:
            self._seen.add(sig)
            self.races.append(Race(kind, key[0], key[1], first, second))

    def read(self, key: tuple[int, int], acc: Access, vc: VC) -> None:
        slot = self.slots.setdefault(key, _Slot())
        if slot.write is None:
            self.unwritten.append((key, acc))
        elif not slot.write.before(vc):
            self._race("RAW", key, slot.write, acc)
        # keep one finished read per task (later ones cover earlier ones) and every read in flight
        slot.reads = [r for r in slot.reads if r.task != acc.task or r.epoch is None] + [acc]

    def write(self, key: tuple[int, int], acc: Access, vc: VC) -> None:
        slot = self.slots.setdefault(key, _Slot())
        w = slot.write
        if w is not None and not w.before(vc) and not (w.task == acc.task and w.kind == acc.kind == "local_store"):
            self._race("WAW", key, w, acc)
        for r in slot.reads:
            if not r.before(vc):
                self._race("WAR", key, r, acc)
        slot.write, slot.reads = acc, []


@dataclass
class Phase:
    """One phase of one mbarrier: who arrived, what was expected and copied."""

    arrivals: Counter = field(default_factory=Counter)  # (task, line) -> arrivals
    expected: int = 0
    copied: int = 0
    expects: list[tuple[int, int | None, int]] = field(default_factory=list)  # (task, line, bytes)
    copies: list[tuple[int, int | None, int]] = field(default_factory=list)
    vc: VC = field(default_factory=dict)  # the clocks of its arrivals and copies: what completing it needed
    started: int | None = None  # when its first arrival, expect or copy came (in _ORDER), and who made it
    started_by: tuple[int, int | None] | None = None
    done: int | None = None  # when it completed (in _ORDER), and whose arrival or copy completed it
    done_by: tuple[int, int | None] | None = None


class MBarrier:
    """An mbarrier: phases complete when ``arrive_count`` arrivals are in and no bytes are pending."""

    def __init__(self, set_id: int, index: int, arrive_count: int) -> None:
        self.set_id, self.index, self.arrive_count = set_id, index, arrive_count
        self.completed = 0
        self.pending = arrive_count
        self.tx = 0
        self.vc_cur: VC = {}
        self.vc_done: VC = {}
        self.cur = Phase()
        self.phases: list[Phase] = []
        self.byte_mismatches: list[Phase] = []
        self.per_call: dict[int, int] = {}  # task -> the most one of its calls arrives with

    def arrive(self, n: int, who: tuple[int, int | None], vc: VC) -> None:
        self._start(who)
        self.pending -= n
        self.cur.arrivals[who] += n
        self.per_call[who[0]] = max(self.per_call.get(who[0], 0), n)
        join(self.vc_cur, vc)
        self._maybe_complete(who)

    def expect(self, nbytes: int, who: tuple[int, int | None], vc: VC) -> None:
        self.tx += nbytes
        self.cur.expected += nbytes
        self.cur.expects.append((*who, nbytes))
        self.arrive(1, who, vc)

    def copy(self, nbytes: int, who: tuple[int, int | None], vc: VC) -> bool:
        """A copy's bytes land (complete_tx); True when more bytes have landed than this phase announced so far
        (its expect comes later, or went to another barrier)."""
        self._start(who)
        self.tx -= nbytes
        self.cur.copied += nbytes
        self.cur.copies.append((*who, nbytes))
        early = self.tx < 0
        join(self.vc_cur, vc)
        self._maybe_complete(who)
        return early

    def _start(self, who: tuple[int, int | None]) -> None:
        if self.cur.started is None:
            self.cur.started, self.cur.started_by = next(_ORDER), who

    def _maybe_complete(self, who: tuple[int, int | None]) -> None:
        if self.pending > 0 or self.tx > 0:
            return
        done = self.cur
        done.done, done.done_by = next(_ORDER), who
        if done.copies and done.expected != done.copied:
            self.byte_mismatches.append(done)
        self.completed += 1
        done.vc = self.vc_cur
        join(self.vc_done, self.vc_cur)
        self.phases.append(done)
        self.cur, self.vc_cur = Phase(), {}
        self.pending, self.tx = self.arrive_count, 0

    def passes(self, parity: int) -> bool:
        """``mbarrier.try_wait.parity``: true once the phase of that parity has completed."""
        return (self.completed & 1) != (parity & 1)

    def known(self, vc: VC) -> int:
        """How many phases a task with clock ``vc`` knows have completed: 1 + the last phase whose
        arrivals and copies all happen before it (phases complete in order, so the earlier ones too)."""
        for i in range(len(self.phases) - 1, -1, -1):
            if all(vc.get(k, 0) >= v for k, v in self.phases[i].vc.items()):
                return i + 1
        return 0


class NamedBarrier:
    """A hardware named barrier (``bar.sync``/``bar.arrive`` id, threads). It counts threads, not tasks: a task
    that arrives twice before the others completes a generation alone (``run_ahead`` records the first time)."""

    def __init__(self, ident: int) -> None:
        self.ident = ident
        self.arrived = 0
        self.generation = 0
        self.vc_cur: VC = {}
        self.vc_done: VC = {}
        self.by_task: dict[int, int] = {}  # arrivals per task in the current generation
        self.run_ahead: tuple[int, int] | None = None  # (task, its arrivals) of the first generation it filled twice

    def arrive(self, threads: int, needed: int, vc: VC, task: int | None = None) -> int:
        """Arrive with ``threads`` (from ``task``); the generation this arrival belongs to."""
        gen = self.generation
        self.arrived += threads
        join(self.vc_cur, vc)
        if task is not None:
            self.by_task[task] = self.by_task.get(task, 0) + 1
        if self.arrived >= needed:
            self.generation += 1
            self.arrived -= needed
            join(self.vc_done, self.vc_cur)
            self.vc_cur = {}
            twice = [(t, n) for t, n in self.by_task.items() if n > 1]
            if twice and self.run_ahead is None:
                self.run_ahead = twice[0]
            self.by_task = {}
        return gen
