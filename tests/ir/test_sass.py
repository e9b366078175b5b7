"""The one SASS reader (workbench.ir.sass): hand-written nvdisasm text, and the real SASS of a compiled kernel."""

from __future__ import annotations

import re

from workbench.ir.loc import Loc
from workbench.ir.sass import code_text, is_line_info, read_sass, sass_line_locations

SASS = """\
//--------------------- .text.k --------------------------
	.section	.text.k,"ax",@progbits
	//## File "/k.py", line 3
        /*0000*/                   LDC R1, c[0x0][0x28] ;
	//## File "/lib.py", line 10 inlined at "/k.py", line 8
	//## File "/k.py", line 8
.L_x_1:
        /*0010*/              @!UP0 BRA `(.L_x_1) ;
        /*0020*/                   HGMMA.64x128x16.F32 R24, gdesc[UR16], R24, gsb0 ;
//--------------------- .text.other --------------------------
        /*0000*/                   EXIT ;
"""


def test_instructions_labels_and_line_info():
    sass = read_sass(SASS)
    ldc, bra, mma, exit_ = sass.instrs
    assert (ldc.line, ldc.address, ldc.op, ldc.args, ldc.locs) == (4, 0, "LDC", "R1, c[0x0][0x28]", [Loc("/k.py", 3)])
    assert (bra.pred, bra.op, bra.target, sass.labels) == ("@!UP0", "BRA", ".L_x_1", {".L_x_1": 1})
    # consecutive //## lines are one location: the callee's line, its call site, then the caller's own line
    assert bra.locs == mma.locs == [Loc("/lib.py", 10), Loc("/k.py", 8, inlined=True), Loc("/k.py", 8)]
    assert mma.src == [Loc("/lib.py", 10), Loc("/k.py", 8)] and mma.target is None
    assert exit_.locs == []  # a new function section starts without line info
    assert sass_line_locations(SASS) == {4: ldc.locs, 8: bra.locs, 9: mma.locs}


def test_real_sass_every_instruction_read(ws_gemm):
    text = ws_gemm.stages["sass"]
    sass = read_sass(text)
    printed = [n for n, ln in enumerate(text.splitlines(), 1) if re.match(r"\s*/\*[0-9a-f]{4,}\*/", ln)]
    assert [x.line for x in sass.instrs] == printed and len(printed) > 500
    assert all(b.address - a.address == 16 for a, b in zip(sass.instrs, sass.instrs[1:]))  # one function
    targets = {x.target for x in sass.instrs if x.target}
    assert targets and targets <= set(sass.labels)
    assert {x.op.split(".")[0] for x in sass.instrs} >= {"HGMMA", "UTMALDG", "SYNCS", "USETMAXREG", "EXIT"}
    kernel_file = ws_gemm.source.filename
    assert any(loc.file == kernel_file for x in sass.instrs for loc in x.src)
    assert any(loc.inlined for x in sass.instrs for loc in x.locs)  # device functions inlined at their call sites
    assert sass_line_locations(text) == {x.line: x.locs for x in sass.instrs if x.locs}


def test_counts_loops_and_code_text():
    sass = read_sass(SASS)
    assert (sass.count("HGMMA"), sass.count("BRA"), sass.count("HGMM"), sass.loops()) == (1, 1, 0, [(1, 1)])
    code = code_text(SASS).splitlines()
    assert len(code) == 6 and not any("//" in ln for ln in code) and code[2] == ".L_x_1:"
    assert [is_line_info(ln) for ln in SASS.splitlines()[2:5]] == [True, False, True]


def test_real_sass_counts_and_loops(ws_gemm):
    text = ws_gemm.stages["sass"]
    sass = read_sass(text)
    ops = [ln.split(";")[0].split()[1 if "@" not in ln else 2] for ln in text.splitlines()
           if re.match(r"\s*/\*[0-9a-f]{4,}\*/", ln)]
    for opcode in ("HGMMA", "SYNCS", "UTMALDG", "BAR.SYNC", "LDL"):
        assert sass.count(opcode) == sum(1 for o in ops if o == opcode or o.startswith(opcode + "."))
    assert sass.count("HGMMA") > 0
    loops = sass.loops()
    assert loops and all(sass.instrs[b].op == "BRA" and h <= b for h, b in loops)
    assert any(any(x.op.startswith("HGMMA") for x in sass.instrs[h:b]) for h, b in loops)  # the K loop
    code = code_text(text)
    assert "//" not in code and len([ln for ln in code.splitlines() if ln.lstrip().startswith("/*")]) == len(ops)
