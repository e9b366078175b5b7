"""The orchestration ops of the simulator: what each TLX op does to barriers, buffer slots and clocks.

Semantics followed (PTX ISA, and the uTLX lowering read from the PTX it emits):

* ``barrier_arrive(bar, n)``: the task's warps sync, one thread arrives with count ``n`` (so a task
  of any width counts ``n`` per call); a warp barrier's arrive (``alloc_warp_barrier``) arrives from
  every thread: ``n * 32 * num_warps``.
* ``barrier_expect_bytes(bar, b)``: one arrival plus ``b`` bytes of transaction count.
* a TMA load completing on ``bar``: its bytes are taken off the transaction count.
* a phase completes when its arrivals are in and no bytes are pending; ``barrier_wait(bar, p)``
  passes once the phase of parity ``p`` has completed: on a fresh barrier, parity 1 passes at once.
  Each wait also records how many phases of its barrier the task knew had completed when it issued
  the wait (through any ordering the run tracks: this barrier, other mbarriers, named barriers).
* ``named_barrier_wait/arrive(id, n)``: ``bar.sync``/``bar.arrive``, ``n`` threads per generation.
* ``async_dot`` reads its shared-memory operands until the ``async_dot_wait`` that retires it;
  ``async_load`` writes until its ``async_load_wait_group``; a TMA store reads until its store wait.
* a view whose index is outside its allocation (``local_view(bufs, i)`` with ``i`` not in
  ``[0, count)``) addresses another allocation's memory: the first op that uses it records a
  :class:`BadIndex` and the task is not followed further.
"""

from __future__ import annotations

from dataclasses import dataclass

from workbench.analyse.orchestration_ops import SyncOp, tma_operands
from workbench.analyse.orchestration_state import Access, MBarrier, NamedBarrier, join
from workbench.ir.mlir import Op

_PROXY_BASE = 1_000


class Lost(Exception):
    """The simulator cannot follow a task past this op (a value it does not know)."""

    def __init__(self, line: int | None, what: str) -> None:
        super().__init__(what)
        self.line, self.what = line, what


@dataclass(frozen=True)
class OutOfRange:
    """Carried by a view whose index is outside its allocation: where the view was made (the kernel's
    line, and the line inside an inlined helper when it was made there), and the slots its allocation has."""

    line: int | None
    count: int
    own_line: int | None = None


@dataclass
class BadIndex:
    """A use of an out-of-range view: its task, the allocation ('bar' or 'buf', set id), the index, and
    the loops the task was in when it used it, outermost first ((line, iteration from 1, variable)); the
    view itself may have been made before them (a constant index is hoisted out of loops)."""

    task: int
    kind: str
    set_id: int
    index: int
    where: OutOfRange
    use_line: int | None
    use_kind: str
    loops: tuple[tuple[int | None, int, int | None], ...] = ()


@dataclass
class WaitEvent:
    task: int
    line: int | None
    barrier: tuple[int, int]  # (set id, index)
    parity: int
    completed: int  # phases the barrier had completed when the wait passed
    ordinal: int  # how many waits this task made on this barrier before
    released: int = 0  # how many arrives/expects this task had made when the wait passed
    known: int = 0  # phases of the barrier that completed before the wait, as far as the task knew then


@dataclass
class Blocked:
    task: int
    line: int | None
    kind: str  # 'wait' or 'named_wait'
    barrier: tuple[int, int] | None = None
    parity: int | None = None
    named: int | None = None
    ordinal: int = 0
    known: int = 0  # as WaitEvent.known


def op_line(model, op: Op) -> int | None:
    if op.sync is not None:
        return op.sync.line
    return model.to_line(op) if model.to_line else None


def _value(t, name: str | None, line, what: str):
    v = t.env.get(name) if name else None
    if v is None:
        raise Lost(line, what)
    return v


def _pred(t, ops: list[str], i: int, line) -> bool:
    if len(ops) <= i:
        return True
    v = t.env.get(ops[i])
    if v is None:
        raise Lost(line, "a predicate not known before the launch")
    return bool(v) if isinstance(v, int) else True  # a memdesc there: a dependency, not a predicate


def _ref(value) -> tuple | None:
    """A buffer/barrier reference (a tuple), or None for a scalar or an unknown value."""
    return value if isinstance(value, tuple) else None


def _in_range(sim, t, ref: tuple, line, kind: str) -> None:
    if len(ref) > 3 and isinstance(ref[3], OutOfRange):
        loops = _loops(t)
        sim.trace.bad_indices.append(BadIndex(t.index, ref[0], ref[1], ref[2], ref[3], line, kind, loops))
        raise Lost(line, f"index {ref[2]} outside its allocation of {ref[3].count}")


def _barrier(sim, t, name: str, s: SyncOp) -> MBarrier:
    ref, line = _ref(t.env.get(name)), s.line
    if ref is not None:
        _in_range(sim, t, ref, line, s.kind)
    if ref is None or ref[0] not in ("bar", "barset") or (ref[0] == "bar" and ref[2] is None):
        raise Lost(line, "a barrier (or barrier index) not known before the launch")
    key = (ref[1], ref[2] if ref[0] == "bar" else 0)
    bar = sim.trace.barriers.get(key)
    if bar is None:
        bar = MBarrier(key[0], key[1], sim.model.barriers[key[0]].arrive_count)
        sim.trace.barriers[key] = bar
    return bar


def _slot(sim, t, name: str | None, s: SyncOp) -> tuple[int, int] | None:
    ref = _ref(t.env.get(name)) if name else None
    if ref is None or ref[0] not in ("buf", "bufset"):
        return None
    _in_range(sim, t, ref, s.line, s.kind)
    idx = ref[2] if ref[0] == "buf" else 0
    if idx is None or ref[1] in sim.trace.opaque_buffers:
        return None
    return (ref[1], idx)


def _read(sim, t, key, s: SyncOp, in_flight: bool = False) -> Access:
    acc = Access(t.index, s.line, s.kind, False, None if in_flight else t.epoch())
    if key is not None:
        sim.memory.read(key, acc, t.clock)
    return acc


def _write(sim, t, key, s: SyncOp, epoch=None, barrier=None) -> Access:
    acc = Access(t.index, s.line, s.kind, True, epoch, barrier)
    if key is not None:
        sim.memory.write(key, acc, t.clock)
    return acc


def _retire(t, groups: list[list[Access]], keep: int) -> list[list[Access]]:
    n = max(0, len(groups) - keep)
    for group in groups[:n]:
        for acc in group:
            if acc.epoch is None:
                acc.epoch = t.epoch()
    return groups[n:]


def sync_op(sim, t, op: Op, s: SyncOp) -> None:
    ops, line, kind = op.operands, s.line, s.kind
    who = (t.index, line)
    if kind in ("arrive", "warp_arrive"):
        if _pred(t, ops, 1, line):
            in_flight = [a.line for g in (*t.mma_groups, *t.store_groups) for a in g if a.epoch is None]
            if in_flight:  # a release while this task's own reads are still running
                sim.trace.early_releases.append((t.index, line, in_flight))
            n = (s.count or 1) * (32 * t.warps if kind == "warp_arrive" else 1)
            bar = _barrier(sim, t, ops[0], s)
            bar.arrive(n, who, t.clock)
            t.arrive_log.append(bar.set_id)
            t.tick()
    elif kind == "expect":
        if _pred(t, ops, 1, line):
            bar = _barrier(sim, t, ops[0], s)
            bar.expect(s.bytes or 0, who, t.clock)
            sim.trace.expects.setdefault((t.index, _loops(t)), []).append(((bar.set_id, bar.index), line))
            t.arrive_log.append(bar.set_id)
            t.tick()
    elif kind == "tma_load":
        _tma_load(sim, t, op, s)
    elif kind == "cp_async":
        t.cp_open.append(_write(sim, t, _slot(sim, t, ops[1] if len(ops) > 1 else None, s), s))
    elif kind == "cp_commit":
        t.cp_groups.append(t.cp_open)
        t.cp_open = []
    elif kind == "cp_wait":
        t.cp_groups = _retire(t, t.cp_groups, s.count or 0)
    elif kind == "mma":
        in_flight = "isAsync = true" in op.body
        accs = [_read(sim, t, key, s, in_flight) for v in ops[:2] if (key := _slot(sim, t, v, s)) is not None]
        if in_flight:
            t.mma_groups.append(accs)
    elif kind == "mma_wait":
        t.mma_groups = _retire(t, t.mma_groups, s.count or 0)
    elif kind == "local_load":
        _read(sim, t, _slot(sim, t, ops[0] if ops else None, s), s)
    elif kind == "local_store":
        _write(sim, t, _slot(sim, t, ops[1] if len(ops) > 1 else None, s), s, t.epoch())
    elif kind == "tma_store":
        tail = tma_operands(op)
        t.store_groups.append([_read(sim, t, _slot(sim, t, tail[0] if tail else None, s), s, True)])
    elif kind == "store_wait":
        t.store_groups = _retire(t, t.store_groups, s.count or 0)
    elif kind == "named_arrive":
        _named(sim, t, op, s)
    elif kind in ("tc_mma", "tc_commit"):
        _tcgen05(sim, t, op, s)


def _tma_load(sim, t, op: Op, s: SyncOp) -> None:
    tail = tma_operands(op)
    if not _pred(t, tail, 2, s.line):
        return
    bar = _barrier(sim, t, tail[1], s) if len(tail) > 1 else None
    key = _slot(sim, t, tail[0] if tail else None, s)
    if bar is None:
        return
    comp = sim.proxies.setdefault((t.index, (bar.set_id, bar.index)), _PROXY_BASE + len(sim.proxies))
    count = sim.proxy_counts.get(comp, 0) + 1
    sim.proxy_counts[comp] = count
    _write(sim, t, key, s, (comp, count), (bar.set_id, bar.index))
    vc = dict(t.clock)
    vc[comp] = count
    if bar.copy(s.bytes or 0, (t.index, s.line), vc):
        sim.trace.early_copies.append((t.index, _loops(t), (bar.set_id, bar.index), s.line))
    t.tick()


def _loops(t) -> tuple:
    """The loops task ``t`` is in now, as the trace keeps them: ((line, iteration, variable), ...)."""
    return tuple(map(tuple, t.loops))


def _tcgen05(sim, t, op: Op, s: SyncOp) -> None:
    if s.kind == "tc_mma":
        for v in op.operands[:2]:
            if (key := _slot(sim, t, v, s)) is not None:
                _read(sim, t, key, s)
    for v in op.operands:
        ref = _ref(t.env.get(v))
        if ref is not None and ref[0] in ("bar", "barset"):
            _barrier(sim, t, v, s).arrive(1, (t.index, s.line), t.clock)
    t.tick()


def _named(sim, t, op: Op, s: SyncOp) -> int:
    ident = _value(t, op.operands[0] if op.operands else None, s.line, "a named barrier id not known")
    needed = _value(t, op.operands[1] if len(op.operands) > 1 else None, s.line, "a thread count not known")
    nb = sim.named.get(ident)
    if nb is None:
        nb = sim.named[ident] = NamedBarrier(ident)
    gen = nb.arrive(32 * t.warps, needed, t.clock, t.index)
    if nb.run_ahead is not None:
        sim.trace.named_run_ahead.setdefault(ident, nb.run_ahead)
    t.tick()
    return gen


def blocking_op(sim, t, op: Op, s: SyncOp):
    """A wait: yields while it cannot pass (the scheduler runs other tasks meanwhile)."""
    if s.kind == "named_wait":
        gen = _named(sim, t, op, s)
        nb: NamedBarrier = sim.named[t.env[op.operands[0]]]
        while nb.generation <= gen:
            t.blocked = Blocked(t.index, s.line, "named_wait", named=nb.ident)
            yield
        t.blocked = None
        join(t.clock, nb.vc_done)
        return
    ops = op.operands
    if not _pred(t, ops, 2, s.line):
        return
    bar = _barrier(sim, t, ops[0], s)
    parity = _value(t, ops[1] if len(ops) > 1 else None, s.line, "a phase not known before the launch")
    key = (bar.set_id, bar.index)
    ordinal = t.wait_counts.get(key, 0)
    t.wait_counts[key] = ordinal + 1
    if bar.set_id in sim.trace.opaque_barriers:
        _acquire_all(sim, t)
        return
    known = bar.known(t.clock)  # the task's clock does not move while it waits
    while not bar.passes(parity):
        t.blocked = Blocked(t.index, s.line, "wait", key, parity & 1, ordinal=ordinal, known=known)
        yield
    t.blocked = None
    join(t.clock, bar.vc_done)
    sim.trace.waits.append(WaitEvent(t.index, s.line, key, parity & 1, bar.completed, ordinal, len(t.arrive_log),
                                     known))


def _acquire_all(sim, t) -> None:
    """A wait on a barrier the model cannot follow: assume it orders everything released so far."""
    for other in sim.tasks:
        join(t.clock, other.clock)
    for bar in sim.trace.barriers.values():
        join(t.clock, bar.vc_done)
        join(t.clock, bar.vc_cur)

