"""The orchestration model of a TLX kernel: tasks, buffer sets, barrier sets and who does what on them.

Where it comes from, and why:

* **TTGIR** (the compiled artifact's ``ttgir`` stage) is the source of the model. There every
  constexpr is folded, every ``@triton.jit`` helper (``_get_bufidx_phase``...) is inlined, every
  ``if CONSTEXPR:`` branch is resolved, each ``async_task`` replica is its own ``partitionN`` region
  with its replica id substituted, barrier sets are ``local_alloc`` + ``init_barrier`` with their
  arrive counts, and copies, expects, waits and MMAs name the exact buffer and barrier views they
  use, with their byte counts and element types. This is what will run; the Python source only
  says what the author meant, before Triton decided sizes, partitions and warps.
* **The user's source** gives what TTGIR does not: lines (from the ops' locations, mapped to the
  kernel's file or cell), variable names (MLIR name locations, e.g. ``bars_full_a``) and the text
  of the line a finding points at.
* **The launch arguments** give the runtime scalars (``M``, ``K``, ``N_CTX``, descriptor shapes),
  so that :mod:`workbench.analyse.orchestration_sim` can follow the tasks' loops concretely.

Phase and index expressions are not reasoned about symbolically: the simulator evaluates the
integer arithmetic of the TTGIR (``(k // NUM_STAGES) & 1``, ``p ^= (buf == NUM_STAGES - 1)``, helper
calls: all already lowered to ``arith`` ops) for the iterations it runs, and records the sequence
of (index, phase) each wait used. Values it cannot know (data-dependent branches, tensor contents)
stop the simulation of that task; the checks then stay silent about what depends on it.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any

from workbench.analyse.orchestration_ops import VIEW_OPS, SyncOp, also_completes, classify, tma_operands
from workbench.analyse.srcmap import same_file, served_as
from workbench.ir.mlir import Module, Op, Region, element_bytes, kernel_function, memdesc_type, parse_ttgir, walk

_COUNT = re.compile(r"^%[\w.$#-]+\s*,\s*(-?\d+)")

__all__ = ["BarrierSet", "BufferSet", "Orchestration", "SyncOp", "Task", "build_model", "classify", "tma_operands"]


@dataclass
class BufferSet:
    """One ``tlx.local_alloc``: ``count`` slots of ``shape`` x ``dtype``."""

    id: int
    name: str
    line: int | None
    shape: list[int]
    dtype: str
    count: int
    storage: str  # 'smem' or 'tmem'

    @property
    def slot_bytes(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n * element_bytes(self.dtype)

    @property
    def bytes(self) -> int:
        return self.slot_bytes * self.count


@dataclass
class BarrierSet:
    """One ``tlx.alloc_barriers`` (or ``alloc_warp_barrier``): ``count`` mbarriers."""

    id: int
    name: str
    line: int | None
    count: int
    arrive_count: int


@dataclass
class Task:
    """One async task, or one replica of it. ``index`` 0 is the kernel's own warps (the default task).
    ``registers`` is the ``setmaxnreg`` budget Triton gave it (None: none), ``requested_registers``
    what its ``async_task(registers=...)`` asked for, ``start_warp`` its first warp in the CTA and
    ``with_line`` the line of its ``with tlx.async_task(...)``."""

    index: int
    name: str
    partition: int | None
    replica: int | None
    num_warps: int
    registers: int | None
    first_line: int | None
    ops: list[SyncOp] = field(default_factory=list)
    requested_registers: int | None = None
    start_warp: int | None = None
    with_line: int | None = None


@dataclass
class Orchestration:
    kernel: str
    target: str
    filename: str
    tasks: list[Task]
    buffers: list[BufferSet]
    barriers: list[BarrierSet]
    shared_bytes: int
    warp_specialized: bool
    source_lines: list[str] = field(default_factory=list, repr=False)
    registers_used: int | None = None  # per thread, ptxas's count for the whole kernel
    ptxas_log: str = field(default="", repr=False)  # ptxas's report (remarks such as C7507), when kept
    module: Module | None = field(default=None, repr=False)
    func: Op | None = field(default=None, repr=False)
    refs: dict[int, dict[str, tuple[str, int]]] = field(default_factory=dict, repr=False)
    to_line: Any = field(default=None, repr=False)  # Op -> the user's line
    kernel_lines: tuple[int, int] | None = None  # the kernel's first and last line in source_lines

    def line_text(self, line: int | None) -> str:
        if line is None or not 0 < line <= len(self.source_lines):
            return ""
        return self.source_lines[line - 1].strip()

    def ops(self, kind: str | None = None):
        for t in self.tasks:
            for o in t.ops:
                if kind is None or o.kind == kind:
                    yield t, o

    def to_dict(self) -> dict[str, Any]:
        def op_dict(o: SyncOp) -> dict[str, Any]:
            d = dataclasses.asdict(dataclasses.replace(o, op=None))
            d.pop("op")
            return d

        return {
            "kernel": self.kernel, "target": self.target, "shared_bytes": self.shared_bytes,
            "buffers": [dataclasses.asdict(b) | {"bytes": b.bytes} for b in self.buffers],
            "barriers": [dataclasses.asdict(b) for b in self.barriers],
            "tasks": [{k: v for k, v in dataclasses.asdict(dataclasses.replace(t, ops=[])).items() if k != "ops"}
                      | {"ops": [op_dict(o) for o in t.ops]} for t in self.tasks],
        }


class _LineMapper:
    """An op's locations -> the user's line: the first location inside the kernel's own lines (an
    op inlined from a helper defined elsewhere points at the kernel line that called it), else the
    first location in the kernel's file."""

    def __init__(self, filename: str, first_line: int, n_lines: int, aliases: set[str]) -> None:
        self.files = {filename} | aliases
        self.lo, self.hi = first_line, first_line + n_lines

    def __call__(self, op: Op) -> int | None:
        mine = [loc for loc in op.locs if any(same_file(loc.file, f) for f in self.files)]
        inside = [loc.line for loc in mine if self.lo <= loc.line <= self.hi]
        return inside[0] if inside else mine[0].line if mine else None

    def own(self, op: Op) -> int | None:
        """The op's own line in the user's file, not a call site: inside the helper it was inlined from."""
        return next((loc.line for loc in op.locs
                     if not loc.inlined and any(same_file(loc.file, f) for f in self.files)), None)


def build_model(artifact) -> Orchestration:
    """The orchestration model of ``artifact`` (an Artifact with a ``ttgir`` stage)."""
    ttgir = artifact.stages.get("ttgir", "")
    module = parse_ttgir(ttgir)
    func = kernel_function(module)
    src = artifact.source
    n_lines = len((src.kernel_text or "").splitlines()) or 10_000
    to_line = _LineMapper(src.filename, src.first_line, n_lines, served_as(ttgir, src.filename))
    model = Orchestration(kernel=artifact.name, target=artifact.target, filename=src.filename, tasks=[],
                          buffers=[], barriers=[], shared_bytes=int(artifact.metadata.shared_bytes or 0),
                          warp_specialized="ttg.warp_specialize" in ttgir,
                          source_lines=(src.text or "").splitlines(), module=module, func=func, to_line=to_line,
                          registers_used=artifact.metadata.registers,
                          ptxas_log=str((artifact.metadata.extra or {}).get("ptxas", "")),
                          kernel_lines=(src.first_line, src.first_line + n_lines - 1) if src.kernel_text else None)
    if func is None:
        return model
    _Builder(model, to_line, artifact.metadata.tasks or []).build(func)
    return model


class _Builder:
    def __init__(self, model: Orchestration, to_line, task_meta: list[dict]) -> None:
        self.model, self.to_line, self.meta = model, to_line, task_meta
        self.sets: dict[str, tuple[str, int]] = {}  # SSA name -> ('buf'|'bar', set id), in the main body

    def build(self, func: Op) -> None:
        body = func.regions[0]
        self._allocs(body)
        main = self._task(0, "the kernel", None, None, self._main_warps(), body, self.sets)
        self.model.tasks.append(main)
        for op in body.ops:
            if op.name == "ttg.warp_specialize":
                main.name = "the default task"
                meta = next((t for t in self.meta if t.get("partition") is None), {})
                main.registers, main.start_warp = meta.get("registers"), 0
                main.first_line = next((self._first_line(r) for r in op.regions if r.label == "default"), None)
                main.with_line = self._with_line(main.first_line) if main.first_line else None
                self._partitions(op)
        self.model.tasks[0].ops = self._sync_ops(body, self.sets, stop_at_partitions=True)

    def _main_warps(self) -> int:
        for t in self.meta:
            if t.get("partition") is None:
                return int(t.get("num_warps") or 4)
        return self.model.module.num_warps or 4

    def _allocs(self, body: Region) -> None:
        """Buffer and barrier sets: the kernel's own ``local_alloc``s (in the main body and the default
        task; a partition's own allocations are not followed, their names are scoped to it)."""
        inits: dict[str, int] = {}
        views: dict[str, str] = {}
        main_ops = list(_main_ops(body))
        for op in main_ops:
            if op.name in VIEW_OPS and op.operands and op.results:
                views[op.results[0]] = views.get(op.operands[0], op.operands[0])
            elif op.name == "ttng.init_barrier" and op.operands:
                m = _COUNT.match(op.body)
                inits[views.get(op.operands[0], op.operands[0])] = int(m.group(1)) if m else 1
        for op in main_ops:
            if op.name != "ttg.local_alloc" or op.operands or not op.results:
                continue
            md = memdesc_type(op.body)
            if md is None or "mutable" not in md[2]:
                continue
            shape, dtype, attrs = md
            name, line, res = op.value_name or op.results[0].lstrip("%"), self.to_line(op), op.results[0]
            if res in inits:
                b = BarrierSet(len(self.model.barriers), name, line, shape[0] if shape else 1, inits[res])
                self.model.barriers.append(b)
                self.sets[res] = ("bar", b.id)
            else:
                storage = "tmem" if "tensor_memory" in attrs else "smem"
                count, slot = (shape[0], shape[1:]) if len(shape) > 1 else (1, shape)
                buf = BufferSet(len(self.model.buffers), name, line, slot, dtype, count, storage)
                self.model.buffers.append(buf)
                self.sets[res] = ("buf", buf.id)

    def _partitions(self, ws: Op) -> None:
        captured = ws.operands
        parts = [r for r in ws.regions if r.label.startswith("partition")]
        # replicas share their `with async_task` line (their first statements may differ: `if cid == 1:`)
        heads: dict[int | None, list[int]] = {}
        for r in parts:
            first = self._first_line(r)
            heads.setdefault(self._with_line(first) if first else None, []).append(int(r.label[len("partition"):]))
        for r in parts:
            pidx = int(r.label[len("partition"):])
            refs = {arg: self.sets[v] for arg, v in zip(r.args, captured, strict=False) if v in self.sets}
            first = self._first_line(r)
            head = self._with_line(first) if first else None
            group = heads.get(head, [pidx]) if head else [pidx]
            replica = group.index(pidx) if len(group) > 1 else None
            meta = next((t for t in self.meta if t.get("partition") == pidx), {})
            name = f"the task at line {head}" if head else f"partition {pidx}"
            if replica is not None:
                name += f" (replica {replica})"
            task = self._task(len(self.model.tasks), name, pidx, replica, r.num_warps or meta.get("num_warps") or 4,
                              r, refs, meta.get("registers"), first)
            task.requested_registers, task.start_warp = meta.get("requested_registers"), meta.get("start_warp")
            task.with_line = head
            self.model.tasks.append(task)

    def _first_line(self, region: Region) -> int | None:
        return next((line for o in walk(region) if (line := self.to_line(o))), None)

    def _with_line(self, first: int) -> int:
        """The ``with tlx.async_task(...)`` line above a task's first statement (else that statement)."""
        lines = self.model.source_lines
        for ln in range(first - 1, max(0, first - 12), -1):
            if ln <= len(lines) and "async_task(" in lines[ln - 1]:
                return ln
        return first

    def _task(self, index, name, partition, replica, warps, region, refs, registers=None, first=None) -> Task:
        task = Task(index, name, partition, replica, int(warps or 4), registers, first)
        if partition is not None:
            task.ops = self._sync_ops(region, refs)
        self.model.refs[index] = refs
        return task

    def _sync_ops(self, region: Region, refs: dict[str, tuple[str, int]], stop_at_partitions=False) -> list[SyncOp]:
        out: list[SyncOp] = []
        for op, in_loop, scope in _walk_task(region, dict(refs), stop_at_partitions):
            sync = classify(op, scope)
            if sync is not None:
                sync.line, sync.in_loop = self.to_line(op), in_loop
                sync.text = self.model.line_text(sync.line)
                op.sync = sync  # the simulator dispatches on it (and arrives on every barrier of the op)
                out.append(sync)
                for more in also_completes(op, scope, sync):
                    more.line, more.in_loop, more.text = sync.line, in_loop, sync.text
                    out.append(more)
        return out


def _main_ops(region: Region):
    """Every op of the kernel's body and its nested regions, except the partitions' regions."""
    for op in region.ops:
        yield op
        for r in op.regions:
            if not r.label.startswith("partition"):
                yield from _main_ops(r)


def _walk_task(region: Region, refs: dict[str, tuple[str, int]], stop_at_partitions: bool, in_loop: bool = False):
    """(op, inside a loop, the buffer/barrier views visible there) for a task's region; the main body
    includes ``default``, not the partitions. Views are scoped by region: MLIR reuses SSA names in
    sibling regions, so a name means what its nearest definition says."""
    for op in region.ops:
        if op.name in VIEW_OPS and op.operands and op.results:
            if op.operands[0] in refs:
                refs[op.results[0]] = refs[op.operands[0]]
            else:
                refs.pop(op.results[0], None)
            continue
        if op.name != "ttg.local_alloc":  # an alloc defines the name the refs start from
            for r in op.results:
                refs.pop(r, None)
        yield op, in_loop, refs
        loop = in_loop or op.name in ("scf.for", "scf.while")
        for r in op.regions:
            if stop_at_partitions and r.label.startswith("partition"):
                continue
            inner = dict(refs)
            for a in r.args:
                inner.pop(a, None)
            yield from _walk_task(r, inner, stop_at_partitions, loop)
