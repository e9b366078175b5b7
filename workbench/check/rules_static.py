"""Rules read off the model alone: waits nothing completes, buffers nothing writes, shared memory
over the limit, narrowing stores, roles written outside ``tlx.async_tasks()``."""

from __future__ import annotations

import re

from workbench.check.context import COMPLETES, READS, WRITES, Context
from workbench.check.findings import Finding, related
from workbench.compile.targets import smem_limit
from workbench.ir.mlir import Op, walk


def _kib(n: int) -> str:
    return f"{n / 1024:.1f}".rstrip("0").rstrip(".") + " KiB"


def wait_never_completes(ctx: Context) -> None:
    for bs in ctx.model.barriers:
        waits = ctx.ops_on_barrier(bs.id, {"wait"})
        if not waits or ctx.ops_on_barrier(bs.id, COMPLETES):
            continue
        for task, op in waits:
            f = Finding(
                "wait-never-completes", "error", op.line,
                f"`{bs.name}` is waited on here ({task.name}), but no task arrives on it, expects bytes on it or "
                f"issues a copy that completes on it: this wait never completes and the kernel hangs. Complete "
                f"its phases from the task that produces what the waiter needs.",
                related([(bs.line, f"{bs.name} allocated here (arrive_count={bs.arrive_count})")]),
                f"a producer does barrier_expect_bytes({bs.name}[i], nbytes) + async_descriptor_load(desc, buf, "
                f"offsets, {bs.name}[i]); a consumer releasing a slot does barrier_arrive({bs.name}[i])")
            f.barrier_set = bs.id
            ctx.add(f)


def unwritten_buffer(ctx: Context) -> None:
    for buf in ctx.model.buffers:
        if buf.storage != "smem" or ctx.ops_on_buffer(buf.id, WRITES):
            continue
        reads = ctx.ops_on_buffer(buf.id, READS)
        if not reads:
            continue
        task, op = min(reads, key=lambda p: p[1].line or 0)
        shape = f"{buf.count} x {'x'.join(map(str, buf.shape))} {buf.dtype}"
        ctx.add(Finding(
            "unwritten-buffer", "error", op.line,
            f"{ctx.Task(task.index)} reads `{buf.name}` here, but no task ever writes it (no copy, async load or "
            f"local_store into it): the read sees whatever shared memory held before. Fill it before reading it.",
            related([(buf.line, f"{buf.name} allocated here ({shape})")]
                    + [(o.line, f"also read here ({t.name})") for t, o in reads if o.line != op.line]),
            "async_descriptor_load(desc, buf[i], offsets, full[i]) then barrier_wait(full[i], phase) in the reader"))


def shared_memory(ctx: Context) -> None:
    model = ctx.model
    limit = smem_limit(model.target)
    if limit is None or model.shared_bytes <= limit:
        return
    parts = [(b.bytes, b.line, f"`{b.name}`: {b.count} x {'x'.join(map(str, b.shape))} {b.dtype} = {_kib(b.bytes)}")
             for b in model.buffers if b.storage == "smem"]
    parts += [(8 * s.count, s.line, f"`{s.name}`: {s.count} mbarrier(s) = {8 * s.count} B") for s in model.barriers]
    if not parts:  # no TLX buffers: what Triton stages through shared memory itself (tl.dot operands, ...)
        parts = _compiler_allocs(model)
    explicit = sum(p[0] for p in parts)
    parts.sort(key=lambda p: -p[0])
    rest = model.shared_bytes - explicit
    notes = [(line, text) for _, line, text in parts]
    if rest > 0:
        notes.append((None, f"{_kib(rest)} more than the compiler allocates (layout conversions, epilogue staging)"))
    biggest = parts[0] if parts else None
    over = model.shared_bytes - limit
    ctx.add(Finding(
        "smem-limit", "error", biggest[1] if biggest else None,
        f"The kernel needs {_kib(model.shared_bytes)} of shared memory per block, {_kib(over)} more than the "
        f"{_kib(limit)} a block can use on {model.target}: the launch will fail with 'out of resource: shared "
        f"memory'. " + (f"Biggest first: {'; '.join(p[2] for p in parts[:4])}. " if parts else "") +
        "Use fewer stages or smaller tiles.",
        related(notes), "shared bytes ~ NUM_STAGES x (BM x BK + BK x BN) x element size (+ epilogue staging)"))


def _compiler_allocs(model) -> list[tuple[int, int | None, str]]:
    """(bytes, line, text) of each shared-memory tile Triton allocates (``ttg.local_alloc``: tl.dot operands,
    staged loads), from the TTGIR."""
    out = []
    for op in walk(model.func.regions[0]) if model.func is not None else []:
        t = op.value_type() if op.name == "ttg.local_alloc" else None
        if t is None or t.kind != "memdesc" or not t.shape:
            continue
        name, shape = op.value_name or op.results[0].lstrip("%"), "x".join(map(str, t.shape))
        out.append((t.nbytes, model.to_line(op) if model.to_line else None,
                    f"`{name}` (staged by Triton): {shape} {t.dtype} = {_kib(t.nbytes)}"))
    return out


_NARROW = {"arith.truncf", "tt.fp_to_fp"}
_STORES = {"tt.store": 1, "tt.descriptor_store": -1, "ttg.local_store": 0, "ttng.async_tma_copy_local_to_global": -1}
_THROUGH = {"ttg.convert_layout", "ttg.local_alloc"}


def narrowing_store(ctx: Context) -> None:
    model = ctx.model
    if model.func is None:
        return
    defs: dict[str, Op] = {}
    for op in walk(model.func.regions[0]):
        for r in op.results:
            defs[r] = op
    seen: set[int] = set()
    for op in walk(model.func.regions[0]):
        pos = _STORES.get(op.name)
        if pos is None or not op.operands:
            continue
        src = defs.get(op.operands[pos] if pos >= 0 else op.operands[-1])
        while src is not None and src.name in _THROUGH and src.operands:
            src = defs.get(src.operands[0])
        if src is None or src.name not in _NARROW or not same_loc(src, op) or "f32" not in src.body.split(" to ")[0]:
            continue
        line = model.to_line(op)
        if line in seen:
            continue
        seen.add(line)
        to = src.body.rsplit(" to ", 1)[-1]
        dtype = to.split("x")[-1].split(",")[0].rstrip(">") if "x" in to else to
        ctx.add(Finding(
            "narrowing-store", "warning", line,
            f"An fp32 value is stored here into {dtype} memory: Triton narrows it silently, rounding away "
            f"precision (and overflowing past the {dtype} range). Cast explicitly with `.to(...)` where the "
            f"narrowing is meant, or store into an fp32 tensor.",
            [], "c = acc.to(tlx.dtype_of(c_desc)); c_desc.store(offsets, c)"))


def same_loc(a: Op, b: Op) -> bool:
    la = next((loc for loc in a.locs if not loc.inlined), None)
    lb = next((loc for loc in b.locs if not loc.inlined), None)
    return la is not None and lb is not None and (la.file, la.line, la.col) == (lb.file, lb.line, lb.col)


_ASYNC_TASK = re.compile(r"\basync_task\s*\(")
_ASYNC_TASKS = re.compile(r"\basync_tasks\s*\(")


def task_outside_tasks(ctx: Context) -> None:
    """``with tlx.async_task(...)`` written in the kernel with no ``with tlx.async_tasks():`` around it compiles as
    plain code: no warp specialization (TTGIR has no ``ttg.warp_specialize``), every warp runs each role's body in
    turn. Nothing in the compiled kernel shows the roles were meant; the kernel's source does."""
    model = ctx.model
    if model.warp_specialized or model.kernel_lines is None:
        return
    lo, hi = model.kernel_lines
    code = {line: model.line_text(line).split("#", 1)[0] for line in range(lo, hi + 1)}
    if any(_ASYNC_TASKS.search(text) for text in code.values()):
        return  # roles inside async_tasks() that Triton did not need to specialize (a lone default task)
    line = next((ln for ln, text in code.items() if _ASYNC_TASK.search(text)), None)
    if line is None:
        return
    ctx.add(Finding(
        "task-outside-tasks", "warning", line,
        "`tlx.async_task` here is not inside a `with tlx.async_tasks():` block, so it declares no role: the kernel "
        "is not warp-specialized and every warp runs each task's body one after the other (a producer's waits on "
        "slots its consumer has yet to free then never complete).", [],
        "put the roles in one block: with tlx.async_tasks(): / with tlx.async_task(\"default\"): ... / "
        "with tlx.async_task(num_warps=4): ..."))
