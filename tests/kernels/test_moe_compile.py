"""Compile-only (CPU, sm_90, down to SASS) checks of the grouped GEMMs in tlx_kernels.moe, and their host side.

Every variant (TLX warp-specialized, plain Triton) x product (forward, dx, dw) x config compiles at a shape that
is no multiple of any tile, fits in shared memory and does not spill; the TMA descriptors are built on the device
(``tensormap.replace`` and the tensormap proxy fences in PTX, one global scratch slot per descriptor call site:
a consumer replica has its own); the TLX kernel shows its roles and register budgets, keeps one wgmma group in
flight in its K loop, and its orchestration has no error or warning from ``workbench.check``.
"""

from __future__ import annotations

import functools
import re

import pytest

torch = pytest.importorskip("torch")

from compile_facts import facts  # noqa: E402
from tlx_kernels.gemm import common as GC  # noqa: E402
from tlx_kernels.moe import calls, routing  # noqa: E402
from tlx_kernels.moe import problem as P  # noqa: E402
from tlx_kernels.moe import ws_cooperative as WS  # noqa: E402
from tlx_kernels.moe.calls import VARIANTS  # noqa: E402

from workbench.check import check_artifact  # noqa: E402
from workbench.compile import compile as wb_compile  # noqa: E402

T, K, N = 3000, 776, 1000  # K, N multiples of 8 (TMA rows), of no tile
COUNTS = [0, 700, 1, 0, 1200, 98, 901, 0]  # 2900 of 3000 tokens routed; empty experts first, in the middle, last
KINDS = ("fwd", "dx", "dw")
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


def operands(kind: str, dtype=torch.bfloat16):
    E = len(COUNTS)
    x, dy = torch.empty(T, K, dtype=dtype), torch.empty(T, N, dtype=dtype)
    w = torch.empty(E, K, N, dtype=dtype)
    a, b = {"fwd": (x, w), "dx": (dy, w), "dw": (x, dy)}[kind]
    return a, b, routing.offsets_of(COUNTS)


@functools.cache
def launch_of(variant: str, kind: str, index: int = 0, dtype: str = "bf16"):
    p = P.problem(kind, *operands(kind, DTYPES[dtype]))
    return calls.prepare(p, variant, VARIANTS[variant].CONFIGS[index])


@functools.cache
def build(variant: str, kind: str, index: int = 0, dtype: str = "bf16"):
    kernel, args, kwargs, _grid = launch_of(variant, kind, index, dtype)
    return wb_compile(kernel, *args, target="sm_90", **kwargs)


def _line_of(text: str) -> int:
    """The line of ``text`` in the TLX kernel's source (once there)."""
    lines = [i for i, line in enumerate(open(WS.__file__).read().splitlines(), 1) if text in line]
    assert len(lines) == 1, lines
    return lines[0]


def _wait0_lines(ptx: str) -> list[int]:
    """The kernel-source lines of the PTX's ``wgmma.wait_group 0``: the ``.loc`` before the inline-asm block that
    holds each (inside the block, a ``.loc`` of the next statement may precede the instruction)."""
    out, loc, block_loc = [], None, None
    for line in ptx.splitlines():
        m = re.search(r"ws_cooperative\.py:(\d+):\d+", line) if line.lstrip().startswith(".loc") else None
        if m:
            loc = int(m.group(1))
        elif "// begin inline asm" in line:
            block_loc = loc
        elif re.search(r"wgmma\.wait_group\.sync\.aligned\s+0;", line):
            out.append(block_loc)
    return out


CASES = [(v, k, i) for v in VARIANTS for k in KINDS for i in range(len(VARIANTS[v].CONFIGS))]


@pytest.mark.parametrize("variant,kind,index", CASES,
                         ids=[f"{v}-{k}-{GC.config_name(VARIANTS[v].CONFIGS[i])}" for v, k, i in CASES])
def test_every_variant_product_and_config_compiles_fits_and_does_not_spill(variant, kind, index):
    art = build(variant, kind, index)
    f = facts(art)
    ptx = art.stages["ptx"]
    assert "wgmma.mma_async" in ptx and f["hgmma"] > 0
    assert "cp.async.bulk.tensor" in ptx  # TMA loads (and stores)
    # descriptors written on the device and fenced for the TMA unit, one scratch slot per call site
    assert "tensormap.replace.tile.global_address" in ptx and "fence.proxy.tensormap::generic.acquire" in ptx
    assert f["scratch"] == (4 if variant == "ws_cooperative" else 3), f  # A, B, C (the TLX kernel: C per consumer)
    assert f["spills"] == 0 and f["local"] == 0, f
    assert f["smem"] <= GC.SMEM_LIMIT, f
    if variant == "ws_cooperative":
        cfg = VARIANTS[variant].CONFIGS[index]
        # the ring, epilogue and barriers (the dense cooperative GEMM's estimate) plus a 128-byte staging buffer per
        # descriptor call site, where Triton writes a descriptor before copying it to global memory
        assert f["smem"] <= GC.smem_bytes(cfg, WS.KIND) + 4 * 128, (f, "estimate too low")
        assert "mbarrier.try_wait" in ptx
        # each consumer's K loop keeps one wgmma group in flight; wait(0) only drains a tile, at the kernel's one
        # wait(0) line (LLVM may copy it onto the path where a tile has no K step)
        assert f["waits"].count("1") == 2, f["waits"]
        assert set(_wait0_lines(ptx)) == {_line_of("acc = tlx.async_dot_wait(0, acc)")}, _wait0_lines(ptx)


@pytest.mark.parametrize("kind", KINDS)
def test_tlx_roles_and_register_budgets(kind):
    art = build("ws_cooperative", kind)
    assert "ttg.warp_specialize" in art.stages["ttgir"]
    assert art.metadata.num_warps == 12
    tasks = sorted(art.metadata.tasks, key=lambda t: t["start_warp"])
    assert [t["num_warps"] for t in tasks] == [4, 4, 4]
    assert [t["registers"] for t in tasks] == [40, 232, 232]  # producer down, both consumers up


@pytest.mark.parametrize("kind", KINDS)
def test_operand_views(kind):
    """dx reads w[e] transposed and dw reads x transposed: the shared-memory views feed wgmma directly (no shuffle
    through registers); the plain kernel's transposes are free too."""
    for variant in VARIANTS:
        assert "convert_layout" not in build(variant, kind).stages["ttgir"], variant


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_fp16(variant):
    art = build(variant, "fwd", 0, "fp16")
    assert re.search(r"wgmma\.mma_async\S*\.f32\.f16\.f16", art.stages["ptx"])
    assert facts(art)["spills"] == 0


@pytest.mark.parametrize("variant,kind", [(v, k) for v in VARIANTS for k in KINDS])
def test_static_orchestration_checks_are_clean(variant, kind):
    """No error or warning from workbench.check. The simulated run cannot follow the tile loop past its first
    group: the schedule reads ``offsets`` on the device, values the checks do not have (an info finding says so);
    the model checks (waits nothing completes, expect-bytes against the copies, arrive counts, unwritten buffers,
    shared memory, registers, narrowing stores) cover the whole kernel."""
    kernel, args, kwargs, grid = launch_of(variant, kind)
    findings = check_artifact(build(variant, kind), kernel, *args, grid=tuple(grid), strict=True, **kwargs)
    assert [str(f) for f in findings if f.severity != "info"] == []


def test_problems_and_their_errors():
    x, w, offsets = operands("fwd")
    p = P.forward(x, w, offsets)
    assert (p.E, p.T, p.N, p.K, p.ragged_k, p.b_t) == (8, T, N, K, False, False) and p.c.shape == (T, N)
    p = P.backward_dx(torch.empty(T, N, dtype=torch.bfloat16), w, offsets)
    assert (p.N, p.K, p.b_t) == (K, N, True) and p.c.shape == (T, K)
    p = P.backward_dw(x, torch.empty(T, N, dtype=torch.bfloat16), offsets)
    assert (p.M, p.N, p.ragged_k) == (K, N, True) and p.c.shape == (8, K, N)
    assert p.max_tiles(128, 256) == 8 * 7 * 4 and P.forward(x, w, offsets).max_tiles(128, 256) == (24 + 8) * 4
    with pytest.raises(ValueError, match="x \\[T, K\\], w \\[E, K, N\\]"):
        P.forward(x, w[:, :8], offsets)
    with pytest.raises(ValueError, match="multiple of 8"):
        P.forward(torch.empty(4, 12, dtype=torch.bfloat16), torch.empty(8, 12, 16, dtype=torch.bfloat16), offsets)
    with pytest.raises(TypeError, match="bf16 or all fp16"):
        P.forward(x.float(), w, offsets)
    with pytest.raises(ValueError, match="int32"):
        P.forward(x, w, offsets.long())
    with pytest.raises(ValueError, match="contiguous"):
        P.forward(x, w.transpose(1, 2).contiguous().transpose(1, 2), offsets)
    with pytest.raises(ValueError, match="out must be"):
        P.forward(x, w, offsets, out=torch.empty(T, N + 8, dtype=torch.bfloat16))
    with pytest.raises(ValueError, match="BM=128"):
        calls.check_config("ws_cooperative", dict(WS.DEFAULT, BM=64))


def test_empty_problems_need_no_kernel():
    """No tokens, no experts' work: answered on the host (on a CPU too): dw is zeros, an empty output is empty."""
    x, dy = torch.empty(0, 64, dtype=torch.bfloat16), torch.empty(0, 32, dtype=torch.bfloat16)
    offsets = torch.zeros(4, dtype=torch.int32)
    dw = calls.launch("dw", x, dy, offsets, out=torch.full((4, 64, 32), float("nan"), dtype=torch.bfloat16))
    assert torch.equal(dw, torch.zeros(4, 64, 32, dtype=torch.bfloat16))
    assert calls.launch("fwd", x, torch.empty(4, 64, 32, dtype=torch.bfloat16), offsets).shape == (0, 32)
    assert calls.grouped_mm_dw(x, dy, offsets).abs().sum() == 0  # the public call: no tuning, no GPU


def test_grid_is_persistent():
    for kind in KINDS:
        _k, _a, _kw, grid = launch_of("ws_cooperative", kind)
        assert grid == (min(132, P.problem(kind, *operands(kind)).max_tiles(128, 256)),)


def test_routing():
    for E in (8, 32, 256):
        for r in routing.ROUTINGS:
            c = routing.counts(16384, E, r)
            assert len(c) == E and sum(c) == 16384 and min(c) >= 0
    skew = routing.counts(16384, 8, "skewed")
    assert max(skew) > 2.5 * 16384 / 8, "skewed routing should load one expert far above the mean"
    assert routing.offsets_of([3, 0, 5]).tolist() == [3, 3, 8]
    assert routing.parse_shape("32x7168x4096x16384:skewed") == routing.Shape("custom", 32, 7168, 4096, 16384, "skewed")


@pytest.mark.parametrize("kind", KINDS)
def test_trials_compile_clean_with_the_release_only_path(kind):
    """``TRIALS`` (``SKIP_EMPTY_HALF``: a consumer whose half of the tile is past the group's rows releases each slot
    without a wgmma) compile as the configs they extend do, and add that path: more mbarrier waits, the same
    wgmmas; the static checks stay clean. They run on a GPU in test_moe_gpu.py before CONFIGS takes them."""
    a, b, offsets = operands(kind)
    for index, cfg in enumerate(WS.TRIALS):
        assert cfg == dict(WS.CONFIGS[index], SKIP_EMPTY_HALF=True)
        kernel, args, kwargs, grid = calls.prepare(P.problem(kind, a, b, offsets), "ws_cooperative", cfg)
        art, base = wb_compile(kernel, *args, target="sm_90", **kwargs), build("ws_cooperative", kind, index)
        f, was = facts(art), facts(base)
        assert f["spills"] == 0 and f["local"] == 0 and f["smem"] == was["smem"] <= GC.SMEM_LIMIT, (cfg, f)
        assert f["hgmma"] == was["hgmma"], cfg
        waits = [x.stages["ptx"].count("mbarrier.try_wait") for x in (art, base)]
        assert waits[0] > waits[1], (cfg, waits)
        findings = check_artifact(art, kernel, *args, grid=tuple(grid), **kwargs)
        assert not [x for x in findings if x.severity in ("error", "warning")], [str(x) for x in findings]


def test_the_arrival_wait_is_an_acquire_then_the_async_proxy_fence_and_only_when_asked():
    """WAIT_FLAGS: the producer's wait on an expert's flag is a system-scope acquire, then fence.proxy.async.global
    before its TMA copies; the plain kernel (the default) has neither, and the waiting one spills nothing and gets
    no error or warning from the static checks."""
    from workbench.compile import compile as wb_compile

    kernel, args, kwargs, _grid = launch_of("ws_cooperative", "fwd")
    flags = torch.zeros(args[4], dtype=torch.int32)
    art = wb_compile(kernel, *args, target="sm_90", **kwargs, flags=flags, flag_target=2, WAIT_FLAGS=True)
    ptx = art.stages["ptx"]
    acquire = ptx.index("ld.global.sys.acquire")
    assert acquire < ptx.index("fence.proxy.async.global;") < ptx.index("cp.async.bulk.tensor", acquire)
    plain = build("ws_cooperative", "fwd").stages["ptx"]
    assert "sys.acquire" not in plain and "fence.proxy.async.global" not in plain
    assert art.metadata.spills == 0
    kw = dict(kwargs, flags=flags, flag_target=2, WAIT_FLAGS=True)
    findings = check_artifact(art, kernel, *args, grid=tuple(_grid), strict=True, **kw)
    assert [str(f) for f in findings if f.severity != "info"] == []
