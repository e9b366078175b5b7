"""The one MLIR reader (workbench.ir.mlir, workbench.ir.mlir_loc) on real TTGIR of a compiled warp-specialized kernel.

Two readers used to disagree on a line's trailing ``loc(...)``: the timeline's regex accepted only ``#locN``,
``unknown`` and a bare string, and answered ``unknown`` for the inline forms (``callsite(...)``, ``"name"(...)``,
``"file":line:col``); the analyser's counted parentheses backwards and lost a location whose file name holds an
unbalanced parenthesis. The right answer is the whole expression inside the final ``loc(...)``, whatever its form:
that is what the ``#loc`` table resolves.
"""

from __future__ import annotations

import re
from collections import Counter

from workbench.ir.loc import Loc
from workbench.ir.mlir import find, kernel_function, parse_ttgir, read_op_line, walk
from workbench.ir.mlir_loc import LocTable, strip_loc, trailing_loc

_TABLE_LINE = re.compile(r"^(#loc\d*) = loc\((.*)\)$")


def _form(expr: str) -> str:
    if expr.startswith("callsite("):
        return "callsite"
    if re.match(r'^"[^"]*":\d+:\d+$', expr):
        return "file"
    if re.match(r'^"[^"]*"\(', expr):
        return "name"
    return expr if expr == "unknown" else "alias" if expr.startswith("#loc") else "other"


def test_trailing_loc_reads_every_form_the_loc_table_of_real_ttgir_holds(ws_gemm):
    text = ws_gemm.stages["ttgir"]
    table = LocTable(text)
    forms: Counter = Counter()
    for line in text.splitlines():
        if m := _TABLE_LINE.match(line):
            assert trailing_loc(line) == m.group(2) == table.aliases[m.group(1)]
            forms[_form(m.group(2))] += 1
    # the inline forms the timeline's regex answered 'unknown' for are all there
    assert forms["callsite"] and forms["name"] and forms["file"] and forms["unknown"], forms
    call = next(ln for ln in text.splitlines() if _TABLE_LINE.match(ln) and "callsite(" in ln)
    locs, _ = table.resolve(trailing_loc(call))
    assert len(locs) >= 2 and locs[0].inlined is False and locs[-1].inlined is True


def test_every_op_of_real_ttgir_has_its_printed_location(ws_gemm):
    text = ws_gemm.stages["ttgir"]
    lines = text.splitlines()
    module = parse_ttgir(text)
    ops = list(walk(module.regions[0]))
    # every line that prints an op is one op of the tree, at its line
    assert {n for n, ln in enumerate(lines, 1) if read_op_line(ln) is not None} == {op.line for op in ops}
    for op in ops:
        if op.regions:  # a region op's location is printed after its closing brace
            assert op.loc == trailing_loc(lines[op.regions[-1].end - 1])
        else:
            assert op.loc == trailing_loc(lines[op.line - 1]) and op.loc is not None
    kernel_file = ws_gemm.source.filename
    named = [op for op in ops if op.value_name]
    assert any(op.value_name == "full" for op in named)  # `full = tlx.alloc_barriers(...)`
    assert any(loc.file == kernel_file for op in ops for loc in op.locs)
    assert any(loc.inlined for op in ops for loc in op.locs)  # device functions inlined at their call sites


def test_trailing_loc_hand_cases():
    assert trailing_loc('%a = arith.addf %b, %c : f32 loc("/tmp/k(1.py":3:4)') == '"/tmp/k(1.py":3:4'
    assert trailing_loc('%a = op(%b) : i32 loc(callsite(#loc1 at #loc2))') == "callsite(#loc1 at #loc2)"
    assert trailing_loc('%a = my.alloc(%b)') is None  # 'alloc(' is not 'loc('
    assert trailing_loc("scf.for %i = %a to %b step %c {") is None
    assert trailing_loc("^bb0(%m: f32 loc(callsite(#loc1 at #loc2))):") is None  # a block label: no op location
    assert strip_loc("  tt.return loc(#loc3)  ") == ("  tt.return", "#loc3")
    table = LocTable('#loc1 = loc("/tmp/k(1.py":3:4)\n')
    assert table.resolve(trailing_loc('%a = x.y %b : f32 loc("v"(#loc1))')) == ([Loc("/tmp/k(1.py", 3, 4)], "v")


def test_warp_specialize_regions_and_partitions_of_real_ttgir(ws_gemm):
    text = ws_gemm.stages["ttgir"]
    lines = text.splitlines()
    module = parse_ttgir(text)
    ws = find(kernel_function(module, public=True).regions[0], "ttg.warp_specialize")
    # the module's warps are the default task's; the kernel launches them plus every partition's
    assert module.num_warps + sum(r.num_warps or 0 for r in ws.regions) == ws_gemm.metadata.num_warps
    labels = [r.label for r in ws.regions]
    assert labels == ["default"] + [f"partition{i}" for i in range(len(labels) - 1)] and len(labels) >= 2
    for r in ws.regions:
        assert lines[r.line - 1].strip().startswith(r.label) and lines[r.end - 1].strip().startswith("}")
        assert r.ops[-1].name == ("ttg.warp_yield" if r.label == "default" else "ttg.warp_return")
        assert all(r.holds(op.line) for op in walk(r))
        if r.label != "default":  # isolated from above: one block argument per captured value
            assert len(r.args) == len(ws.operands) and r.num_warps == 4
    assert ws.closing.startswith(":")  # '} : (types) -> ()' ends the op, after its last partition


def test_definition_follows_regions_on_real_ttgir(ws_gemm):
    module = parse_ttgir(ws_gemm.stages["ttgir"])
    ws = find(module.regions[0], "ttg.warp_specialize")
    part = ws.regions[1]
    for op in walk(part):
        for v in op.operands:
            d = module.definition(v, op.line)
            if v.split("#")[0] in part.args:
                assert d is None  # a block argument, not an op
            elif d is not None:
                assert d.line < op.line and (d.parent is module.regions[0] or d.parent.holds(op.line))
    loops = [op for op in walk(module.regions[0]) if op.name == "scf.for" and op.iter_args()]
    assert loops
    for loop in loops:
        body, after = loop.regions[0], loop.regions[0].end + 1
        for carried, _init in loop.iter_args():
            assert module.definition(carried, body.ops[0].line) is loop
        for inner in (op for op in body.ops if op.results):  # defined in the body: not visible after the loop
            d = module.definition(inner.results[0], after)
            assert d is not inner


_IF = """module {
  %0 = scf.if %c -> (i32) {
    %1 = arith.constant 1 : i32 loc(#loc1)
    scf.yield %1 : i32 loc(#loc1)
  } else {
    %2 = arith.addi %1, %1 : i32 loc(#loc1)
    scf.yield %2 : i32 loc(#loc1)
  } loc(#loc2)
} loc(#loc)
#loc = loc(unknown)
#loc1 = loc("/k.py":3:1)
#loc2 = loc("/k.py":5:2)
"""


def test_else_region_closes_the_then_region():
    module = parse_ttgir(_IF)
    (if_op,) = (op for op in walk(module.regions[0]) if op.name == "scf.if")
    assert [r.label for r in if_op.regions] == ["", "else"] and if_op.regions[0].end == if_op.regions[1].line == 5
    assert if_op.loc == "#loc2" and if_op.locs == [Loc("/k.py", 5, 2)] and if_op.results == ["%0"]
    assert module.definition("%1", 6) is None  # the then-region's value is not visible in the else-region
    assert module.definition("%0", 8) is if_op and module.definition("%0", 2) is None and module.at(2) is if_op
