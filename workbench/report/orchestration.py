"""The Report's ``orchestration`` payload: what the viewer's Orchestration tab draws for a TLX kernel.

It is the orchestration model (:mod:`workbench.analyse.orchestration`: tasks and replicas, buffer
sets, barrier sets, who waits, arrives, expects bytes and copies on each) and one simulated run of
program 0 with the launch's scalar arguments (:mod:`workbench.analyse.orchestration_sim`), put in
the form the drawing needs, so the viewer parses no IR:

* ``tasks`` (lanes), ``buffers`` (rings: ``count`` slots), ``barriers`` (nodes), ``ops`` (the
  orchestration ops of each task in program order; ops an unrolled loop repeats at the same line
  are one op with ``repeats``);
* ``edges``: an arrive, expect-bytes or copy (or tcgen05 commit) into a barrier set, and a barrier set
  into each wait on it, the wait's label giving the phase it waits for in the first two rounds;
* ``rounds``: the simulated schedule round by round (round r of a barrier is its r-th phase, of a
  wait its r-th pass on that barrier): which phases completed and who arrived, which waits passed
  with which phase, each ring slot's state (filled, released) from the barriers that fill and
  release it; ``blocked``: the waits the run ended in, each at its round;
* ``simulation``: how far the run went (tasks finished, tasks not followed and why, the values used).

:mod:`workbench.report.orchestration_marks` adds what the checks found and what a timeline measured.
"""

from __future__ import annotations

from collections import defaultdict
from types import SimpleNamespace
from typing import Any

from workbench.analyse.orchestration import Orchestration
from workbench.analyse.orchestration_sim import Trace
from workbench.check.context import Context
from workbench.check.simulation import Simulation, simulation
from workbench.ir.schema_types import Orchestration as Payload
from workbench.report.orchestration_named import NAMED_KINDS, named_barriers

__all__ = ["COMPLETERS", "MAX_ROUNDS", "build", "from_report", "launch_values"]

MAX_ROUNDS = 8  # rounds of the schedule kept for the step control
MAX_STEPS = 240  # ring-slot events kept for the step control (within MAX_ROUNDS)
# op kind -> the edge it draws into its barrier set
COMPLETERS = {"arrive": "arrive", "warp_arrive": "arrive", "expect": "expect", "tma_load": "copy",
              "tc_mma": "commit", "tc_commit": "commit", "named_arrive": "arrive"}


def launch_values(runs: list[dict[str, Any]]) -> tuple[dict[str, int], list[int] | None]:
    """The scalar values a launch recorded in the Report (integer arguments and constexprs by name,
    each TensorDescriptor's ``.shape.i``) and its grid: what the simulation follows loops with."""
    run = next((r for r in reversed(runs or []) if r.get("arguments")), None)
    if run is None:
        return {}, None
    values: dict[str, int] = {}
    for a in run["arguments"]:
        name, value = a.get("name"), a.get("value")
        if a.get("kind") in ("int", "bool", "constexpr") and isinstance(value, (int, bool)):
            values[name] = int(value)
        elif a.get("kind") == "descriptor":
            for i, d in enumerate(a.get("shape") or []):
                values[f"{name}.shape.{i}"] = int(d)
    grid = run.get("grid")
    return values, [int(g) for g in grid] if grid else None


def build(artifact: Any, runs: list[dict[str, Any]] | None = None,
          values: tuple[dict[str, int], Any] | None = None) -> Payload:
    """The payload for a compiled TLX kernel (an Artifact with a ``ttgir`` stage), simulated with the launch's
    scalar ``values`` and grid where the caller has them (the cell's bound arguments: a cell that only compiles
    records no launch), else those of its last recorded launch. The run is the one the checks made with the same
    values (:func:`workbench.check.simulation.simulation`). A model that cannot be read is a payload with status
    error."""
    try:
        scalars, grid = values if values is not None else launch_values(runs or [])
        run = simulation(artifact, scalars, grid)
        if run.trace is None:
            return _failed("the TTGIR has no kernel function to read")
        return payload(run, scalars, list(grid) if grid else None)
    except Exception as e:  # a TTGIR the model cannot read must not break the Report
        return _failed(f"{type(e).__name__}: {e}")


def from_report(report: Any) -> Payload | None:
    """The payload of a Report that has none (one loaded from JSON, e.g. recorded before the payload
    existed), from what it stores: its TTGIR stage (whole, not only its head), kernel source, metadata and
    launches. None when it is not a TLX kernel or its TTGIR is not all there."""
    if report.artifact is not None:
        return build(report.artifact, report.runs)
    stage = next((s for s in report.stages if s["name"] == "ttgir"), None)
    if report.kernel.get("kind") != "tlx" or stage is None or stage.get("full_line_count"):
        return None
    src, meta = report.kernel.get("source") or {}, report.metadata or {}
    stored = SimpleNamespace(
        name=report.name, target=report.kernel.get("target") or meta.get("target") or "sm_90",
        stages={"ttgir": stage["text"]},
        source=SimpleNamespace(filename=src.get("filename", ""), first_line=src.get("first_line") or 1,
                               kernel_text=src.get("kernel_text", ""), text=src.get("text", "")),
        metadata=SimpleNamespace(shared_bytes=meta.get("shared_bytes"), registers=meta.get("registers"),
                                 tasks=meta.get("tasks") or [], extra=meta.get("extra") or {}))
    return build(stored, report.runs)


def _failed(why: str) -> Payload:
    return {"kind": "orchestration", "status": "error", "reason": f"the orchestration could not be read ({why})",
            "tasks": [], "buffers": [], "barriers": [], "ops": [], "edges": [], "rounds": [], "blocked": []}


def payload(run: Simulation, values: dict[str, int], grid: list[int] | None) -> Payload:
    model, trace = run.model, run.trace
    assert trace is not None
    named = named_barriers(model)
    nodes = _named_nodes(model, named)
    ops, op_of = _ops(model, named, {n["named"]: n["id"] for n in nodes})
    edges = _edges(ops)
    rings = _ring_barriers(run)
    waits = _wait_rounds(trace, op_of)
    blocked = {b["op"]: b for b in waits.blocked}
    lost = {t for t, _line, _why in trace.lost}
    for e in edges:
        if e["kind"] == "wait" and ops[e["op"]]["kind"] == "wait":
            e["phases"] = waits.phases.get(e["op"], [])
            e["label"] = _phase_label(e["phases"], blocked.get(e["op"]), ops[e["op"]]["task"] in lost)
    for b in waits.blocked:
        b["barrier"] = ops[b["op"]]["barrier"] if b["barrier"] is None else b["barrier"]
    return {
        "kind": "orchestration",
        "status": "ok",
        "reason": None,
        "kernel": model.kernel,
        "warp_specialized": model.warp_specialized,
        "tasks": [_task(model, t, [o["id"] for o in ops if o["task"] == t.index]) for t in model.tasks],
        "buffers": _buffers(model, rings),
        "barriers": [{"id": b.id, "name": b.name, "line": b.line, "count": b.count, "arrive_count": b.arrive_count,
                      "named": None} for b in model.barriers] + nodes,
        "ops": ops,
        "edges": edges,
        "rounds": _rounds(model, trace, waits, rings),
        "steps": _steps(trace, rings),
        "blocked": waits.blocked,
        "simulation": {
            "finished": list(trace.finished),
            "lost": [{"task": t, "line": line, "why": why} for t, line, why in trace.lost],
            "truncated": trace.truncated,
            "steps": trace.steps,
            "seconds": round(trace.seconds, 4),
            "values": values,
            "grid": grid,
        },
    }


def _task(model: Orchestration, t, op_ids: list[int]) -> dict[str, Any]:
    return {"index": t.index, "name": t.name, "partition": t.partition, "replica": t.replica,
            "num_warps": t.num_warps, "start_warp": t.start_warp, "registers": t.registers,
            "line": t.with_line or t.first_line, "region": _region(model, t), "ops": op_ids}


def _region(model: Orchestration, t) -> str:
    """The TTGIR region a task runs in, as the timeline's instrumentation names it."""
    if t.partition is not None:
        return f"partition{t.partition}"
    return "default" if model.warp_specialized else "kernel"


def _named_nodes(model: Orchestration, named: dict[int, tuple[int, int | None]]) -> list[dict[str, Any]]:
    """A node per hardware named barrier, after the mbarrier sets (named as the timeline's wait scopes name it)."""
    threads: dict[int, int] = {}
    for ident, n in named.values():
        threads[ident] = max(threads.get(ident, 0), n or 0)
    return [{"id": len(model.barriers) + i, "name": f"named{ident}", "line": None, "count": 1,
             "arrive_count": threads[ident], "named": ident} for i, ident in enumerate(sorted(threads))]


def _ops(model: Orchestration, named: dict[int, tuple[int, int | None]], node_of: dict[int, int]) \
        -> tuple[list[dict[str, Any]], dict[tuple[int, int | None, str], int]]:
    """Each task's orchestration ops in program order, one per (kind, line, barrier set, buffers): an
    unrolled loop's copies of an op are one op with ``repeats``. Also (task, line, kind) -> op id. A named
    barrier op names its named barrier's node and counts its threads."""
    ops: list[dict[str, Any]] = []
    seen: dict[tuple, dict[str, Any]] = {}
    op_of: dict[tuple[int, int | None, str], int] = {}
    for t in model.tasks:
        for o in t.ops:
            bar, count = o.barrier, o.count
            if o.kind in NAMED_KINDS and o.op is not None and id(o.op) in named:
                ident, count = named[id(o.op)]
                bar = node_of[ident]
            key = (t.index, o.kind, o.line, bar, tuple(o.buffers))
            if key in seen:
                seen[key]["repeats"] += 1
                continue
            d = {"id": len(ops), "task": t.index, "kind": o.kind, "line": o.line, "barrier": bar,
                 "buffers": list(o.buffers), "bytes": o.bytes, "count": count, "in_loop": o.in_loop, "repeats": 1}
            seen[key] = d
            ops.append(d)
            op_of.setdefault((t.index, o.line, o.kind), d["id"])
    return ops, op_of


def _edges(ops: list[dict[str, Any]]) -> list[dict[str, Any]]:
    edges: list[dict[str, Any]] = []
    for o in ops:
        if o["barrier"] is None:
            continue
        if o["kind"] in ("wait", "named_wait"):
            label = "" if o["kind"] == "wait" else f"bar.sync, {o['count']} threads"
            edges.append({"id": len(edges), "kind": "wait", "op": o["id"], "barrier": o["barrier"], "label": label})
        elif o["kind"] in COMPLETERS:
            kind = COMPLETERS[o["kind"]]
            edges.append({"id": len(edges), "kind": kind, "op": o["id"], "barrier": o["barrier"],
                          "label": _completer_label(kind, o)})
    return edges


def _completer_label(kind: str, o: dict[str, Any]) -> str:
    if kind in ("expect", "copy") and o["bytes"]:
        return f"{kind} {_bytes(o['bytes'])}"
    if o["kind"] == "named_arrive":
        return f"bar.arrive, {o['count']} threads"
    if kind == "arrive" and (o["count"] or 1) > 1:
        return f"arrive \u00d7{o['count']}"
    return kind


def _bytes(n: int) -> str:
    return f"{n // 1024} KiB" if n >= 1024 and n % 1024 == 0 else f"{n} B"


def _phase_label(phases: list[list[int]], blocked: dict[str, Any] | None = None, task_lost: bool = False) -> str:
    """``phase 0, 1``: the phase the wait waited for in rounds 0 and 1 (``0/1`` where slots differ); a wait
    the simulated run ended in within those rounds says so: ``phase 1, 0 (blocked)``. A wait never reached says
    why: its task was not followed that far (``not simulated``), or the run never got there (``never passed``)."""
    shown = ["/".join(str(p) for p in ps) for ps in phases[:2] if ps]
    if blocked is not None and len(shown) < 2 and blocked.get("parity") is not None:
        shown.append(f"{blocked['parity']} (blocked)")
    if shown:
        return f"phase {', '.join(shown)}"
    return "not simulated" if task_lost else "never passed"


class _WaitRounds:
    """The simulated waits by op and round: who passed with which phase, and where the run ended blocked."""

    def __init__(self) -> None:
        self.passed: dict[int, list[dict[str, Any]]] = defaultdict(list)  # round -> waits that passed
        self.phases: dict[int, list[list[int]]] = {}  # op -> per round, the phases it waited for
        self.blocked: list[dict[str, Any]] = []


def _wait_rounds(trace: Trace, op_of: dict[tuple[int, int | None, str], int]) -> _WaitRounds:
    out = _WaitRounds()
    passes: dict[tuple[int, tuple[int, int]], int] = defaultdict(int)  # (op, barrier instance) -> passes so far
    for w in trace.waits:
        op = op_of.get((w.task, w.line, "wait"))
        if op is None:
            continue
        r = passes[(op, w.barrier)]
        passes[(op, w.barrier)] = r + 1
        if r >= MAX_ROUNDS:
            continue
        phases = out.phases.setdefault(op, [])
        while len(phases) <= r:
            phases.append([])
        if w.parity not in phases[r]:
            phases[r].append(w.parity)
            phases[r].sort()
        out.passed[r].append({"op": op, "index": w.barrier[1], "parity": w.parity, "passed": True})
    for b in trace.blocked:
        op = op_of.get((b.task, b.line, b.kind))
        if op is None:
            continue
        r = passes[(op, b.barrier)] if b.barrier else 0
        out.blocked.append({"op": op, "task": b.task, "line": b.line, "barrier": b.barrier[0] if b.barrier else None,
                            "index": b.barrier[1] if b.barrier else None, "parity": b.parity,
                            "named": b.named, "round": r})
    return out


class _Rings:
    """Each buffer set's ring pairing: the barrier sets whose phases say its slots hold data (``fill``) and are free
    again (``release``), each slot's barrier index in them (``slot``), and why a ring is not paired (``why``)."""

    def __init__(self) -> None:
        self.fill: dict[int, int] = {}
        self.release: dict[int, int] = {}
        self.slot: dict[int, list[int | None]] = {}
        self.why: dict[int, str] = {}


def _buffers(model: Orchestration, rings: _Rings) -> list[dict[str, Any]]:
    return [{"id": b.id, "name": b.name, "line": b.line, "shape": list(b.shape), "dtype": b.dtype, "count": b.count,
             "storage": b.storage, "bytes": b.bytes, "filled_by": rings.fill.get(b.id),
             "released_by": rings.release.get(b.id), "slot_barriers": rings.slot.get(b.id),
             "unpaired": rings.why.get(b.id)} for b in model.buffers]


def _ring_barriers(run: Simulation) -> _Rings:
    """Pair each ring's slots with barriers by what the run saw: the barrier instance each copy into a slot
    completed on (a GEMM's 8 A half-tiles on 4 barriers: slots i and 4 + i on barrier i); where no copy
    completes on a barrier (a task writes and arrives), slot i with barrier i of the set that announces the
    buffer, when the sets have the same count. The slot-free barrier is the one the filling task waits on right
    before it fills (the guard), at the same index. Rings none of this pairs say why."""
    model, out = run.model, _Rings()
    ctx = Context(model, None)
    for buf in model.buffers:
        by_copy = _copy_pairing(run, buf.id, buf.count)
        if isinstance(by_copy, str):
            out.why[buf.id] = by_copy
            continue
        if by_copy is not None:
            bar, slots = by_copy
        else:
            bar = next((b.id for b in model.barriers
                        if buf.id in ctx.data_of_barrier(b.id) and _guards_reads(ctx, b.id, buf.id)), None)
            if bar is None:
                continue  # no barrier announces it to a task that reads it: not a ring handed over (an epilogue buffer)
            if model.barriers[bar].count != buf.count:
                out.why[buf.id] = (f"not paired with {model.barriers[bar].name}: {buf.count} slots, "
                                   f"{model.barriers[bar].count} barriers, and the run saw no copy into it")
                continue
            slots = list(range(buf.count))
        out.fill[buf.id], out.slot[buf.id] = bar, slots
        guard = sorted(g for g in ctx.guards(bar) if g != bar and model.barriers[g].count == model.barriers[bar].count)
        if guard:
            out.release[buf.id] = guard[0]
    return out


def _guards_reads(ctx: Context, bar: int, buf: int) -> bool:
    """A task that waits on barrier set ``bar`` reads buffer set ``buf``."""
    return any(buf in ctx.reads_of_task(t.index) for t, _ in ctx.ops_on_barrier(bar, {"wait"}))


def _copy_pairing(run: Simulation, buf: int, count: int) -> tuple[int, list[int | None]] | str | None:
    """(barrier set, each slot's barrier index) from the copies the run made into ``buf``; None: no copies;
    a sentence: copies the pairing cannot follow (slots on several barriers, or on several sets)."""
    seen = {slot: bars for (b, slot), bars in run.fills.items() if b == buf}
    if not seen:
        return None
    sets = {bar for bars in seen.values() for bar, _ in bars}
    if len(sets) > 1 or any(len(bars) > 1 for bars in seen.values()):
        return "not paired: the run saw copies into one slot complete on different barriers"
    bar = sets.pop()
    return bar, [next(iter(seen[i]))[1] if i in seen else None for i in range(count)]


def _rounds(model: Orchestration, trace: Trace, waits: _WaitRounds, rings: _Rings) -> list[dict[str, Any]]:
    """Round by round: each barrier's phase r (completed or not, who arrived, bytes), the waits that
    passed in round r, the waits the run ended blocked in at round r, and the ring slots' states."""
    n = max([b.completed + (1 if _started(b) else 0) for b in trace.barriers.values()] +
            [b["round"] + 1 for b in waits.blocked] + [r + 1 for r in waits.passed] + [0])
    out: list[dict[str, Any]] = []
    for r in range(min(n, MAX_ROUNDS)):
        phases = [_phase(key, b, r) for key, b in sorted(trace.barriers.items())]
        done = {(p["barrier"], p["index"]) for p in phases if p and p["completed"]}
        started = {(p["barrier"], p["index"]) for p in phases if p}
        before = {(s["buffer"], s["index"]): s["state"] for s in out[-1]["slots"]} if out else {}
        slots = []
        for buf, bar in sorted(rings.fill.items()):
            for i, j in enumerate(rings.slot[buf]):
                filled, rel = (bar, j) in done, (rings.release.get(buf), j) in done
                state = "released" if filled and rel else "full" if filled else "filling" if (bar, j) in started \
                    else "full" if before.get((buf, i)) == "full" else "empty"  # still holding the last round's data
                slots.append({"buffer": buf, "index": i, "state": state})
        out.append({"round": r, "barriers": [p for p in phases if p], "slots": slots,
                    "waits": waits.passed.get(r, []) + [dict(b, passed=False) for b in waits.blocked
                                                         if b["round"] == r]})
    return out


def _steps(trace: Trace, rings: _Rings) -> list[dict[str, Any]]:
    """The ring slots' changes in the order the simulated run made them: a slot starts ``filling`` (the first
    expect, arrival or copy of its fill barrier's phase r), is ``full`` (that phase completed), is ``released``
    (its release barrier's phase r completed: it may be written again). Each step names its round, the slot, the
    task and line that made it, and every ring's slot states after it."""
    events = []
    for buf, bar in rings.fill.items():
        for j in sorted({j for j in rings.slot[buf] if j is not None}):
            slots = [i for i, k in enumerate(rings.slot[buf]) if k == j]
            for key, kinds in (((bar, j), ("filling", "full")), ((rings.release.get(buf), j), (None, "released"))):
                b = trace.barriers.get(key)
                for r, ph in enumerate([*b.phases, b.cur][:MAX_ROUNDS] if b is not None else []):
                    if kinds[0] and ph.started is not None:
                        events.append((ph.started, r, buf, slots, kinds[0], ph.started_by))
                    if ph.done is not None:
                        events.append((ph.done, r, buf, slots, kinds[1], ph.done_by))
    state = {buf: ["empty"] * len(rings.slot[buf]) for buf in rings.fill}
    out = []
    for _, r, buf, slots, what, who in sorted(events, key=lambda e: e[0])[:MAX_STEPS]:
        for i in slots:
            state[buf][i] = what
        out.append({"round": r, "buffer": buf, "slots": slots, "state": what, "task": who[0] if who else None,
                    "line": who[1] if who else None, "states": [{"buffer": b, "states": list(v)}
                                                                 for b, v in sorted(state.items())]})
    return out


def _started(b) -> bool:
    cur = b.cur
    return bool(cur.arrivals or cur.expects or cur.copies)


def _phase(key: tuple[int, int], b, r: int) -> dict[str, Any] | None:
    if r < len(b.phases):
        ph, completed = b.phases[r], True
    elif r == len(b.phases) and _started(b):
        ph, completed = b.cur, False
    else:
        return None
    return {"barrier": key[0], "index": key[1], "completed": completed,
            "arrivals": [{"task": t, "line": line, "count": n} for (t, line), n in sorted(ph.arrivals.items(),
                                                                                         key=lambda kv: str(kv[0]))],
            "expected": ph.expected, "copied": ph.copied,
            "pending": max(0, b.arrive_count - sum(ph.arrivals.values())) if not completed else 0}
