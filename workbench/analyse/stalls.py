"""Warp-stall samples joined to the kernel's roles and the user's lines.

Input: samples by PC (Nsight Compute's, ``measure.ncu``), the kernel's SASS (nvdisasm's, with line info) and
the orchestration model. Each PC is aligned with nvdisasm's address of the same instruction (the offset that
makes the most sampled instructions' opcodes agree), each instruction is given the user's lines of its
``//##`` comments (the innermost is "its line") and the role whose ops are on those lines: a task's lines are
the lines of the TTGIR ops of its ``warp_specialize`` region (replicas of one ``async_task`` are one role);
the ops outside the regions are the kernel's setup. The payload counts what could not be mapped, so the
share of samples on a role and a line is a measured number, not an assumption.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from workbench.ir.mlir import walk
from workbench.ir.sass import Instr, Sass, read_sass

__all__ = ["ISSUED", "Role", "attribute", "instruction_roles", "roles_of"]

HOT_ROWS = 40
SETUP = "setup (before and after the tasks)"
ISSUED = "selected"  # the sampled warp issued: not a stall


@dataclass
class Role:
    name: str
    line: int | None  # its ``with tlx.async_task`` line
    warps: int
    lines: set[int] = field(default_factory=set)


def roles_of(model: Any) -> list[Role]:
    """The kernel's roles and the user's lines each one's ops are on; one role for a kernel without tasks."""
    func = getattr(model, "func", None)
    if func is None or not func.regions:
        return []
    body = func.regions[0]
    ws = next((op for op in body.ops if op.name == "ttg.warp_specialize"), None)
    to_line = model.to_line
    if ws is None:
        return [Role("the kernel", None, model.tasks[0].num_warps if model.tasks else 4, _lines(body.ops, to_line))]
    outside = [op for op in body.ops if op is not ws]
    roles = [Role(SETUP, None, 0, _lines(outside, to_line))]
    regions = {r.label: r for r in ws.regions}
    default = model.tasks[0]
    if "default" in regions:
        roles.append(Role("the default task", default.with_line, default.num_warps,
                          _lines(regions["default"].ops, to_line)))
    by_head: dict[Any, Role] = {}
    for t in model.tasks[1:]:
        region = regions.get(f"partition{t.partition}")
        head = t.with_line if t.with_line is not None else ("partition", t.partition)
        role = by_head.get(head)
        if role is None:
            name = f"the task at line {t.with_line}" if t.with_line else f"partition {t.partition}"
            role = by_head[head] = Role(name, t.with_line, 0)
            roles.append(role)
        role.warps += t.num_warps
        if region is not None:
            role.lines |= _lines(region.ops, to_line)
    return roles


def _lines(ops: list[Any], to_line: Any) -> set[int]:
    out: set[int] = set()
    for op in ops:
        for o in (op, *(x for r in op.regions for x in walk(r))):
            if (line := to_line(o)) is not None:
                out.add(line)
    return out


def _opcode(sass: str) -> str:
    words = sass.split()
    while words and words[0].startswith("@"):
        words = words[1:]
    return words[0].rstrip(";") if words else ""


def align(pcs: dict[int, str], instrs: list[Instr]) -> int:
    """The offset ``pc - address`` that makes the most sampled instructions' opcodes agree with nvdisasm's."""
    addresses = {x.address for x in instrs}
    if all(pc in addresses for pc in pcs):
        return 0
    by_op: dict[str, list[int]] = {}
    for x in instrs:
        by_op.setdefault(x.op, []).append(x.address)
    votes: Counter[int] = Counter()
    for pc, text in sorted(pcs.items())[:400]:
        for a in by_op.get(_opcode(text), [])[:256]:
            votes[pc - a] += 1
    if votes:
        return votes.most_common(1)[0][0]
    return min(pcs) - instrs[0].address if pcs and instrs else 0


def _line_of(x: Instr, lines: list[int]) -> int | None:
    """The instruction's own user line: its innermost location among the user's lines of that SASS line."""
    return next((loc.line for loc in x.locs if loc.line in lines), lines[0] if lines else None)


def _span(r: Role) -> range:
    """The lines a task's block covers: from its ``with`` line to its last op's line (continuation lines of
    a statement carry SASS line info but no op of their own)."""
    if r.name == SETUP or not r.lines:
        return range(0)
    return range(r.line or min(r.lines), max(r.lines) + 1)


OUT_OF_LINE = 16  # instructions of an out-of-line block at most (a wait's retry loop is three)
SHARED = "?"  # a line that several tasks' ops are on, where no location of the instruction tells which


def _role_of(lines: list[int], x: Instr, roles: list[Role]) -> str | None:
    """The role of one instruction by its lines; ``SHARED`` where several tasks have them (``_roles``)."""
    hit = [r for r in roles if any(ln in r.lines for ln in lines)]
    if not hit:
        hit = [r for r in roles if any(ln in _span(r) for ln in lines)]
    tasks = [r for r in hit if r.name != SETUP]
    if len(tasks) == 1:
        return tasks[0].name
    if not tasks and hit:
        return hit[0].name
    if tasks:  # a line shared by tasks: the role of its outermost location (the call site in the kernel)
        for loc in reversed(x.locs):
            owners = [r for r in tasks if loc.line in r.lines]
            if len(owners) == 1:
                return owners[0].name
        return SHARED
    return None


def instruction_roles(code: Sass, sass_lines: dict[int, list[int]], roles: list[Role]) -> dict[int, str | None]:
    """Each instruction's role by address. An instruction on a line several tasks share (the ``with
    tlx.async_tasks()`` line that the wait loops' inline assembly often carries, a helper both call) takes the
    role of the nearest instruction before it that has a task's role, else after it: ptxas lays each task's
    code out in one block. Then an out-of-line block (entered by forward branches, leaving by a branch back:
    an mbarrier wait's retry loop, which ptxas moves to the end of the kernel with a neighbour's line) takes the
    role of the code that branches to it."""
    instrs = code.instrs
    own = [_role_of(sass_lines.get(x.line, []), x, roles) for x in instrs]
    before, after = _nearest_task(own), _nearest_task(own[::-1])[::-1]
    out = [(before[i] or after[i]) if r == SHARED else r for i, r in enumerate(own)]
    entries: dict[int, list[int]] = {}  # block head -> the branches into it
    for i, x in enumerate(instrs):
        if x.target in code.labels:
            entries.setdefault(code.labels[x.target], []).append(i)
    for head, srcs in entries.items():
        end = next((j for j in range(head, min(head + OUT_OF_LINE, len(instrs)))
                    if instrs[j].op in ("BRA", "EXIT") and not instrs[j].pred), None)
        into = [i for i in srcs if end is None or not head <= i <= end]  # its own retry branch aside
        if end is None or not into or max(into) >= head or code.labels.get(instrs[end].target or "", head) >= head:
            continue  # not a small block entered only from before and leaving backwards
        owners = {out[i] for i in into} - {None}
        if len(owners) == 1:
            out[head:end + 1] = [owners.pop()] * (end + 1 - head)
    return {x.address: r for x, r in zip(instrs, out, strict=True)}


def _nearest_task(own: list[str | None]) -> list[str | None]:
    """For each position, the last task role at or before it (setup and shared lines are not a task's)."""
    out, last = [], None
    for r in own:
        if r not in (None, SETUP, SHARED):
            last = r
        out.append(last)
    return out


def attribute(by_pc: dict[int, dict[str, int]], pc_sass: dict[int, str], sass_text: str,
              sass_lines: dict[int, list[int]], roles: list[Role]) -> dict[str, Any]:
    """The stalls payload: samples per role, per user line and per SASS instruction (hottest first), each by
    reason, with the shares that could be mapped. ``sass_lines``: SASS line -> the user's lines
    (``Artifact.reverse_map("sass")``)."""
    code = read_sass(sass_text)
    by_addr = {x.address: x for x in code.instrs}
    base = align(pc_sass, code.instrs)
    in_loop = _loop_addresses(code)
    role_at = instruction_roles(code, sass_lines, roles)
    total: Counter[str] = Counter()
    per_role: dict[str, Counter[str]] = {r.name: Counter() for r in roles}
    per_line: dict[int, Counter[str]] = {}
    line_role: dict[int, Counter[str]] = {}
    hot: list[dict[str, Any]] = []
    n = {"all": 0, "instr": 0, "line": 0, "role": 0, "both": 0, "loop": 0, "loop_both": 0}
    for pc, reasons in by_pc.items():
        s = sum(reasons.values())
        total.update(reasons)
        n["all"] += s
        x = by_addr.get(pc - base)
        if x is None:
            continue
        n["instr"] += s
        lines = sass_lines.get(x.line, [])
        line, role = _line_of(x, lines), role_at[x.address]
        looped = x.address in in_loop
        n["loop"] += s if looped else 0
        if line is not None:
            n["line"] += s
            per_line.setdefault(line, Counter()).update(reasons)
            if role:
                line_role.setdefault(line, Counter())[role] += s
        if role is not None:
            n["role"] += s
            per_role[role].update(reasons)
        if line is not None and role is not None:
            n["both"] += s
            n["loop_both"] += s if looped else 0
        hot.append({"address": x.address, "sass_line": x.line, "op": x.op, "samples": s, "top": _top(reasons),
                    "by_reason": dict(reasons), "line": line, "role": role, "loop": looped})
    hot.sort(key=lambda h: -h["samples"])
    return {
        "reasons": [r for r, _ in total.most_common()],
        "samples": n["all"],
        "by_reason": dict(total),  # every sample, placed or not
        "mapped": {"instruction": _share(n["instr"], n["all"]), "line": _share(n["line"], n["all"]),
                   "role": _share(n["role"], n["all"]), "role_and_line": _share(n["both"], n["all"]),
                   "loop_samples": n["loop"], "loop_role_and_line": _share(n["loop_both"], n["loop"])},
        "pc_offset": base,
        "roles": [{"role": r.name, "line": r.line, "warps": r.warps, "samples": sum(per_role[r.name].values()),
                   "stalled": _stalled(per_role[r.name]), "by_reason": dict(per_role[r.name])}
                  for r in roles],
        "lines": [{"line": ln, "samples": sum(c.values()), "top": _top(c), "by_reason": dict(c),
                   "role": line_role[ln].most_common(1)[0][0] if ln in line_role else None}
                  for ln, c in sorted(per_line.items())],
        "hot": hot[:HOT_ROWS],
    }


def _loop_addresses(code: Any) -> set[int]:
    """Addresses inside a loop of the SASS (a backward branch's range)."""
    out: set[int] = set()
    for head, back in code.loops():
        out.update(x.address for x in code.instrs[head:back + 1])
    return out


def _top(reasons: dict[str, int]) -> str | None:
    stalls = {k: v for k, v in reasons.items() if k != ISSUED and v}
    return max(stalls, key=lambda k: stalls[k]) if stalls else (ISSUED if reasons.get(ISSUED) else None)


def _stalled(reasons: dict[str, int]) -> float | None:
    s = sum(reasons.values())
    return round(1 - reasons.get(ISSUED, 0) / s, 4) if s else None


def _share(part: int, whole: int) -> float | None:
    return round(part / whole, 4) if whole else None
