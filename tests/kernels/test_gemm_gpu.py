"""On a GPU: every GEMM of tlx_kernels.gemm against torch.matmul (rel err < 1e-2, NaN-poisoned output)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

SHAPES = [(1000, 1500, 777), (4096, 4096, 4096)]
MAJORS = [(False, False), (False, True), (True, False), (True, True)]


def operands(M, N, K, dtype, a_t, b_t, seed=0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    a = torch.randn(M, K, device="cuda", dtype=dtype, generator=g)
    b = torch.randn(K, N, device="cuda", dtype=dtype, generator=g)
    if a_t:
        a = a.T.contiguous().T  # column-major, same values
    if b_t:
        b = b.T.contiguous().T
    return a, b


@pytest.mark.parametrize("majors", MAJORS, ids=["rr", "rc", "cr", "cc"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("name", ["tma_pipelined", "ws_cooperative", "ws_pingpong", "triton_dot"])
def test_matches_torch(name, shape, dtype, majors):
    from tlx_kernels import gemm as G
    from tlx_kernels.gemm import common as C

    mod = G.MODULES[name]
    M, N, K = shape
    a, b = operands(M, N, K, dtype, *majors)
    out = C.empty_out(M, N, dtype, "cuda", fill=float("nan"))
    mod.launch(a, b, mod.DEFAULT, out=out)
    torch.cuda.synchronize()
    ref = torch.matmul(a, b)
    assert not torch.isnan(out).any(), "output left unwritten (NaN poison survived)"
    assert C.rel_err(out, ref) < 1e-2


@pytest.mark.parametrize("name", ["tma_pipelined", "ws_cooperative", "ws_pingpong"])
def test_every_config_is_correct(name):
    from tlx_kernels import gemm as G
    from tlx_kernels.gemm import common as C

    mod = G.MODULES[name]
    a, b = operands(1000, 1500, 777, torch.bfloat16, False, False, seed=1)
    ref = torch.matmul(a, b)
    for cfg in mod.CONFIGS:
        out = C.empty_out(1000, 1500, torch.bfloat16, "cuda", fill=float("nan"))
        mod.launch(a, b, cfg, out=out)
        torch.cuda.synchronize()
        assert C.rel_err(out, ref) < 1e-2, cfg


def test_pingpong_few_tiles_per_cta():
    # odd and even tile counts per CTA: the named-barrier hand-off must not deadlock or drop a tile
    from tlx_kernels.gemm import common as C
    from tlx_kernels.gemm import ws_pingpong as P

    for M, N in ((128, 128), (256, 128), (128 * 3, 128 * 67), (1000, 4000)):
        a, b = operands(M, N, 256, torch.bfloat16, False, False, seed=2)
        out = C.empty_out(M, N, torch.bfloat16, "cuda", fill=float("nan"))
        P.launch(a, b, P.DEFAULT, out=out)
        torch.cuda.synchronize()
        assert C.rel_err(out, torch.matmul(a, b)) < 1e-2, (M, N)


def test_matmul_tunes_and_matches():
    from tlx_kernels.gemm import common as C
    from tlx_kernels.gemm import ws_cooperative as W

    a, b = operands(2048, 2048, 2048, torch.bfloat16, False, False, seed=3)
    out = W.matmul(a, b)
    assert C.rel_err(out, torch.matmul(a, b)) < 1e-2


@pytest.mark.parametrize("name", ["tma_pipelined", "ws_cooperative", "ws_pingpong", "triton_dot"])
def test_repeat_launches_take_the_fast_path_and_stay_correct(name, monkeypatch):
    from tlx_kernels import gemm as G
    from tlx_kernels.gemm import common as C

    mod = G.MODULES[name]
    monkeypatch.delenv("TLX_KERNELS_NO_FASTLAUNCH", raising=False)
    M, N, K = 1000, 1504, 777
    for seed, majors in enumerate([(False, False), (False, False), (True, False), (True, False), (False, True)]):
        a, b = operands(M, N, K, torch.bfloat16, *majors, seed=10 + seed)
        out = C.empty_out(M, N, torch.bfloat16, "cuda", fill=float("nan"))
        mod.launch(a, b, mod.DEFAULT, out=out)
        fresh = mod.launch(a, b, mod.DEFAULT)  # out=None: a new output each call
        torch.cuda.synchronize()
        ref = torch.matmul(a, b)
        assert not torch.isnan(out).any()
        assert C.rel_err(out, ref) < 1e-2 and torch.equal(out, fresh), (seed, majors)
        monkeypatch.setenv("TLX_KERNELS_NO_FASTLAUNCH", "1")
        slow = mod.launch(a, b, mod.DEFAULT)
        monkeypatch.delenv("TLX_KERNELS_NO_FASTLAUNCH")
        torch.cuda.synchronize()
        assert torch.equal(out, slow), "fast and ordinary launch disagree"
    assert mod._launcher.plans, "no plan was kept"
