"""Role names for the regions of a warp-specialized kernel: task (from the source or what it does) + replica.

uTLX emits ``tlx.async_tasks()`` as one ``ttg.warp_specialize``: the ``"default"`` task's body is the
``default`` region, every other task becomes ``replicate`` consecutive ``partitionN`` regions, in
statement order (extra replicas of the default task take the default statement's place). Replicas
are the same statements traced again, so their ops carry the same source locations: consecutive
regions with mostly the same locations are one task.

A task's name is, in order: the ``name=`` keyword of its ``tlx.async_task(...)`` (uTLX accepts and
ignores unknown keywords, so a kernel may carry it), else what it does: ``consumer`` (issues MMAs),
``producer`` (TMA, async or plain global loads, no MMA), ``epilogue`` (only stores), ``task<position>`` otherwise.
Names used by several tasks get their source position appended (``consumer_t2``).
"""

from __future__ import annotations

import ast
import linecache
from collections import Counter

from workbench.ir.mlir import kernel_function
from workbench.ir.mlir_loc import trailing_loc
from workbench.measure.timeline.ttgir_text import TTGIR, Region

SIMILAR = 0.5  # Jaccard similarity of op locations above which consecutive regions are replicas


def _locs(ir: TTGIR, r: Region) -> set[str]:
    return {trailing_loc(ir.lines[i]) for i in r.body()} - {None, "unknown", "#loc"}


def _similar(a: set[str], b: set[str]) -> bool:
    return bool(a or b) and len(a & b) / max(1, len(a | b)) >= SIMILAR


def group_regions(ir: TTGIR) -> list[list[int]]:
    """Indices into ``ir.regions`` grouped by task, in source order (default first)."""
    locs = [_locs(ir, r) for r in ir.regions]
    groups: list[list[int]] = []
    for i, r in enumerate(ir.regions):
        if r.kind != "partition" or not groups:
            groups.append([i])
        elif _similar(locs[i], locs[groups[-1][-1]]):
            groups[-1].append(i)
        elif groups[0] and ir.regions[groups[0][0]].kind == "default" and _similar(locs[i], locs[groups[0][0]]):
            groups[0].append(i)
        else:
            groups.append([i])
    return groups


def kind_of(acts: Counter) -> str:
    if acts.get("mma"):
        return "consumer"
    if acts.get("tma_load") or acts.get("load") or acts.get("gload"):
        return "producer"
    if acts.get("epilogue") or acts.get("store"):
        return "epilogue"
    return "task"


def name_regions(ir: TTGIR, task_names: list[str | None] | None, activities: list[Counter]) -> list[tuple[str, str]]:
    """(role, kind) per region of ``ir`` (in ``ir.regions`` order)."""
    if ir.regions and ir.regions[0].kind == "kernel":
        return [("kernel", kind_of(activities[0]))] + [("kernel", "task")] * (len(ir.regions) - 1)
    if task_names is None:
        task_names = task_names_from_ttgir(ir)
    groups = group_regions(ir)
    use_source = task_names is not None and len(task_names) == len(groups)
    bases: list[tuple[str, str]] = []
    for pos, g in enumerate(groups):
        acts = sum((activities[i] for i in g), Counter())
        kind = kind_of(acts)
        given = task_names[pos] if use_source else None
        bases.append((given or (kind if kind != "task" else f"task{pos}"), kind))
    counts = Counter(b for b, _ in bases)
    out: list[tuple[str, str] | None] = [None] * len(ir.regions)
    for pos, (g, (base, kind)) in enumerate(zip(groups, bases, strict=True)):
        name = base if counts[base] == 1 else f"{base}_t{pos}"
        for rep, i in enumerate(g):
            out[i] = (f"{name}.{rep}" if len(g) > 1 else name, kind)
    return [o for o in out if o is not None]


def task_names_from_source(source: str, first_line: int) -> list[str | None] | None:
    """``name=`` of each ``tlx.async_task`` in the ``async_tasks`` block of the function defined at
    ``first_line`` of ``source`` (default task first, then the others in order); None when the block
    cannot be read statically (a constexpr ``if`` around tasks, no block)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    fn = next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)
               and (n.lineno == first_line or any(d.lineno == first_line for d in n.decorator_list))), None)
    if fn is None:
        return None
    block = next((n for n in ast.walk(fn) if isinstance(n, ast.With) and _call_attr(n) == "async_tasks"), None)
    if block is None:
        return None
    default: list[str | None] = []
    others: list[str | None] = []
    for st in block.body:
        if not (isinstance(st, ast.With) and _call_attr(st) == "async_task"):
            return None
        call = st.items[0].context_expr
        name = next((k.value.value for k in call.keywords if k.arg == "name" and isinstance(k.value, ast.Constant)),
                    None)
        is_default = bool(call.args) and isinstance(call.args[0], ast.Constant) and call.args[0].value == "default"
        (default if is_default else others).append(name if isinstance(name, str) else None)
    return default + others if len(default) == 1 else None


def _call_attr(node: ast.With) -> str | None:
    expr = node.items[0].context_expr
    if isinstance(expr, ast.Call):
        f = expr.func
        return f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
    return None


def task_names_from_ttgir(ir: TTGIR) -> list[str | None] | None:
    """Task names read from the kernel's source file, found through the ``tt.func`` location (printed
    after the function's closing brace)."""
    func = kernel_function(ir.module, public=True)
    locs = func.locs if func is not None else []
    if not locs:
        return None
    src = "".join(linecache.getlines(locs[0].file))
    return task_names_from_source(src, locs[0].line) if src else None
