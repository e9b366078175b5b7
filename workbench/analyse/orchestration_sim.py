"""Run a TLX kernel's orchestration on one program (CTA), concretely, without a GPU.

Each task (the default warps and every ``partitionN`` of ``ttg.warp_specialize``) is interpreted
over the TTGIR: its integer arithmetic and control flow (``scf.for``/``while``/``if``) with the
launch's scalar arguments, and its orchestration ops against a shared state of mbarriers, named
barriers and buffer slots (:mod:`workbench.analyse.orchestration_state`). Tensor values are not
computed. Tasks run in turn, each until it blocks on a wait; when no task can move, the ones still
blocked are a hang. A task whose control flow or barrier index depends on a value the simulator
does not know is *lost* there, and the checks stay silent about what it would have done next.

The result is a :class:`Trace`: every wait that passed (with the phase it waited for and the
completed phases it saw), where each blocked task stands, every mbarrier's phases (who arrived,
bytes expected and copied), and the buffer races found by happens-before tracking.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from workbench.analyse.orchestration import Orchestration, SyncOp
from workbench.analyse.orchestration_arith import ARITH_OPS, evaluate
from workbench.analyse.orchestration_sim_ops import (
    BadIndex,
    Blocked,
    Lost,
    OutOfRange,
    WaitEvent,
    blocking_op,
    op_line,
    sync_op,
)
from workbench.analyse.orchestration_state import VC, Access, MBarrier, Memory, NamedBarrier, Race
from workbench.ir.mlir import Op, Region, memdesc_type

_BLOCKING = {"wait", "named_wait"}


class _Yielded(Exception):
    """scf.yield / scf.condition / warp_yield reached: carries the yielded values."""


@dataclass
class Trace:
    waits: list[WaitEvent] = field(default_factory=list)
    blocked: list[Blocked] = field(default_factory=list)  # tasks that could not move at the end
    finished: list[int] = field(default_factory=list)
    lost: list[tuple[int, int | None, str]] = field(default_factory=list)  # (task, line, why)
    barriers: dict[tuple[int, int], MBarrier] = field(default_factory=dict)
    races: list[Race] = field(default_factory=list)
    unwritten_reads: list[tuple[tuple[int, int], Access]] = field(default_factory=list)
    arrive_logs: dict[int, list[int]] = field(default_factory=dict)  # task -> barrier set per arrive/expect
    early_releases: list[tuple[int, int | None, list[int | None]]] = field(default_factory=list)  # task, arrive, reads
    bad_indices: list[BadIndex] = field(default_factory=list)  # views outside their allocation, when used
    # (task, its loops then: (line, iteration, variable) outermost first) -> [(barrier, line)] of its expects
    expects: dict[tuple, list[tuple[tuple[int, int], int | None]]] = field(default_factory=dict)
    # copies whose bytes landed before their phase announced them: (task, loops, barrier, line)
    early_copies: list[tuple[int, tuple, tuple[int, int], int | None]] = field(default_factory=list)
    named_run_ahead: dict[int, tuple[int, int]] = field(default_factory=dict)  # named id -> (task, arrivals)
    opaque_barriers: set[int] = field(default_factory=set)
    opaque_buffers: set[int] = field(default_factory=set)
    truncated: bool = False
    steps: int = 0
    seconds: float = 0.0

    def sequence(self, task: int, line: int | None, n: int = 8) -> list[tuple[int, int]]:
        """The first ``n`` (barrier index, phase) pairs the wait at ``line`` of ``task`` used."""
        return [(w.barrier[1], w.parity) for w in self.waits if w.task == task and w.line == line][:n]

    @property
    def hung(self) -> bool:
        return bool(self.blocked) and not self.truncated and not self.lost


class _TaskRun:
    def __init__(self, index: int, warps: int, env: dict[str, Any]) -> None:
        self.index, self.warps, self.env = index, warps, env
        self.clock: VC = {index: 1}
        self.state = "running"
        self.blocked: Blocked | None = None
        self.mma_groups: list[list[Access]] = []
        self.cp_open: list[Access] = []
        self.cp_groups: list[list[Access]] = []
        self.store_groups: list[list[Access]] = []
        self.wait_counts: dict[tuple[int, int], int] = {}
        self.arrive_log: list[int] = []  # barrier set of each arrive/expect, in order
        self.loops: list[list] = []  # the loops it is in, outermost first: [line, iteration (from 1), variable]
        self.gen = None

    def tick(self) -> None:
        self.clock[self.index] += 1

    def epoch(self) -> tuple[int, int]:
        return (self.index, self.clock[self.index])


class Simulator:
    def __init__(self, model: Orchestration, values: dict[str, int] | None = None,
                 grid: tuple[int, int, int] = (132, 1, 1), max_steps: int = 100_000, max_seconds: float = 0.15) -> None:
        self.model, self.grid = model, grid
        self.values = {f"%{k}": v for k, v in (values or {}).items() if isinstance(v, int)}
        self.max_steps, self.max_seconds = max_steps, max_seconds
        self.trace = Trace()
        self.memory = Memory()
        self.named: dict[int, NamedBarrier] = {}
        self.tasks: list[_TaskRun] = []
        self.proxies: dict[tuple[int, tuple[int, int]], int] = {}
        self.proxy_counts: dict[int, int] = {}
        self.steps = 0
        self._parsed: dict[int, Any] = {}
        for _, o in model.ops("opaque"):
            if o.barrier is not None:
                self.trace.opaque_barriers.add(o.barrier)
            self.trace.opaque_buffers.update(o.buffers)

    # ---- scheduling -------------------------------------------------------------------------
    def run(self) -> Trace:
        t0 = time.perf_counter()
        self._deadline = t0 + self.max_seconds
        func = self.model.func
        if func is None:
            return self.trace
        main = _TaskRun(0, self.model.tasks[0].num_warps if self.model.tasks else 4, dict(self.values))
        main.gen = self._task_body(main, func.regions[0])
        self.tasks.append(main)
        while True:
            moved = False
            for t in list(self.tasks):
                if t.state != "running":
                    continue
                before = self.steps
                self._step(t)
                moved |= self.steps != before or t.state != "running"
            if self.trace.truncated or all(t.state != "running" for t in self.tasks):
                break
            if not moved:
                break
        self._finish()
        self.trace.seconds = time.perf_counter() - t0
        return self.trace

    def _step(self, t: _TaskRun) -> None:
        try:
            next(t.gen)
        except StopIteration:
            t.state, t.blocked = "done", None
            self._flush(t)
        except Lost as e:
            t.state = "lost"
            self.trace.lost.append((t.index, e.line, e.what))
        except _Budget:
            self.trace.truncated = True

    def _finish(self) -> None:
        tr = self.trace
        for t in self.tasks:
            tr.arrive_logs[t.index] = t.arrive_log
            if t.state == "done":
                tr.finished.append(t.index)
            elif t.state == "running" and t.blocked is not None and not tr.truncated:
                tr.blocked.append(t.blocked)
        tr.races = self.memory.races
        tr.unwritten_reads = self.memory.unwritten
        tr.steps = self.steps

    def _task_body(self, t: _TaskRun, region: Region):
        try:
            yield from self._region(t, region)
        except _Yielded:
            pass

    # ---- interpretation ---------------------------------------------------------------------
    def _region(self, t: _TaskRun, region: Region):
        env = t.env
        for op in region.ops:
            self.steps += 1
            if self.steps > self.max_steps or (self.steps & 1023 == 0 and time.perf_counter() > self._deadline):
                raise _Budget
            name = op.name
            if name in ARITH_OPS:
                if op.results:
                    env[op.results[0]] = evaluate(op, env.get)
                continue
            sync: SyncOp | None = op.sync
            if sync is not None:
                if sync.kind in _BLOCKING:
                    yield from blocking_op(self, t, op, sync)
                else:
                    sync_op(self, t, op, sync)
                continue
            handler = _CONTROL.get(name)
            if handler is not None:
                result = handler(self, t, op)
                if result is not None:  # a generator: control flow with regions
                    yield from result
                continue
            for r in op.results:
                env[r] = None

    # control flow ----------------------------------------------------------------------------
    def _for(self, t: _TaskRun, op: Op):
        header = self._parsed.get(id(op)) or op.for_loop()
        if header is None:
            raise Lost(op.sync.line if op.sync else None, "a loop the model cannot read")
        self._parsed[id(op)] = header
        iv, lb, ub, st, pairs = header.iv, header.lower, header.upper, header.step, header.iter_args
        env = t.env
        lo, hi, step = env.get(lb), env.get(ub), env.get(st)
        if lo is None or hi is None or not step:
            raise Lost(self._line(op), "a loop whose bounds depend on values not known before the launch")
        carried = [env.get(init) for _, init in pairs]
        i = lo
        t.loops.append(loop := [self._line(op), 0, None])
        while i < hi:
            env[iv] = i
            loop[1:] = [loop[1] + 1, i]
            for (name, _), v in zip(pairs, carried, strict=True):
                env[name] = v
            carried = yield from self._body(t, op.regions[0])
            i += step
        t.loops.pop()
        for r, v in zip(op.results, carried, strict=False):
            env[r] = v

    def _while(self, t: _TaskRun, op: Op):
        pairs = self._parsed.get(id(op))
        if pairs is None:
            pairs = self._parsed[id(op)] = op.while_args()
        env = t.env
        vals = [env.get(init) for _, init in pairs]
        before, after = op.regions[0], op.regions[1]
        t.loops.append(loop := [self._line(op), 0, None])
        while True:
            loop[1] += 1
            for (name, _), v in zip(pairs, vals, strict=True):
                env[name] = v
            cond_vals = yield from self._body(t, before)
            cond, args = cond_vals[0], cond_vals[1:]
            if cond is None:
                raise Lost(self._line(op), "a while loop whose condition depends on values not known before the launch")
            if not cond:
                for r, v in zip(op.results, args, strict=False):
                    env[r] = v
                t.loops.pop()
                return
            for name, v in zip(after.args, args, strict=False):
                env[name] = v
            vals = yield from self._body(t, after)

    def _if(self, t: _TaskRun, op: Op):
        cond = t.env.get(op.operands[0]) if op.operands else None
        if cond is None:
            raise Lost(self._line(op), "a branch on a value not known before the launch")
        if cond:
            vals = yield from self._body(t, op.regions[0])
        elif len(op.regions) > 1:
            vals = yield from self._body(t, op.regions[1])
        else:
            vals = []
        for r, v in zip(op.results, vals, strict=False):
            t.env[r] = v

    def _body(self, t: _TaskRun, region: Region):
        try:
            yield from self._region(t, region)
        except _Yielded as y:
            return y.args[0]
        return []

    def _yield(self, t: _TaskRun, op: Op):
        raise _Yielded([t.env.get(v) for v in op.operands])

    def _warp_specialize(self, t: _TaskRun, op: Op):
        captured = [t.env.get(v) for v in op.operands]
        for region in op.regions:
            if not region.label.startswith("partition"):
                continue
            index = int(region.label[len("partition"):]) + 1
            mt = self.model.tasks[index] if index < len(self.model.tasks) else None
            run = _TaskRun(index, mt.num_warps if mt else region.num_warps or 4,
                           dict(zip(region.args, captured, strict=False)))
            run.gen = self._task_body(run, region)
            self.tasks.append(run)
        default = next((r for r in op.regions if r.label == "default"), None)
        if default is not None:
            vals = yield from self._body(t, default)
            for r, v in zip(op.results, vals, strict=False):
                t.env[r] = v

    def _program_id(self, t: _TaskRun, op: Op):
        t.env[op.results[0]] = 0
        return None

    def _num_programs(self, t: _TaskRun, op: Op):
        axis = "xyz".index(op.body[:1]) if op.body[:1] in "xyz" else 0
        t.env[op.results[0]] = self.grid[axis]
        return None

    def _alloc(self, t: _TaskRun, op: Op):
        # the model's sets are the main body's allocations; a partition's own are not followed
        ref = self.model.refs.get(0, {}).get(op.results[0]) if not op.operands and t.index == 0 else None
        t.env[op.results[0]] = (ref[0] + "set", ref[1]) if ref else None
        return None

    def _view(self, t: _TaskRun, op: Op):
        src = t.env.get(op.operands[0]) if op.operands else None
        if not isinstance(src, tuple):
            src = None
        if src is not None and op.name == "ttg.memdesc_index" and src[0] in ("barset", "bufset"):
            idx = t.env.get(op.operands[1]) if len(op.operands) > 1 else None
            count = self._count(op, src)
            if isinstance(idx, int) and count and not 0 <= idx < count:  # found when an op uses the view
                own = getattr(self.model.to_line, "own", None)
                src = (src[0][:3], src[1], idx, OutOfRange(self._line(op), count, own(op) if own else None))
            else:
                src = (src[0][:3], src[1], idx)
        t.env[op.results[0]] = src
        return None

    def _count(self, op: Op, src: tuple) -> int | None:
        """The slots a ``memdesc_index`` chooses from: the leading dimension of the view it indexes
        (the allocation's count, unless a reinterpret changed the shape)."""
        md = memdesc_type(op.body.split(" : ", 1)[1]) if " : " in op.body else None
        if md is not None and md[0]:
            return md[0][0]
        sets = self.model.barriers if src[0] == "barset" else self.model.buffers
        return sets[src[1]].count if src[1] < len(sets) else None

    def _line(self, op: Op) -> int | None:
        return op_line(self.model, op)

    def _flush(self, t: _TaskRun) -> None:
        """A finished task's accesses in flight complete at its end."""
        for group in (*t.mma_groups, t.cp_open, *t.cp_groups, *t.store_groups):
            for acc in group:
                if acc.epoch is None:
                    acc.epoch = t.epoch()
        t.mma_groups, t.cp_groups, t.store_groups, t.cp_open = [], [], [], []


class _Budget(Exception):
    pass


_CONTROL = {
    "scf.for": Simulator._for,
    "scf.while": Simulator._while,
    "scf.if": Simulator._if,
    "scf.yield": Simulator._yield,
    "scf.condition": Simulator._yield,
    "ttg.warp_yield": Simulator._yield,
    "ttg.warp_return": Simulator._yield,
    "tt.return": Simulator._yield,
    "ttg.warp_specialize": Simulator._warp_specialize,
    "tt.get_program_id": Simulator._program_id,
    "tt.get_num_programs": Simulator._num_programs,
    "ttg.local_alloc": Simulator._alloc,
    "ttg.memdesc_index": Simulator._view,
    "ttg.memdesc_subslice": Simulator._view,
    "ttg.memdesc_trans": Simulator._view,
    "ttg.memdesc_reinterpret": Simulator._view,
    "ttg.memdesc_subview": Simulator._view,
    "ttg.memdesc_reshape": Simulator._view,
}


def simulate(model: Orchestration, values: dict[str, int] | None = None, **options) -> Trace:
    """Run ``model``'s tasks for program 0 with the launch's scalar ``values`` (name -> int)."""
    return Simulator(model, values, **options).run()
