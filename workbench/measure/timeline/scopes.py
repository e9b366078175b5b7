"""Where the timeline's Proton scopes go in a kernel's TTGIR, and what they are called.

Scope names are ``"<role>/<activity>[:<detail>]"``:

- ``<role>``: the task (``producer``, ``consumer``, ... or the ``name=`` given to ``tlx.async_task``)
  with ``.<replica>`` when the task is replicated (``consumer.0``, ``consumer.1``); ``kernel`` for a
  kernel without ``tlx.async_tasks``;
- ``<activity>``: ``task`` (the whole body of the role), ``wait`` (an mbarrier or named-barrier wait,
  ``<detail>`` = the barrier set: ``wait:full``, ``wait:named9``), ``tma_load`` (a run of TMA copies
  into shared memory with their ``barrier_expect``), ``load`` (cp.async copies), ``mma`` (a wgmma /
  tcgen05 issue), ``mma_wait`` (``warp_group_dot_wait``), ``epilogue`` (registers -> shared -> TMA
  store), ``store_wait`` (waiting for TMA stores to drain), ``store`` (plain global stores).

Placement rules (why, see ``bench/notes/timeline-scopes-in-ws-loops.md``):

- every role gets a ``task`` scope whose end sits right before the region's ``warp_yield`` /
  ``warp_return``. Besides giving the role's span, it keeps the last block of every partition
  distinct: without it, two replicas whose exit blocks differ only in SSA operands are merged by
  the greedy rewriter in ``ConvertNVGPUToLLVM``, which then branches with a ``!proton_gpu.segment``
  operand and fails to verify (the failure in the README's TLX facts for scopes inside the persistent loop);
- finer scopes wrap single ops or runs of ops of one kind in one block (never across a region
  boundary), so every start has its end in the same block, at any loop depth.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from workbench.ir.mlir import closes_region, op_name, op_operands, opens_region
from workbench.ir.mlir_loc import trailing_loc
from workbench.measure.timeline.roles import kind_of, name_regions
from workbench.measure.timeline.ttgir_text import TTGIR, Region

LEVELS = ("task", "waits", "fine")

ACTIVITY = {
    "ttng.wait_barrier": "wait",
    "tlx.named_barrier_wait": "wait",
    "ttng.async_tma_copy_global_to_local": "tma_load",
    "ttng.async_tma_gather": "tma_load",
    "ttg.async_copy_global_to_local": "load",
    "ttng.warp_group_dot": "mma",
    "ttng.tc_gen5_mma": "mma",
    "ttng.tc_gen5_mma_scaled": "mma",
    "ttng.warp_group_dot_wait": "mma_wait",
    "ttng.async_tma_copy_local_to_global": "epilogue",
    "ttng.async_tma_reduce": "epilogue",
    "ttng.async_tma_scatter": "epilogue",
    "tt.descriptor_store": "epilogue",
    "tt.store": "store",
    "ttng.async_tma_store_wait": "store_wait",
}
# cheap ops a run of one activity may span (address math, slot views, the expect before TMA copies)
_GLUE = {"ttng.barrier_expect", "ttg.memdesc_index", "ttg.memdesc_trans", "ttg.memdesc_reinterpret",
         "ttg.memdesc_subslice", "ttng.fence_async_shared", "ttg.local_store"}
_VIEW_OPS = {"ttg.memdesc_index", "ttg.memdesc_subslice", "ttg.memdesc_reinterpret", "ttg.memdesc_trans",
             "tlx.local_view"}
_BY_LEVEL = {"task": set(), "waits": {"wait"}, "fine": set(ACTIVITY.values())}


@dataclass
class RolePlan:
    role: str
    region: str  #: "default", "partition3" or "kernel"
    num_warps: int | None
    kind: str  #: producer / consumer / epilogue / task
    scopes: dict[str, int] = field(default_factory=dict)  #: scope name -> places inserted

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class Plan:
    level: str
    roles: list[RolePlan]
    text: str  #: the instrumented TTGIR

    def to_dict(self) -> dict[str, Any]:
        return {"level": self.level, "roles": [r.to_dict() for r in self.roles]}


def _is_glue(ir: TTGIR, i: int) -> bool:
    op = op_name(ir.lines[i])
    if op in _GLUE:
        return True
    return bool(op) and op.startswith("arith.") and "tensor<" not in ir.lines[i]


def _runs(ir: TTGIR, region: Region, wanted: set[str]) -> list[tuple[int, int, str, int]]:
    """(first line, last line, activity, anchor line) of each run of same-activity ops in one block."""
    out: list[tuple[int, int, str, int]] = []
    cur: list[Any] | None = None  # [first, last, activity, indent]
    for i in region.body():
        line = ir.lines[i]
        act = ACTIVITY.get(op_name(line) or "")
        if act is not None and act in wanted:
            same = (cur is not None and cur[2] == act and cur[3] == ir.indents[i] and act not in ("wait", "mma")
                    and all(_is_glue(ir, j) for j in range(cur[1] + 1, i)))
            if same:
                cur[1] = i
            else:
                if cur:
                    out.append((cur[0], cur[1], cur[2], cur[0]))
                cur = [i, i, act, ir.indents[i]]
        elif cur is not None and (opens_region(line) or closes_region(line) or ir.indents[i] < cur[3]):
            out.append((cur[0], cur[1], cur[2], cur[0]))
            cur = None
    if cur:
        out.append((cur[0], cur[1], cur[2], cur[0]))
    return [_widen_epilogue(ir, r) for r in out]


def _widen_epilogue(ir: TTGIR, run: tuple[int, int, str, int]) -> tuple[int, int, str, int]:
    """An epilogue run starts at the ``local_store`` (and fence) that stage its tile in shared memory."""
    first, last, act, anchor = run
    if act != "epilogue":
        return run
    j = first - 1
    while j >= 0 and ir.indents[j] == ir.indents[first] and op_name(ir.lines[j]) in (
            "ttg.local_store", "ttng.fence_async_shared", "ttg.memdesc_index"):
        if op_name(ir.lines[j]) != "ttg.memdesc_index":
            first = j
        j -= 1
    return first, last, act, anchor


def barrier_set(ir: TTGIR, line: int) -> str:
    """The name of the barrier set a wait op waits on (``full``, ``k_empties``, ``named9``)."""
    ops = op_operands(ir.lines[line])
    if not ops:
        return "barrier"
    if op_name(ir.lines[line]) == "tlx.named_barrier_wait":
        return "named" + _constant(ir, ops[0], line)
    name, at, best = ops[0], line, None
    for _ in range(32):
        nice = _source_name(name)
        if nice:
            best = nice  # keep walking: the set's own name is nearer the allocation
        d = ir.definition(name, at)
        if d is None:
            break
        region = ir.region_of(d + 1) if d in [r.header for r in ir.regions] else None
        if region is not None and name in region.args:
            name, at = ir.capture_of(region, name) or name, ir.ws_line or 0
            continue
        op = op_name(ir.lines[d])
        if op in _VIEW_OPS:
            name, at = op_operands(ir.lines[d])[0], d
            continue
        if op == "scf.for" and (init := ir.iter_init(d, name)):
            name, at = init, d
            continue
        break
    return best or "barrier"


def _source_name(value: str) -> str | None:
    """``%q_empties_3`` -> ``q_empties``; numbered values (``%12``, ``%arg3``, ``%c0_i32``) -> None."""
    v = value.lstrip("%").split("#")[0]
    if v[:1].isdigit() or (v.startswith("arg") and v[3:].isdigit()) or v.startswith("c") and "_i" in v:
        return None
    while "_" in v and v.rsplit("_", 1)[1].isdigit():
        v = v.rsplit("_", 1)[0]
    return v or None


def _constant(ir: TTGIR, value: str, line: int) -> str:
    d = ir.definition(value, line)
    if d is not None and "arith.constant" in ir.lines[d]:
        rhs = ir.lines[d].split("arith.constant", 1)[1].strip()
        return rhs.split(":")[0].split()[0]
    return value.lstrip("%")


def _record(indent: int, is_start: bool, name: str, loc: str) -> str:
    return f'{" " * indent}proton.record {"start" if is_start else "end"} "{name}" loc({loc})'


def instrument(text: str, level: str = "fine", task_names: list[str] | None = None) -> Plan:
    """Insert ``proton.record`` pairs into TTGIR ``text`` for ``level`` (``task``, ``waits``, ``fine``).

    ``task_names``: names for the tasks in source order (``roles.task_names`` reads them from the
    kernel's ``tlx.async_task`` statements); None names them by what they do.
    """
    if level not in LEVELS:
        raise ValueError(f"level {level!r}: one of {LEVELS}")
    ir = TTGIR(text)
    if not ir.regions:
        raise ValueError("no kernel function (tt.func public) in this TTGIR")
    names = name_regions(ir, task_names, _activities(ir))
    before: dict[int, list[str]] = {}
    after: dict[int, list[str]] = {}
    plans: list[RolePlan] = []
    for region, (role, kind) in zip(ir.regions, names, strict=True):
        label = region.kind if region.index is None else f"partition{region.index}"
        plan = RolePlan(role, label, region.num_warps, kind)
        inner = region.indent + 2
        task = f"{role}/task"
        before.setdefault(region.header + 1, []).insert(0, _record(inner, True, task, "unknown"))
        for t in region.terminators:
            before.setdefault(t, []).append(_record(inner, False, task, "unknown"))
        plan.scopes[task] = 1
        for first, last, act, anchor in _runs(ir, region, _BY_LEVEL[level]):
            name = f"{role}/{act}" + (f":{barrier_set(ir, anchor)}" if act == "wait" else "")
            loc = trailing_loc(ir.lines[anchor]) or "unknown"
            before.setdefault(first, []).append(_record(ir.indents[first], True, name, loc))
            after.setdefault(last, []).insert(0, _record(ir.indents[last], False, name, loc))
            plan.scopes[name] = plan.scopes.get(name, 0) + 1
        plans.append(plan)
    out: list[str] = []
    for i, line in enumerate(ir.lines):
        out.extend(before.get(i, []))
        out.append(line)
        out.extend(after.get(i, []))
    return Plan(level, plans, "\n".join(out) + "\n")


def _activities(ir: TTGIR) -> list[Counter]:
    """Per region: how many ops of each activity it holds (what the role does)."""
    out = []
    for r in ir.regions:
        c: Counter = Counter()
        for i in r.body():
            op = op_name(ir.lines[i]) or ""
            act = ACTIVITY.get(op) or ("gload" if op == "tt.load" else None)  # gload: a kind hint, no scope
            if act:
                c[act] += 1
        out.append(c)
    return out


def plan_of(text: str) -> Plan:
    """The Plan an instrumented TTGIR was built with, read back from its records (a cache hit never
    runs the stages, so the hook sees nothing: the build in Triton's cache still says what it holds)."""
    import re

    ir = TTGIR(text)
    rec = re.compile(r'^\s*proton\.record start "([^"]+)"')
    plans: list[RolePlan] = []
    for region in ir.regions:
        label = region.kind if region.index is None else f"partition{region.index}"
        names = [m.group(1) for i in region.body() if (m := rec.match(ir.lines[i]))]
        if not names:
            continue
        acts = Counter(n.split("/", 1)[-1].split(":")[0] for n in names)
        plan = RolePlan(names[0].split("/", 1)[0], label, region.num_warps, kind_of(acts))
        plan.scopes = dict(Counter(names))
        plans.append(plan)
    levels = {n.split("/", 1)[-1].split(":")[0] for p in plans for n in p.scopes}
    level = "fine" if levels - {"task", "wait"} else ("waits" if "wait" in levels else "task")
    return Plan(level, plans, text)
