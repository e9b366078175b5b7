"""Layout inference, layout= overrides and autotune configs (compile-only)."""

from __future__ import annotations

import inspect

import layout_kernels as K
import pytest
import tlx_examples as E
import torch
import triton
import triton.experimental.gluon.language as gl
from triton.tools.tensor_descriptor import TensorDescriptor

from workbench.compile import compile as wb_compile
from workbench.tlx import TLXCompileError
from workbench.tlx import layouts as L


def test_default_layouts_do_not_depend_on_shape():
    assert L.default_blocked(2, 4) == gl.BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0])
    assert L.default_blocked(1, 1).warps_per_cta == [1]
    mma = L.wgmma_layout([128, 256], 8)
    assert mma.warps_per_cta == [8, 1] and mma.instr_shape == [16, 256, 16]
    assert L.wgmma_layout([64, 96], 4).instr_shape == [16, 96, 16]


def test_layout_overrides_are_used_and_reported():
    x = torch.empty(64 * 32, dtype=torch.float32)
    art = wb_compile(K.overrides, x, x, BM=64, BN=32, num_warps=4)
    rows = {(v.kind, v.name): v for v in art.layouts.values}
    buf = rows[("buffer", "buf")]
    assert "SwizzledSharedLayout(vec=8" in buf.layout and buf.reason == "layout= given on local_alloc"
    z = rows[("tensor", "z")]
    assert "size_per_thread=[1, 4]" in z.layout and z.reason.startswith("layout= given at line")
    y = rows[("tensor", "y")]
    assert "size_per_thread=[1, 4]" in y.layout
    assert "#ttg.swizzled_shared<{vec = 8" in art.stages["gluon"]


def test_descriptor_and_overridden_buffer_layouts_must_agree():
    t = torch.empty(128, 128, dtype=torch.bfloat16)
    desc = TensorDescriptor(t, [128, 128], [128, 1], [64, 64])
    with pytest.raises(TLXCompileError) as ei:
        K.tma_into_overridden_buffer.trace((desc,), dict(BM=64, BK=64))
    lines, first = inspect.getsourcelines(K.tma_into_overridden_buffer.fn)
    assert ei.value.lineno == first + next(i for i, ln in enumerate(lines) if "# ERR" in ln)
    assert ei.value.rule == "layout" and "differs from the descriptor's" in ei.value.message


def test_autotune_config_and_pre_hook_set_block_shapes():
    def set_blocks(nargs):
        BM, BN, BK = nargs["BM"], nargs["BN"], nargs["BK"]
        nargs["a_desc"].block_shape = [BM // 2, BK]
        nargs["b_desc"].block_shape = [BK, BN]
        nargs["c_desc"].block_shape = [BM // 2, BN]

    configs = [
        triton.Config({"BM": 128, "BN": 128, "BK": 64, "NUM_STAGES": 3}, num_warps=4, pre_hook=set_blocks),
        triton.Config({"BM": 128, "BN": 64, "BK": 32, "NUM_STAGES": 4}, num_warps=4, pre_hook=set_blocks),
    ]
    tuned = triton.autotune(configs=configs, key=["M", "N", "K"])(E.ws_gemm_kernel)
    M, N, K_ = 256, 256, 192
    a = torch.empty(M, K_, dtype=torch.bfloat16)
    b = torch.empty(K_, N, dtype=torch.bfloat16)
    c = torch.empty(M, N, dtype=torch.bfloat16)
    descs = [TensorDescriptor(t, list(t.shape), list(t.stride()), [1, 1]) for t in (a, b, c)]
    art = wb_compile(tuned, *descs, M, N, K_, config=1)
    assert "wgmma.mma_async" in art.stages["ptx"]
    assert "tensor<64x32xbf16" in art.stages["gluon"]  # a_desc block [BM // 2, BK] of config 1
