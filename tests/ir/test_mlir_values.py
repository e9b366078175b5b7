"""The MLIR reader's accessors for values and attributes (workbench.ir.mlir): an op's result type, an scf.for's
header, an scf.while's arguments, the module's attributes, the first file location; on real TTGIR."""

from __future__ import annotations

import pytest

from workbench.ir.mlir import ValueType, find, memdesc_type, parse_ttgir, read_type, walk
from workbench.ir.mlir_loc import first_file, is_loc_definition, strip_loc


def test_value_types_of_real_ttgir(ws_gemm):
    module = parse_ttgir(ws_gemm.stages["ttgir"])
    allocs = {op.value_name: op.value_type() for op in walk(module.regions[0]) if op.name == "ttg.local_alloc"}
    assert allocs["a_bufs"] == ValueType("memdesc", [6, 64, 64], "bf16", "#shared, #smem, mutable")
    assert allocs["full"] == ValueType("memdesc", [3, 1], "i64", "#shared1, #smem, mutable")
    assert allocs["b_bufs"].nbytes == 3 * 64 * 256 * 2
    const = next(op for op in walk(module.regions[0]) if op.name == "arith.constant" and "dense" in op.body)
    assert const.value_type() == ValueType("tensor", [64, 256], "f32", "#mma")
    for op in walk(module.regions[0]):  # the reader's memdesc and the older helper agree on every op
        t = op.value_type()
        if t is not None and t.kind == "memdesc" and op.name == "ttg.local_alloc":
            assert memdesc_type(op.body) == (t.shape, t.dtype, " " + t.attrs)


def test_read_type_hand_cases():
    assert read_type("i32") == ValueType("scalar", [], "i32")
    assert read_type("!ttg.memdesc<2x128x64xf8E4M3FN, #shared, #smem, mutable>").nbytes == 2 * 128 * 64
    assert read_type("!tt.tensordesc<tensor<64x64xbf16, #shared>>").kind == "scalar"  # a descriptor is no tensor
    assert read_type("  ") is None


def test_a_memdesc_subview_names_the_allocation_it_views():
    view = read_type("!ttg.memdesc<16x64xbf16, #shared2, #smem, 32x64>")
    assert view.shape == [16, 64] and view.alloc_shape == [32, 64]
    ring = read_type("!ttg.memdesc<64x32xbf16, #shared, #smem, mutable, 2x64x32>")
    assert ring.shape == [64, 32] and ring.alloc_shape == [2, 64, 32]
    assert read_type("!ttg.memdesc<2x64x32xbf16, #shared, #smem, mutable>").alloc_shape == [2, 64, 32]
    assert read_type("tensor<64x32xbf16, #blocked>").alloc_shape == [64, 32]


def test_for_headers_of_real_ttgir(ws_gemm):
    module = parse_ttgir(ws_gemm.stages["ttgir"])
    loops = [op.for_loop() for op in walk(module.regions[0]) if op.name == "scf.for"]
    assert len(loops) >= 4 and all(loops)
    k_loop = next(h for h in loops if len(h.iter_args) == 3)  # the consumer's K loop: accumulator, counters
    assert (k_loop.iv, k_loop.lower, k_loop.step) == ("%k", k_loop.iter_args[2][1], "%c1_i32_8")
    assert k_loop.upper.startswith("%num_k") and [a for a, _ in k_loop.iter_args][0].startswith("%acc")
    assert k_loop.iter_args[0][1] == "%cst"
    assert find(module.regions[0], "tt.func").for_loop() is None


def test_module_attributes_of_real_ttgir(ws_gemm):
    module = parse_ttgir(ws_gemm.stages["ttgir"])
    assert (module.num_warps, module.attribute("ttg.threads-per-warp"), module.attribute("ttg.maxnreg")) == (4, 32,
                                                                                                          None)


def test_maxnreg_is_a_module_attribute_when_the_launch_sets_it():
    torch = pytest.importorskip("torch")
    from tlx_kernels.gemm import ws_cooperative as G

    import workbench

    a = torch.empty(256, 256, dtype=torch.bfloat16)
    args, kwargs, _grid, _out = G.prepare(a, a, sms=132)
    art = workbench.compile(G.kernel, *args, target="sm_90", maxnreg=168, **kwargs)
    assert parse_ttgir(art.stages["ttgir"]).attribute("ttg.maxnreg") == 168


def test_while_args_of_real_ttgir():
    torch = pytest.importorskip("torch")
    import triton
    import triton.language as tl

    import workbench

    @triton.jit
    def halve(x_ptr, n):
        i = tl.load(x_ptr)
        steps = 0
        while i > n:
            i = i // 2
            steps += 1
        tl.store(x_ptr, steps)

    art = workbench.compile(halve, torch.empty(1, dtype=torch.int32), 5, target="sm_90")
    module = parse_ttgir(art.stages["ttgir"])
    loop = find(module.regions[0], "scf.while")  # '%steps:2 = scf.while (%i_0 = %i, %steps_1 = %c0_i32) : ...'
    assert loop.while_args() == [("%i_0", "%i"), ("%steps_1", "%c0_i32")]
    assert [a for a, _ in loop.while_args()] == loop.regions[1].args  # the 'do' region's ^bb0 takes the same names
    assert loop.for_loop() is None and find(module.regions[0], "scf.yield").while_args() == []


def test_first_file_and_loc_table_lines_of_real_ttgir(ws_gemm):
    text = ws_gemm.stages["ttgir"]
    assert first_file(text) == ws_gemm.source.filename
    lines = text.splitlines()
    table = [ln for ln in lines if is_loc_definition(ln)]
    assert table and all(ln.startswith("#loc") for ln in table)
    assert not any(is_loc_definition(ln) for ln in lines if strip_loc(ln)[0].lstrip().startswith("%"))
