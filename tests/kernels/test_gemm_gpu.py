"""On a GPU: every GEMM of tlx_kernels.gemm against torch.matmul (rel err < 1e-2, NaN-poisoned outputs,
fresh random inputs per test), and the public ``matmul`` (tuned config, cached launches) against an fp32 product
at every benchmark shape and at odd sizes."""

from __future__ import annotations

import itertools

import pytest

torch = pytest.importorskip("torch")

from tlx_kernels.gemm.common import BENCH_SHAPES, ODD_SHAPES, fp32_tolerance  # noqa: E402

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

MAJORS = [(False, False), (False, True), (True, False), (True, True)]
KERNELS = ["tma_pipelined", "ws_cooperative", "ws_pingpong", "triton_dot"]
_seeds = itertools.count(1000)


def operands(M, N, K, dtype, a_t=False, b_t=False):
    """Fresh random operands (a new seed every call); column-major ones hold the same values."""
    g = torch.Generator(device="cuda").manual_seed(next(_seeds))
    a = torch.randn(M, K, device="cuda", dtype=dtype, generator=g)
    b = torch.randn(K, N, device="cuda", dtype=dtype, generator=g)
    if a_t:
        a = a.T.contiguous().T
    if b_t:
        b = b.T.contiguous().T
    return a, b


def check(mod, a, b, cfg=None):
    from tlx_kernels.gemm import common as C

    M, N = a.shape[0], b.shape[1]
    out = C.empty_out(M, N, a.dtype, "cuda", fill=float("nan"))
    mod.launch(a, b, cfg or mod.DEFAULT, out=out)
    torch.cuda.synchronize()
    assert not torch.isnan(out).any(), "output left unwritten (NaN poison survived)"
    err = C.rel_err(out, torch.matmul(a, b))
    assert err < 1e-2, err


# every dtype and majorness at the odd shape; the large shape in bf16 row-major and fp16 column-major
CASES = [((1000, 1500, 777), d, m) for d in ("bf16", "fp16") for m in MAJORS]
CASES += [((4096, 4096, 4096), "bf16", (False, False)), ((4096, 4096, 4096), "fp16", (True, True))]
IDS = ["x".join(map(str, s)) + f"-{d}-{'rc'[m[0]]}{'rc'[m[1]]}" for s, d, m in CASES]


@pytest.mark.parametrize("shape,dtype,majors", CASES, ids=IDS)
@pytest.mark.parametrize("name", KERNELS)
def test_matches_torch(name, shape, dtype, majors):
    from tlx_kernels import gemm as G

    dt = {"bf16": torch.bfloat16, "fp16": torch.float16}[dtype]
    check(G.MODULES[name], *operands(*shape, dt, *majors))


@pytest.mark.parametrize("name", KERNELS)
def test_every_config_is_correct(name):
    """Every config at an odd shape and at one with 1-3 tiles per CTA (persistent kernels loop)."""
    from tlx_kernels import gemm as G

    mod = G.MODULES[name]
    for shape in ((1000, 1500, 777), (2304, 2048, 512)):
        a, b = operands(*shape, torch.bfloat16)
        for cfg in mod.CONFIGS:
            check(mod, a, b, cfg)


def test_pingpong_few_tiles_per_cta():
    """Odd and even tile counts per CTA, and CTAs whose second consumer has no tile: the named-barrier
    hand-over must neither deadlock nor drop a tile."""
    from tlx_kernels.gemm import ws_pingpong as P

    for M, N in ((128, 128), (256, 128), (128 * 3, 128 * 67), (1000, 4000), (128, 128 * 133)):
        check(P, *operands(M, N, 256, torch.bfloat16))


def test_tiny_and_skinny_shapes():
    from tlx_kernels import gemm as G

    for name in KERNELS:
        for M, N, K in ((1, 8, 8), (8, 1, 16), (17, 33, 1), (64, 4096, 8192)):
            check(G.MODULES[name], *operands(M, N, K, torch.bfloat16))


def test_matmul_tunes_and_matches():
    from tlx_kernels.gemm import common as C
    from tlx_kernels.gemm import ws_cooperative as W

    a, b = operands(2048, 2048, 2048, torch.bfloat16)
    out = W.matmul(a, b)
    assert C.rel_err(out, torch.matmul(a, b)) < 1e-2
    key = C.problem_key(a, b)
    assert key in W._tuner.cache and len(W._tuner.timings[key]) >= 2


def test_repeated_launches_agree():
    """Launching the same problem twice (new outputs) gives bitwise equal results: no state leaks between launches."""
    from tlx_kernels import gemm as G

    a, b = operands(1000, 1504, 776, torch.bfloat16)
    for name in KERNELS:
        mod = G.MODULES[name]
        x, y = mod.launch(a, b), mod.launch(a, b)
        torch.cuda.synchronize()
        assert torch.equal(x, y), name


def _shape_id(s):
    return "x".join(map(str, s))


def _public_matmul_matches_fp32(name, shape, dtype):
    from tlx_kernels import gemm as G
    from tlx_kernels.gemm import common as C

    a, b = operands(*shape, dtype)
    mod = G.MODULES[name]
    first = mod.matmul(a, b)  # as a user calls it: tuned for this problem on this call, a new output
    # into NaN-poisoned outputs (a fresh one may reuse the tuner's scratch, which holds the product): the general
    # launch of this key, then its plan (when the layouts allow one)
    out = mod.matmul(a, b, out=C.empty_out(*first.shape, dtype, "cuda", fill=float("nan")))
    again = mod.matmul(a, b, out=C.empty_out(*first.shape, dtype, "cuda", fill=float("nan")))
    assert torch.equal(first, out)
    err = G.rel_err(out, a.float() @ b.float())
    assert err < fp32_tolerance(dtype), f"{name} {shape}: max rel err {err:.3g} against fp32"
    assert torch.equal(out, again), "the repeated call computed something else"


@pytest.mark.parametrize("shape", BENCH_SHAPES + ODD_SHAPES, ids=_shape_id)
@pytest.mark.parametrize("name", KERNELS)
def test_public_matmul_matches_fp32(name, shape):
    _public_matmul_matches_fp32(name, shape, torch.bfloat16)


@pytest.mark.parametrize("shape", [(4095, 4095, 4095), (2048, 2048, 16384)], ids=_shape_id)
@pytest.mark.parametrize("name", ["ws_cooperative", "ws_pingpong"])
def test_public_matmul_matches_fp32_fp16(name, shape):
    _public_matmul_matches_fp32(name, shape, torch.float16)
