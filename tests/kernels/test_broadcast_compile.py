"""Compile-only (CPU, sm_90, down to SASS) checks of the fused broadcast-linear kernel, and its host side.

The default config must show the warp-specialized structure in PTX (wgmma, TMA loads and the 3-D TMA
store, mbarrier waits, setmaxnreg), fit in shared memory and compile without spills; odd candidate
counts and dimensions that are no multiple of any tile must compile too.
"""

from __future__ import annotations

import re

import pytest

torch = pytest.importorskip("torch")

import compile_facts  # noqa: E402
from tlx_kernels import broadcast as BC  # noqa: E402
from tlx_kernels.broadcast import host as H  # noqa: E402

from workbench.compile import compile as wb_compile  # noqa: E402

_cache: dict = {}
SHAPES = {s.name: s for s in BC.TEST_SHAPES}


def operands(s: BC.Shape, dtype=torch.bfloat16):
    """Uninitialised CPU operands of shape ``s`` (compiling needs shapes, strides and dtypes only)."""
    U = torch.empty(s.B, s.DU, dtype=dtype)
    X = torch.empty(s.B, s.C, s.DX, dtype=dtype)
    W = torch.empty(s.DU + s.DX, s.N, dtype=dtype)
    b = torch.empty(s.N, dtype=dtype) if s.bias else None
    return U, X, W, b


def build(name: str = "realistic", cfg=None, dtype=torch.bfloat16):
    key = (name, repr(cfg), str(dtype))
    if key not in _cache:
        s = SHAPES[name]
        args, kw, _grid, _y = BC.prepare(*operands(s, dtype), act=s.act, config=cfg)
        _cache[key] = wb_compile(BC.KERNEL, *args, target="sm_90", **kw)
    return _cache[key]


def facts(art) -> dict:
    """compile_facts' reading, and the broadcast kernel's TMA loads and stores and mbarrier waits."""
    ptx = art.stages["ptx"]
    return dict(
        compile_facts.facts(art),
        wgmma=ptx.count("wgmma.mma_async"),
        tma_load=len(re.findall(r"cp\.async\.bulk\.tensor\.2d\.shared::\w+\.global\.mbarrier", ptx)),
        tma_store=len(re.findall(r"cp\.async\.bulk\.tensor\.3d\.global\.shared::\w+\.bulk_group", ptx)),
        try_wait=ptx.count("mbarrier.try_wait"),
    )


def test_default_config_is_warp_specialized_tma_wgmma():
    f = facts(build())
    assert f["wgmma"] > 0, "no wgmma in the PTX"
    assert f["tma_load"] >= 2, "the producer's TMA loads (U or X, W) are missing"
    assert f["tma_store"] >= 1, "no 3-D TMA store of Y"
    assert f["try_wait"] >= 2, "no mbarrier waits (producer on empty, consumers on full)"
    assert BC.DEFAULT["CONSUMER_REGS"] in f["maxnreg"], f"consumers' register budget not set: {f['maxnreg']}"


def test_default_config_fits_and_does_not_spill():
    f = facts(build())
    assert f["spills"] == 0 and f["local"] == 0, f
    assert f["smem"] <= BC.SMEM_LIMIT
    assert abs(f["smem"] - BC.smem_bytes(BC.DEFAULT)) < 128, "the shared-memory estimate is off"


@pytest.mark.parametrize("name", ["odd-small", "unaligned"])
def test_odd_sizes_compile(name):
    s = SHAPES[name]
    assert s.C % 2 == 1 and s.N % 128 and s.DX % 64
    f = facts(build(name))
    assert f["wgmma"] > 0 and f["spills"] == 0


@pytest.mark.parametrize("cfg", BC.CONFIGS[1:], ids=BC.config_name)
def test_other_configs_compile_without_spills(cfg):
    f = facts(build("odd-small", cfg))
    assert f["spills"] == 0 and f["local"] == 0 and f["smem"] <= BC.SMEM_LIMIT, f
    assert abs(f["smem"] - BC.smem_bytes(cfg)) < 128, "the shared-memory estimate is off"


def test_fp16_compiles():
    assert facts(build("odd-small", dtype=torch.float16))["wgmma"] > 0


# ------------------------------------------------------------------------------------------------
# host side (no compile)
# ------------------------------------------------------------------------------------------------


def test_configs_fit_in_shared_memory_and_have_distinct_names():
    cands = BC.CONFIGS + H.sweep_configs()
    assert all(BC.smem_bytes(c) <= BC.SMEM_LIMIT for c in cands)
    assert len({BC.config_name(c) for c in H.sweep_configs()}) == len(H.sweep_configs())
    assert BC.DEFAULT is BC.CONFIGS[0]


def test_prepare_pads_what_tma_cannot_read():
    s = SHAPES["unaligned"]  # D_u = 37, D_x = 45, N = 70: no row stride is a multiple of 16 bytes
    U, X, W, b = BC.make_inputs(s.B, s.C, s.DU, s.DX, s.N, device="cpu")
    args, kw, grid, y = BC.prepare(U, X, W, b, act="relu")
    assert torch.equal(args[0].base, U) and torch.equal(args[1].base, X), "padded copies must keep the values"
    assert torch.equal(args[2].base, W) and torch.equal(args[3].base, W[s.DU :])
    for d in args[:5]:
        assert d.base.data_ptr() % 16 == 0
        assert all(st * 2 % 16 == 0 for st in d.strides[:-1]) and d.strides[-1] == 1
    u, x, wu, wx, yd = args[:5]
    assert (u.shape, x.shape, wu.shape, wx.shape, yd.shape) == (
        [s.B, s.DU],
        [s.B * s.C, s.DX],
        [s.DU, s.N],
        [s.DX, s.N],
        [s.B, s.C, s.N],
    )
    assert wx.base.data_ptr() - wu.base.data_ptr() == s.DU * wu.strides[0] * 2
    assert tuple(y.shape) == (s.B, s.C, s.N) and kw["ACT"] == BC.ACT_CODES["relu"] and kw["HAS_BIAS"]
    assert grid[0] <= BC.num_sms()


def test_prepare_keeps_aligned_operands_without_copies():
    s = SHAPES["realistic"]
    U, X, W, b = operands(s)
    args, *_ = BC.prepare(U, X, W, b)
    assert args[0].base is U and args[1].base is X and args[2].base is W


def test_prepare_rejects_bad_operands():
    U, X, W, b = operands(SHAPES["odd-small"])
    with pytest.raises(ValueError, match="chain"):
        BC.prepare(U, X, W[1:], b)
    with pytest.raises(TypeError):
        BC.prepare(U.float(), X, W, b)
    with pytest.raises(ValueError, match="act"):
        BC.prepare(U, X, W, b, act="gelu")
    with pytest.raises(ValueError, match="bias"):
        BC.prepare(U, X, W, b[:-1])


@pytest.mark.parametrize("B,C,N", [(256, 500, 512), (64, 100, 256), (64, 1000, 512), (3, 77, 96), (1, 1, 8)])
@pytest.mark.parametrize("cfg", BC.CONFIGS, ids=BC.config_name)
def test_schedule_covers_every_candidate_tile_once(B, C, N, cfg):
    units, chunks, m_chunk, grid = BC.schedule(B, C, N, cfg, 132)
    num_m = -(-C // cfg["BM"])
    covered = [i for s in range(chunks) for i in range(s * m_chunk, min(s * m_chunk + m_chunk, num_m))]
    assert covered == list(range(num_m)), "chunks must tile a user's candidate tiles exactly"
    assert (chunks - 1) * m_chunk < num_m, "no empty chunk"
    assert units == B * -(-N // cfg["BN"]) * chunks and 1 <= grid <= min(units, 132)


def test_torch_paths_match_the_definition():
    """reference (fp32) against a per-candidate loop; materialized and decomposed against the reference."""
    U, X, W, b = BC.make_inputs(2, 3, 8, 16, 24, dtype=torch.float32, device="cpu")
    ref = BC.reference(U, X, W, b, "silu")
    for bi in range(2):
        for c in range(3):
            row = torch.nn.functional.silu(torch.cat([U[bi], X[bi, c]]) @ W + b)
            torch.testing.assert_close(ref[bi, c], row)
    U, X, W, b = BC.make_inputs(3, 40, 64, 32, 48, dtype=torch.bfloat16, device="cpu")
    for act in ("none", "relu", "silu"):
        ref = BC.reference(U, X, W, b, act)
        assert BC.rel_err(BC.materialized(U, X, W, b, act), ref) < 1e-2
        assert BC.rel_err(BC.decomposed(U, X, W, b, act), ref) < 1e-2
    assert BC.rel_err(BC.materialized(U, X, W, None), BC.reference(U, X, W)) < 1e-2


def test_work_counts():
    s = BC.MAIN
    assert BC.op_flops(s) == 2 * s.N * (s.B * s.C * s.DX + s.B * s.DU)
    assert BC.materialized_flops(s) > 1.9 * BC.op_flops(s)  # D_u = D_x: the user part is half the GEMM
    assert BC.materialized_extra_bytes(s) == 2 * s.B * s.C * (4 * s.DU + 2 * s.DX)
