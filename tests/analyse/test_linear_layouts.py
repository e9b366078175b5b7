"""Layouts as linear-layout data: what the viewer draws, computed by Triton's own C++ at compile time."""

import itertools
import math
import os
import sys

import pytest
import torch
from triton.backends.compiler import GPUTarget

from workbench.analyse.layouts import linear_layouts, parse_layouts
from workbench.compile.triton_reach import linear_layouts as triton_linear

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "compile"))

TTGIR = """#blocked = #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], \
order = [1, 0]}>
#shared = #ttg.swizzled_shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0]}>
#smem = #ttg.shared_memory
module attributes {"ttg.num-warps" = 4 : i32} {
  tt.func public @k() {
    %offs = tt.make_range {end = 128 : i32, start = 0 : i32} : tensor<128xi32, #blocked>
    %y = arith.mulf %a, %b : tensor<128x64xf32, #blocked>
    %z = arith.addf %a, %b : tensor<128x64xf32, #blocked>
    %w = arith.addf %a, %b : tensor<128x64xf16, #blocked>
    %buf = ttg.local_alloc : () -> !ttg.memdesc<2x64x64xf16, #shared, #smem, mutable>
    tt.return
  }
}
"""

SM90 = GPUTarget("cuda", 90, 32)


def _of(decls, types):
    return triton_linear(decls, types, SM90)


def held(entry) -> dict[tuple[int, ...], int]:
    """How many (register, lane, warp) indices hold each element: the XOR of the bases of the set bits."""
    counts: dict[tuple[int, ...], int] = {}
    bases = [entry["register"], entry["lane"], entry["warp"]]
    for idx in itertools.product(*[range(1 << len(b)) for b in bases]):
        at = [0] * len(entry["shape"])
        for i, b in zip(idx, bases):
            for bit, vec in enumerate(b):
                if i >> bit & 1:
                    at = [x ^ v for x, v in zip(at, vec)]
        counts[tuple(at)] = counts.get(tuple(at), 0) + 1
    return counts


def test_one_entry_per_alias_shape_and_dtype():
    entries = linear_layouts(TTGIR, parse_layouts(TTGIR), _of)
    keys = [(e["alias"], tuple(e["value_shape"]), e["dtype"]) for e in entries]
    assert sorted(keys) == sorted({("#blocked", (128,), "i32"), ("#blocked", (128, 64), "f32"),
                                   ("#blocked", (128, 64), "f16"), ("#shared", (2, 64, 64), "f16")})
    by = {(e["alias"], tuple(e["value_shape"]), e["dtype"]): e for e in entries}
    # a 1-D value cannot carry a 2-D blocked layout: said, not computed (C++ would abort)
    assert "does not fit" in by["#blocked", (128,), "i32"]["reason"]
    tile = by["#blocked", (128, 64), "f32"]
    assert tile["shape"] == [128, 64] and "reason" not in tile
    counts = held(tile)
    assert len(counts) == 128 * 64 and set(counts.values()) == {1}  # every element, once
    buf = by["#shared", (2, 64, 64), "f16"]
    assert buf["shape"] == [64, 64] and buf["element_bits"] == 16  # one buffer of the ring of two
    offsets = set()
    for o in range(1 << len(buf["offset"])):
        at = [0, 0]
        for bit, vec in enumerate(buf["offset"]):
            if o >> bit & 1:
                at = [at[0] ^ vec[0], at[1] ^ vec[1]]
        offsets.add(tuple(at))
    assert len(offsets) == 64 * 64  # offsets and elements are one to one
    # vec 8, maxPhase 8: the 8-element chunk of row r is stored at chunk (c ^ r % 8)
    assert buf["offset"][3:6] == [[0, 8], [0, 16], [0, 32]] and buf["offset"][6:9] == [[1, 8], [2, 16], [4, 32]]


def test_no_uses_asks_triton_nothing():
    def refuse(decls, types):
        raise AssertionError("asked")

    assert linear_layouts("module {}", parse_layouts("module {}"), refuse) == []


@pytest.mark.slow
def test_a_compiled_kernel_carries_the_data_for_every_value():
    from sample_kernels import matmul

    from workbench.compile import compile as wb_compile
    from workbench.report import Report, validate

    a = torch.empty(256, 256, dtype=torch.float16)
    art = wb_compile(matmul, a, a, a, 256, 256, 256, 256, 256, 256, BM=128, BN=64, BK=32)
    linear = {(e["alias"], tuple(e["value_shape"]), e["dtype"]): e for e in art.layouts.linear}
    alias_of = {d.attr: d.alias for d in art.layouts.declared}
    assert art.layouts.values
    for v in art.layouts.values:
        e = linear[alias_of[v.ttgir], tuple(v.shape), v.dtype]
        assert "reason" not in e, e
        if v.kind == "tensor":
            counts = held(e)
            assert len(counts) == math.prod(v.shape), v  # every element is held
    kinds = {d.kind for d in art.layouts.declared}
    assert {"blocked", "nvidia_mma", "nvmma_shared"} <= kinds
    validate(Report.from_artifact(art).to_dict())  # the schema's linearLayout
