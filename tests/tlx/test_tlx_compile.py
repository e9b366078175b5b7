"""Compile-only tests (CPU, sm_90, down to cubin) of the four TLX example kernels."""

from __future__ import annotations

import pytest
import tlx_examples as E

from workbench.compile import compile as wb_compile


@pytest.fixture(scope="module")
def artifacts():
    cache = {}

    def get(name):
        if name not in cache:
            ex = E.EXAMPLES[name]
            args, kw = ex["example_args"]()
            cache[name] = wb_compile(ex["kernel"], *args, target="sm_90", **kw)
        return cache[name]

    return get


def test_ew_pipeline_two_roles_through_mbarrier_ring(artifacts):
    art = artifacts("ew_pipeline")
    ptx = art.stages["ptx"]
    assert "mbarrier.try_wait" in ptx
    assert "mbarrier.arrive" in ptx
    ttgir = art.stages["ttgir"]
    assert "ttg.warp_specialize" in ttgir
    assert art.metadata.num_warps == 8  # 4 default + 4 consumer warps


def test_tma_gemm_single_role_pipeline(artifacts):
    art = artifacts("tma_gemm")
    ptx = art.stages["ptx"]
    for s in ("wgmma.mma_async", "cp.async.bulk.tensor", "mbarrier.try_wait"):
        assert s in ptx, s
    assert "ttg.warp_specialize" not in art.stages["ttgir"]
    assert art.metadata.spills in (0, None)


def test_ws_gemm_producer_and_two_replicated_consumers(artifacts):
    art = artifacts("ws_gemm")
    ptx = art.stages["ptx"]
    for s in ("wgmma.mma_async", "cp.async.bulk.tensor", "mbarrier.try_wait", "setmaxnreg"):
        assert s in ptx, s
    ttgir = art.stages["ttgir"]
    assert "ttg.warp_specialize" in ttgir
    assert "partition0" in ttgir and "partition1" in ttgir  # one partition per replica
    assert "requestedRegisters = array<i32: 232, 232>" in ttgir
    assert art.metadata.num_warps == 12


def test_cpasync_gemm_commit_and_wait_groups(artifacts):
    art = artifacts("cpasync_gemm")
    ptx = art.stages["ptx"]
    for s in ("cp.async.ca.shared.global", "cp.async.commit_group", "cp.async.wait_group", "wgmma.mma_async"):
        assert s in ptx.replace("cp.async.cg.shared.global", "cp.async.ca.shared.global"), s


def test_stages_and_source_maps_reach_user_lines(artifacts):
    art = artifacts("ws_gemm")
    assert list(art.stages)[:2] == ["tlx", "gluon"]
    src = art.stages["tlx"].splitlines()
    first = E.ws_gemm_kernel.first_line
    dot_line = first + next(i for i, ln in enumerate(src) if "tlx.async_dot(" in ln)
    for stage in ("tlx", "gluon", "ttgir", "ptx"):
        assert dot_line in art.line_maps.get(stage, {}), stage
    gluon_lines = art.stages["gluon"].splitlines()
    assert any("warp_group_dot" in gluon_lines[i - 1] for i in art.line_maps["gluon"][dot_line])


def test_gluon_stage_shows_layouts(artifacts):
    gluon = E.EXAMPLES["ws_gemm"]["kernel"]
    art = artifacts("ws_gemm")
    text = art.stages["gluon"]
    assert "#ttg.nvidia_mma<{versionMajor = 3" in text
    assert "#ttg.nvmma_shared<" in text
    assert "ttg.warp_specialize" in text
    # a fresh compile traces once (and times it); a disk-cache hit from an earlier run traces nothing
    assert art.cache_hit or gluon.last_lowering_ms is not None


def test_layout_report_names_reasons(artifacts):
    art = artifacts("ws_gemm")
    rows = {(v.kind, v.name): v for v in art.layouts.values}
    b = rows[("buffer", "b_bufs")]
    assert b.shape == [3, 64, 128] and b.dtype == "bf16"
    assert "NVMMASharedLayout" in b.layout and b.ttgir.startswith("#ttg.nvmma_shared<")
    assert "operand b of async_dot at line" in b.reason
    assert "async_descriptor_load" in b.reason
    acc = rows[("tensor", "acc")]
    assert "NVMMADistributedLayout" in acc.layout and acc.ttgir.startswith("#ttg.nvidia_mma<")
    assert "accumulator of async_dot at line" in acc.reason
    assert rows[("barrier", "full")].kind == "barrier"
    first = E.ws_gemm_kernel.first_line
    src = art.stages["tlx"].splitlines()
    assert b.line == first + next(i for i, ln in enumerate(src) if ln.strip().startswith("b_bufs ="))


def test_pointer_tensors_get_default_blocked_layouts(artifacts):
    art = artifacts("tma_gemm")
    rows = {v.name: v for v in art.layouts.values if v.kind == "tensor"}
    assert "BlockedLayout" in rows["c_ptrs"].layout
    assert "default coalesced blocked layout" in rows["c_ptrs"].reason
    assert rows["offs_m"].shape == [128]


def test_host_descriptor_layout_matches_buffer_rule():
    import torch
    from triton.tools.tensor_descriptor import TensorDescriptor

    from workbench.tlx import layouts as L
    from workbench.tlx.kernel import to_gluon_descriptor

    t = torch.empty(64, 96, dtype=torch.bfloat16)
    d = to_gluon_descriptor(TensorDescriptor(t, [64, 96], [96, 1], [32, 32]))
    import triton.experimental.gluon.language as gl

    assert d.layout == L.buffer_layout([32, 32], gl.bfloat16)
    assert d.layout.swizzle_byte_width == 64


def test_fast_descriptor_conversion_equals_gluon_constructor():
    """The launch-path conversion skips Gluon's constructor: it must build the same descriptor."""
    import dataclasses

    import torch
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor as GluonTD
    from triton.tools.tensor_descriptor import TensorDescriptor

    from workbench.tlx.kernel import to_gluon_descriptor

    t = torch.empty(100, 72, dtype=torch.float16)
    host = TensorDescriptor(t, t.shape, t.stride(), [64, 32], padding="nan")
    fast = to_gluon_descriptor(host)
    full = GluonTD(t, list(t.shape), list(t.stride()), [64, 32], fast.layout, "nan")
    assert fast.base is full.base
    for f in dataclasses.fields(GluonTD)[1:]:
        assert getattr(fast, f.name) == getattr(full, f.name), f.name
    assert type(fast.shape) is list and type(fast.block_shape) is list
    host.block_shape = [64, 64]  # as an autotune pre_hook does after construction
    assert to_gluon_descriptor(host).block_shape == [64, 64]
    assert fast.block_shape == [64, 32]  # not aliased to the host descriptor's list


@pytest.mark.parametrize("block", [[64, 48], [64]])
def test_fast_descriptor_conversion_checks_a_changed_block_shape(block):
    import torch
    from triton.tools.tensor_descriptor import TensorDescriptor

    from workbench.tlx.kernel import to_gluon_descriptor

    t = torch.empty(128, 128, dtype=torch.bfloat16)
    host = TensorDescriptor(t, t.shape, t.stride(), [64, 64])
    host.block_shape = block
    with pytest.raises((ValueError, AssertionError)):
        to_gluon_descriptor(host)


@pytest.mark.parametrize("name", list(E.EXAMPLES))
def test_compiles_at_shapes_that_are_not_tile_multiples(name):
    ex = E.EXAMPLES[name]
    M, N, K = 1000, 1500, 777
    args, kw = ex["example_args"](M * N) if ex["kind"] == "elementwise" else ex["example_args"](M, N, K)
    art = wb_compile(ex["kernel"], *args, target="sm_90", **kw)
    assert "sass" in art.stages or "ptx" in art.stages


def test_small_helpers_compile():
    import misc_kernels
    import torch

    art = wb_compile(misc_kernels.misc, torch.empty(128), BM=64, BK=64, num_warps=4)
    ptx = art.stages["ptx"]
    assert "bar.arrive" in ptx and "%clock64" in ptx and "%tid.x" in ptx and "wgmma.mma_async" in ptx
    assert "trans" in art.stages["gluon"]  # local_trans -> ttg.memdesc_trans


def test_cache_hit_runs_no_front_end(artifacts):
    # the one trace happens inside Triton's compile; a hit of workbench's cache skips it entirely
    ex = E.EXAMPLES["ws_gemm"]
    first = artifacts("ws_gemm")
    kernel = ex["kernel"]
    kernel.last_lowering_ms = None
    args, kw = ex["example_args"]()
    again = wb_compile(kernel, *args, target="sm_90", **kw)
    assert again.cache_hit and again.key == first.key
    assert kernel.last_lowering_ms is None
    assert again.stages["gluon"] == first.stages["gluon"] and again.layouts.values
