"""Compile-only (CPU, sm_90, down to SASS) checks of every GEMM in tlx_kernels.gemm.

Every kernel in bf16 and fp16, row-/column-major A and B, a shape that is not a multiple of any
tile; the warp-specialized kernels must show wgmma, TMA and setmaxnreg in their PTX; every config
of every kernel must fit in shared memory and compile without spills (no LDL/STL in SASS).
"""

from __future__ import annotations

import re

import pytest

torch = pytest.importorskip("torch")

from tlx_kernels import gemm as G  # noqa: E402
from tlx_kernels.gemm import common as C  # noqa: E402

from workbench.compile import compile as wb_compile  # noqa: E402

SMEM_LIMIT = 232448
ODD = (1000, 1500, 776)  # K a multiple of 8 keeps the row-major A stride 16-byte aligned
ODD_K = (1000, 1500, 777)  # forces the wrapper's padded copy
_cache: dict = {}


def make(M: int, N: int, K: int, dtype, a_t: bool, b_t: bool):
    a = torch.empty(K, M, dtype=dtype).T if a_t else torch.empty(M, K, dtype=dtype)
    b = torch.empty(N, K, dtype=dtype).T if b_t else torch.empty(K, N, dtype=dtype)
    return a, b


def build(name: str, shape=ODD, dtype=torch.bfloat16, a_t=False, b_t=False, cfg=None):
    key = (name, shape, str(dtype), a_t, b_t, repr(cfg))
    if key not in _cache:
        mod = G.MODULES[name]
        a, b = make(*shape, dtype, a_t, b_t)
        if name == "triton_dot":
            kernel, args, kw, _grid, _c = mod.prepare(a, b, cfg)
        else:
            args, kw, _grid, _c = mod.prepare(a, b, cfg)
            kernel = G.KERNELS[name]
        _cache[key] = wb_compile(kernel, *args, target="sm_90", **kw)
    return _cache[key]


def facts(art) -> dict:
    ptx, sass = art.stages["ptx"], art.stages.get("sass", "")
    return dict(
        regs=art.metadata.registers,
        spills=(art.metadata.spill_stores or 0) + (art.metadata.spill_loads or 0),
        smem=art.metadata.shared_bytes,
        hgmma=sass.count("HGMMA"),
        local=len(re.findall(r"\b(LDL|STL)\b", sass)),
        maxnreg=[int(x) for x in re.findall(r"setmaxnreg\.\w+\.sync\.aligned\.u32\s+(\d+)", ptx)],
    )


LAYOUTS = [(False, False), (False, True), (True, False), (True, True)]
LAYOUT_IDS = ["rr", "rc", "cr", "cc"]


@pytest.mark.parametrize("layout", LAYOUTS, ids=LAYOUT_IDS)
@pytest.mark.parametrize("name", list(G.MODULES))
def test_every_kernel_bf16_all_majors(name, layout):
    art = build(name, ODD, torch.bfloat16, *layout)
    f = facts(art)
    assert "wgmma.mma_async" in art.stages["ptx"]
    assert "cp.async.bulk.tensor" in art.stages["ptx"]
    assert f["spills"] == 0 and f["local"] == 0, f
    assert f["smem"] <= SMEM_LIMIT, f


@pytest.mark.parametrize("layout", [(False, False), (True, True)], ids=["rr", "cc"])
@pytest.mark.parametrize("name", list(G.MODULES))
def test_every_kernel_fp16(name, layout):
    art = build(name, ODD, torch.float16, *layout)
    ptx = art.stages["ptx"]
    assert re.search(r"wgmma\.mma_async\S*\.f32\.f16\.f16", ptx), "fp16 wgmma expected"
    assert facts(art)["spills"] == 0


def test_bf16_uses_bf16_wgmma():
    ptx = build("ws_cooperative").stages["ptx"]
    assert re.search(r"wgmma\.mma_async\S*\.f32\.bf16\.bf16", ptx)


@pytest.mark.parametrize("name", ["ws_cooperative", "ws_pingpong"])
def test_warp_specialized_kernels(name):
    art = build(name)
    ptx, ttgir = art.stages["ptx"], art.stages["ttgir"]
    for s in ("wgmma.mma_async", "cp.async.bulk.tensor", "setmaxnreg", "mbarrier.try_wait"):
        assert s in ptx, s
    assert "ttg.warp_specialize" in ttgir
    assert "partition0" in ttgir and "partition1" in ttgir  # two consumer replicas
    f = facts(art)
    assert 232 in f["maxnreg"] and 40 in f["maxnreg"], f  # consumers up, producer down
    assert art.metadata.num_warps == 12


def test_pingpong_named_barriers():
    ptx = build("ws_pingpong").stages["ptx"]
    # named barriers 9/10 go through registers: bar.sync %r, %r / bar.arrive %r, %r
    assert re.search(r"bar\.arrive\s+%r\d+, %r\d+;", ptx)
    assert re.search(r"bar\.sync\s+%r\d+, %r\d+;", ptx)


def test_single_role_has_no_partitions():
    art = build("tma_pipelined")
    assert "ttg.warp_specialize" not in art.stages["ttgir"]
    assert "setmaxnreg" not in art.stages["ptx"]


def test_wrapper_pads_misaligned_rows():
    art = build("ws_cooperative", ODD_K)
    assert facts(art)["spills"] == 0
    a, b = make(*ODD_K, torch.bfloat16, False, False)
    ops = C.operands(a, b)
    assert ops.a.stride(0) % 8 == 0 and tuple(ops.a.shape) == (1000, 777)


@pytest.mark.parametrize("name", list(G.MODULES))
def test_every_config_fits_and_does_not_spill(name):
    mod = G.MODULES[name]
    for cfg in mod.CONFIGS:
        f = facts(build(name, (4096, 4096, 4096), torch.bfloat16, False, False, cfg))
        assert f["spills"] == 0 and f["local"] == 0, (cfg, f)
        assert f["smem"] <= SMEM_LIMIT, (cfg, f)
        assert f["hgmma"] > 0, (cfg, f)


def test_smem_estimate_matches_kernels():
    for name, kind in (("ws_cooperative", "cooperative"), ("ws_pingpong", "pingpong")):
        for cfg in G.MODULES[name].CONFIGS:
            assert C.smem_bytes(cfg, kind) <= SMEM_LIMIT, (name, cfg)


def test_tile_order_covers_every_tile_once():
    # the GROUP_M swizzle of tile_coords, replayed in Python
    def coords(t, npm, npn, g):
        in_group = g * npn
        first = (t // in_group) * g
        size = min(npm - first, g)
        return first + (t % in_group) % size, (t % in_group) // size

    for npm, npn, g in ((7, 5, 8), (64, 32, 8), (33, 17, 16)):
        seen = {coords(t, npm, npn, g) for t in range(npm * npn)}
        assert seen == {(m, n) for m in range(npm) for n in range(npn)}


def test_operand_views():
    a = torch.empty(64, 32, dtype=torch.bfloat16)
    s, t = C.tma_operand(a)
    assert s is a and not t
    s, t = C.tma_operand(a.T)
    assert t and s.data_ptr() == a.data_ptr()
    with pytest.raises(ValueError):
        C.check_operands(torch.empty(4, 5, dtype=torch.bfloat16), torch.empty(4, 5, dtype=torch.bfloat16))
    with pytest.raises(TypeError):
        C.check_operands(torch.empty(4, 5), torch.empty(5, 4))


def test_cooperative_split_epilogue_4_stages():
    # EPI_SPLIT=2: the accumulator halves come from reshape/permute/split without a layout conversion,
    # each consumer issues two TMA stores, and the 4-stage 128x256x64 ring fits in shared memory.
    cfg = next(c for c in G.MODULES["ws_cooperative"].CONFIGS if c.get("EPI_SPLIT", 1) == 2)
    assert cfg["NUM_STAGES"] == 4 and "_e2" in C.config_name(cfg)
    for layout, dtype in (((False, False), torch.bfloat16), ((True, True), torch.float16)):
        art = build("ws_cooperative", ODD, dtype, *layout, cfg=cfg)
        f = facts(art)
        assert f["spills"] == 0 and f["local"] == 0 and f["smem"] <= SMEM_LIMIT, f
        assert "convert_layout" not in art.stages["ttgir"]
        assert art.stages["sass"].count("UTMASTG") == 4  # 2 consumers x 2 halves
        assert art.stages["sass"].count("STSM") == build("ws_cooperative").stages["sass"].count("STSM")
    assert C.smem_bytes(cfg, "cooperative") <= SMEM_LIMIT
