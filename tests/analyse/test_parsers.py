"""Unit tests of the line-info parsers on small, hand-written stage texts."""

from workbench.analyse.diff import diff
from workbench.analyse.layouts import parse_layouts, parse_params
from workbench.analyse.llvm_dbg import llvm_line_locations
from workbench.analyse.ptx_loc import ptx_line_locations
from workbench.analyse.srcmap import build_line_map, invert
from workbench.ir.loc import Loc
from workbench.ir.mlir_loc import LocTable, mlir_line_locations, trailing_loc
from workbench.ir.sass import sass_line_locations

MLIR = """#blocked = #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], \
order = [1, 0]}>
#loc = loc("/k.py":3:0)
module {
  tt.func public @k(%x: !tt.ptr<f32> loc("x"(#loc))) {
    %offs = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32, #blocked> loc(#loc5)
    %y = arith.mulf %a, %b : tensor<128x64xf32, #blocked> loc(#loc7)
    %z = arith.addf %a, %b : tensor<128x64xf32, #blocked> loc(fused[#loc2, "/k.py":9:1])
    tt.return loc(#loc3)
  } loc(#loc)
} loc(#loc)
#loc1 = loc("/k.py":4:10)
#loc2 = loc("/k.py":5:3)
#loc3 = loc(unknown)
#loc4 = loc("/k.py":20:5)
#loc5 = loc("offs"(#loc1))
#loc6 = loc("/k.py":7:1)
#loc7 = loc(callsite(#loc4 at #loc6))
"""


def test_mlir_aliases_names_callsites_fused():
    locs = mlir_line_locations(MLIR)
    assert locs[5] == [Loc("/k.py", 4, 10)]
    assert locs[6] == [Loc("/k.py", 20, 5), Loc("/k.py", 7, 1, inlined=True)]
    assert {(x.line) for x in locs[7]} == {5, 9}
    assert 8 not in locs  # unknown
    _, name = LocTable(MLIR).resolve("#loc5")
    assert name == "offs"


def test_trailing_loc_balances_parentheses():
    assert trailing_loc('%a = op(%b) : i32 loc(callsite(#loc1 at #loc2))') == "callsite(#loc1 at #loc2)"
    assert trailing_loc("%a = op(%b)") is None


def test_line_map_and_inverse():
    m = build_line_map(mlir_line_locations(MLIR), "/k.py")
    assert m[4] == [5] and m[20] == [6] and m[7] == [6]
    assert invert(m)[6] == [7, 20]
    assert build_line_map(mlir_line_locations(MLIR), "/other.py") == {}
    shifted = build_line_map(mlir_line_locations(MLIR), "/k.py", lambda f, ln: ln - 1 if ln > 4 else None)
    assert 3 not in shifted and shifted[19] == [6]


def test_layouts_parse():
    lay = parse_layouts(MLIR)
    (b,) = lay.declared
    assert b.kind == "blocked" and b.params["warpsPerCTA"] == [4, 1] and not b.shared
    names = {u.value for u in b.uses}
    assert {"offs", "y", "z"} <= names
    off = next(u for u in b.uses if u.value == "offs")
    assert off.shape == [128] and off.dtype == "i32" and off.user_line == 4
    assert parse_params("{swizzlingByteWidth = 128, transposed = false}") == {
        "swizzlingByteWidth": 128, "transposed": False}


def test_a_value_without_a_name_is_named_by_its_op():
    """Triton numbers what the user did not name (%7): the table says "reshape %7", not "7"."""
    ttgir = MLIR.replace("%y = arith.mulf", "%7 = tt.reshape").replace('%z = arith.addf', '%8 = "tt.reduce"(%a)')
    names = {u.value for u in parse_layouts(ttgir).declared[0].uses}
    assert {"offs", "reshape %7", "reduce %8"} <= names, names


def test_ptx_loc_with_inlined_at_and_comment_chain():
    ptx = """.file 1 "/k.py"
.file 2 "/lib.py"
.loc 1 3 0
	mov.u32 %r1, %tid.x;
$L__tmp0:
.loc 2 10 4, function_name $L__info_string0, inlined_at 1 8 2
	add.s32 %r2, %r1, 1;
.loc 1 5 7                          // k.py:5:7 @[ k.py:12:3 ]
	st.global.u32 [%rd1], %r2;
	// comment only
"""
    locs = ptx_line_locations(ptx)
    assert locs[4] == [Loc("/k.py", 3, 0)]
    assert locs[7] == [Loc("/lib.py", 10, 4), Loc("/k.py", 8, 2, inlined=True)]
    assert locs[9] == [Loc("/k.py", 5, 7), Loc("/k.py", 12, 3, inlined=True)]
    assert 5 not in locs and 10 not in locs


def test_sass_line_info():
    sass = """.text.k:
	//## File "/k.py", line 3
        /*0000*/                   LDC R1, c[0x0][0x28] ;
	//## File "/lib.py", line 10 inlined at "/k.py", line 8
        /*0010*/                   S2R R0, SR_TID.X ;
        /*0020*/                   HGMMA.64x128x16.F32 R24, gdesc[UR16], R24 ;
"""
    locs = sass_line_locations(sass)
    assert locs[3] == [Loc("/k.py", 3)]
    assert locs[5] == locs[6] == [Loc("/lib.py", 10), Loc("/k.py", 8, inlined=True)]
    assert 1 not in locs and 2 not in locs


def test_llvm_dbg_with_inlining():
    llir = """define void @k() !dbg !4 {
  %1 = add i32 0, 1, !dbg !7
  %2 = mul i32 %1, 2, !dbg !9
  ret void
}
!1 = !DIFile(filename: "k.py", directory: "/src")
!4 = distinct !DISubprogram(name: "k", scope: !1, file: !1, line: 3)
!5 = distinct !DISubprogram(name: "h", scope: !1, file: !1, line: 20)
!7 = !DILocation(line: 4, column: 2, scope: !4)
!8 = !DILocation(line: 6, column: 1, scope: !4)
!9 = !DILocation(line: 21, column: 5, scope: !5, inlinedAt: !8)
"""
    locs = llvm_line_locations(llir)
    assert locs[2] == [Loc("/src/k.py", 4, 2)]
    assert locs[3] == [Loc("/src/k.py", 21, 5), Loc("/src/k.py", 6, 1, inlined=True)]
    assert 4 not in locs


def test_diff_ignores_locations_by_default():
    a = '%a = op : i32 loc(#loc1)\n#loc1 = loc("/k.py":1:0)\n'
    b = '%a = op : i32 loc(#loc2)\n#loc2 = loc("/k.py":2:0)\n'
    assert not diff(a, b, "ttgir").changed
    assert diff(a, b, "ttgir", ignore_locations=False).changed
    c = diff(a, '%a = other : i32 loc(#loc2)\n', "ttgir")
    assert c.added == 1 and c.removed == 1 and "-%a = op : i32" in c.unified


def test_a_linear_layout_is_written_as_gluon_writes_it():
    """A #ttg.linear reads as gl.DistributedLinearLayout (with its values' shape), which Gluon itself accepts."""
    from triton.experimental.gluon import language as gl

    from workbench.analyse.gluon_form import gluon_form

    ttgir = ("#linear = #ttg.linear<{register = [[0, 1], [8, 0]], lane = [[0, 2], [0, 4], [1, 0], [2, 0], [4, 0]], "
             "warp = [[16, 0], [32, 0]], block = []}>\nmodule {\n  tt.func public @k() {\n"
             "    %7 = tt.reshape %a : tensor<64x4xf32, #linear> -> tensor<64x4xf32, #linear> loc(#loc1)\n"
             "    tt.return\n  }\n}\n#loc1 = loc(\"/k.py\":4:10)\n")
    (decl,) = parse_layouts(ttgir).declared
    text = gluon_form(decl)
    assert text.startswith("gl.DistributedLinearLayout(") and "#ttg" not in text
    layout = eval(text, {"gl": gl})  # noqa: S307 - our own output
    assert layout.reg_bases == [[0, 1], [8, 0]] and layout.warp_bases == [[16, 0], [32, 0]]
    assert list(layout.shape) == [64, 4]
