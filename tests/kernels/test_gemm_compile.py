"""Compile-only (CPU, sm_90, down to SASS) checks of every GEMM in tlx_kernels.gemm.

Every config of every module compiles at a shape that is not a multiple of any tile, fits in shared
memory and does not spill; bf16 and fp16, row- and column-major A and B; the warp-specialized kernels
show their roles, register budgets and barriers in TTGIR/PTX; every TLX K loop keeps one wgmma group
in flight (no wgmma wait(0) inside it). Compiles are cached for the session (and on disk by the workbench).
"""

from __future__ import annotations

import functools
import re
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

from compile_facts import facts  # noqa: E402
from tlx_kernels import gemm as G  # noqa: E402
from tlx_kernels.gemm import common as C  # noqa: E402

from workbench.compile import compile as wb_compile  # noqa: E402

ODD = (1000, 1500, 776)  # K a multiple of 8 keeps the row-major A stride 16-byte aligned
TLX = ["tma_pipelined", "ws_cooperative", "ws_pingpong"]
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}
CONSUMERS = {"tma_pipelined": 1, "ws_cooperative": 2, "ws_pingpong": 2}


def make(M: int, N: int, K: int, dtype, a_t: bool, b_t: bool):
    a = torch.empty(K, M, dtype=dtype).T if a_t else torch.empty(M, K, dtype=dtype)
    b = torch.empty(N, K, dtype=dtype).T if b_t else torch.empty(K, N, dtype=dtype)
    return a, b


@functools.cache
def build(name: str, cfg_index: int = 0, dtype: str = "bf16", a_t: bool = False, b_t: bool = False):
    mod = G.MODULES[name]
    a, b = make(*ODD, DTYPES[dtype], a_t, b_t)
    cfg = mod.CONFIGS[cfg_index]
    if name == "triton_dot":
        kernel, args, kw, _grid, _c = mod.prepare(a, b, cfg)
    else:
        kernel, (args, kw, _grid, _c) = mod.kernel, mod.prepare(a, b, cfg)
    return wb_compile(kernel, *args, target="sm_90", **kw)


CASES = [(n, i) for n in G.MODULES for i in range(len(G.MODULES[n].CONFIGS))]


@pytest.mark.parametrize("name,index", CASES, ids=[f"{n}-{C.config_name(G.MODULES[n].CONFIGS[i])}" for n, i in CASES])
def test_every_config_compiles_fits_and_does_not_spill(name, index):
    art = build(name, index)
    f = facts(art)
    ptx = art.stages["ptx"]
    assert "wgmma.mma_async" in ptx and f["hgmma"] > 0
    assert "cp.async.bulk.tensor" in ptx  # TMA
    assert f["spills"] == 0 and f["local"] == 0, f
    assert f["smem"] <= C.SMEM_LIMIT, f
    if name != "triton_dot":
        kind = G.MODULES[name].KIND
        assert f["smem"] <= C.smem_bytes(G.MODULES[name].CONFIGS[index], kind) + 128, (f, "estimate too low")
        assert "mbarrier.try_wait" in ptx
        # the K loop keeps one wgmma group in flight and wait(0) only drains a tile (once per consumer); with
        # MMA_WAIT=0 the loop waits for each group (and no Triton pass adds waits of its own)
        n = CONSUMERS[name]
        want = [n, n] if G.MODULES[name].CONFIGS[index].get("MMA_WAIT", 1) else [0, 2 * n]
        assert [f["waits"].count("1"), f["waits"].count("0")] == want, f["waits"]


# every kernel in bf16 row-major and fp16 column-major; the mixed majors once (the views are shared code)
LAYOUTS = [(n, "bf16", False, False) for n in G.MODULES] + [(n, "fp16", True, True) for n in G.MODULES]
LAYOUTS += [("ws_cooperative", "bf16", False, True), ("ws_cooperative", "fp16", True, False)]


@pytest.mark.parametrize("name,dtype,a_t,b_t", LAYOUTS, ids=[f"{n}-{d}-{'rc'[a]}{'rc'[b]}" for n, d, a, b in LAYOUTS])
def test_dtypes_and_majors(name, dtype, a_t, b_t):
    art = build(name, 0, dtype, a_t, b_t)
    kind = {"bf16": "bf16.bf16", "fp16": "f16.f16"}[dtype]
    assert re.search(rf"wgmma\.mma_async\S*\.f32\.{re.escape(kind)}", art.stages["ptx"]), f"{dtype} wgmma expected"
    f = facts(art)
    assert f["spills"] == 0 and f["local"] == 0, f
    if a_t or b_t:  # a transposed shared-memory view feeds wgmma directly: no shuffle through registers
        assert "convert_layout" not in art.stages["ttgir"]


@pytest.mark.parametrize("name", ["ws_cooperative", "ws_pingpong"])
def test_warp_specialized_roles_and_register_budgets(name):
    art = build(name)
    assert "ttg.warp_specialize" in art.stages["ttgir"]
    assert art.metadata.num_warps == 12
    tasks = sorted(art.metadata.tasks, key=lambda t: t["start_warp"])
    assert [t["num_warps"] for t in tasks] == [4, 4, 4]
    assert [t["registers"] for t in tasks] == [40, 232, 232]  # producer down, both consumers up
    assert {40, 232} <= set(facts(art)["maxnreg"])


def test_pingpong_named_barriers():
    ptx = build("ws_pingpong").stages["ptx"]
    # the hand-over: consumer 0 waits on 9 and arrives on 10, consumer 1 the other way round
    assert re.search(r"bar\.sync\s+9, 256;", ptx) and re.search(r"bar\.sync\s+10, 256;", ptx)
    assert re.search(r"bar\.arrive\s+9, 256;", ptx) and re.search(r"bar\.arrive\s+10, 256;", ptx)


def test_single_role_kernel_has_no_partitions():
    art = build("tma_pipelined")
    assert "ttg.warp_specialize" not in art.stages["ttgir"] and not facts(art)["maxnreg"]


def _index(name: str, **want) -> int:
    return next(i for i, c in enumerate(G.MODULES[name].CONFIGS) if all(c.get(k) == v for k, v in want.items()))


@pytest.mark.parametrize("split,bufs", [(2, 1), (4, 2)])
def test_subtiled_epilogue(split, bufs):
    """EPI_SPLIT column subtiles: free splits (no layout conversion), one TMA store each, and with two
    buffers each store waits only for the one before last."""
    art = build("ws_cooperative", _index("ws_cooperative", EPI_SPLIT=split, EPI_BUFS=bufs if bufs > 1 else None))
    ptx = art.stages["ptx"]
    assert "convert_layout" not in art.stages["ttgir"]
    assert art.stages["sass"].count("UTMASTG") == 2 * split  # two consumers
    assert re.search(rf"cp\.async\.bulk\.wait_group\.read\s+{bufs - 1};", ptx)


def test_warp_barrier_variant():
    """WARP_BAR: every consumer thread arrives on ``empty`` (2 x 128 arrivals), no warpgroup sync before it."""
    art = build("ws_cooperative", _index("ws_cooperative", WARP_BAR=True))
    assert re.search(r"mbarrier\.init\.shared::cta\.b64 \[%r\d+\], 256;", art.stages["ptx"])
    plain = build("ws_cooperative")
    assert not re.search(r"mbarrier\.init\.shared::cta\.b64 \[%r\d+\], 256;", plain.stages["ptx"])


def test_candidates_are_feasible_and_distinct():
    for name, mod in G.MODULES.items():
        cands = mod.candidates()
        names = [C.config_name(c) for c in cands]
        assert len(set(names)) == len(names), name
        assert [C.config_name(c) for c in mod.CONFIGS] == names[: len(mod.CONFIGS)], name
        if name != "triton_dot":
            for c in cands:
                C.check_config(c, mod.KIND)


def test_check_config_rejects():
    base = dict(G.MODULES["ws_cooperative"].DEFAULT)
    with pytest.raises(ValueError, match="shared memory"):
        C.check_config(dict(base, NUM_STAGES=5), "cooperative")
    with pytest.raises(ValueError, match="EPI_BUFS"):
        C.check_config(dict(base, EPI_SPLIT=1, EPI_BUFS=2), "cooperative")


def test_tile_order_covers_every_tile_once():
    def coords(t, npm, npn, g):  # tile_coords, replayed in Python
        in_group = g * npn
        first = (t // in_group) * g
        size = min(npm - first, g)
        return first + (t % in_group) % size, (t % in_group) // size

    for npm, npn, g in ((7, 5, 8), (64, 32, 8), (33, 17, 16)):
        seen = {coords(t, npm, npn, g) for t in range(npm * npn)}
        assert seen == {(m, n) for m in range(npm) for n in range(npn)}


def test_operand_views_and_padding():
    a = torch.empty(64, 32, dtype=torch.bfloat16)
    s, t = C.tma_operand(a)
    assert s is a and not t
    s, t = C.tma_operand(a.T)
    assert t and s.data_ptr() == a.data_ptr()
    ops = C.operands(*make(1000, 1500, 777, torch.bfloat16, False, False))  # K=777: row stride not 16-byte aligned
    assert ops.a.stride(0) % 8 == 0 and tuple(ops.a.shape) == (1000, 777) and not ops.a_t
    with pytest.raises(ValueError):
        C.check_operands(torch.empty(4, 5, dtype=torch.bfloat16), torch.empty(4, 5, dtype=torch.bfloat16))
    with pytest.raises(TypeError):
        C.check_operands(torch.empty(4, 5), torch.empty(5, 4))


@pytest.mark.parametrize("shape", [(1, 8, 8), (8, 1, 16), (17, 33, 1), (1, 1, 1), (64, 4096, 8192)])
def test_prepare_takes_tiny_and_skinny_shapes(shape):
    """Descriptors (checked by TensorDescriptor: 16-byte aligned strides) for vectors and single columns."""
    for name, mod in G.MODULES.items():
        for a_t, b_t in ((False, False), (True, True)):
            a, b = make(*shape, torch.bfloat16, a_t, b_t)
            prepared = mod.prepare(a, b)
            args, grid = prepared[-4], prepared[-2]
            assert [d.shape for d in args[:3]] and grid[0] >= 1, name


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("n", [16, 4096, 1000, 7, 1])
def test_new_out_is_what_empty_out_makes(n, dtype):
    """The public matmul allocates through new_out (a.new_empty unless the row needs padding): same shape, strides
    and dtype as empty_out, hence the same launch and the same cached plan."""
    a, b = torch.empty(33, 64, dtype=dtype), torch.empty(64, n, dtype=dtype)
    got, want = C.new_out(a, b), C.empty_out(33, n, dtype, "cpu")
    assert (got.shape, got.stride(), got.dtype, got.device) == (want.shape, want.stride(), want.dtype, want.device)
    assert (got.stride(0) * got.element_size()) % 16 == 0


def test_empty_problems_need_no_kernel():
    a, b = torch.ones(8, 0, dtype=torch.bfloat16), torch.ones(0, 16, dtype=torch.bfloat16)
    for mod in G.MODULES.values():
        out = C.empty_out(8, 16, torch.bfloat16, "cpu", fill=float("nan"))
        assert torch.equal(mod.launch(a, b, out=out), torch.zeros(8, 16, dtype=torch.bfloat16))
        none = mod.launch(torch.ones(0, 4, dtype=torch.bfloat16), torch.ones(4, 16, dtype=torch.bfloat16))
        assert none.shape == (0, 16)
        assert torch.equal(mod.matmul(a, b), torch.zeros(8, 16, dtype=torch.bfloat16))  # the public call: no tuning


def test_library_does_not_import_the_workbench():
    code = "import sys, tlx_kernels.gemm.walkthrough; print(sorted(m for m in sys.modules if 'workbench' in m))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
