"""On a GPU: every attention kernel against the fp32 reference (fresh random inputs, NaN-poisoned outputs).

Odd lengths (tails in Q and KV, S_q != S_kv), causal and not, bf16 and fp16, head dims 64 and 128, the
logsumexp, and the top-level ``attention()`` that tunes over the variants. Each case compiles its kernel
once (~2-5 s): about 35 compiles, 2-3 minutes on an H200 without the ``slow`` test (every TLX config,
~20 more compiles).
"""

from __future__ import annotations

import math
import zlib

import pytest

torch = pytest.importorskip("torch")

from tlx_kernels.attention.common import BENCH_SHAPES, LONG_SHAPES  # noqa: E402

GPU_TEST_LIMIT_S = 900  # the slow test compiles every TLX config (conftest's hang limit)
pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

VARIANTS = ["triton_baseline", "ws", "ws_pipelined", "ws_pingpong", "ws_persistent"]
# (B, H, S_q, S_kv, D, causal)
SHAPES = [
    (2, 3, 1000, 1000, 128, False),
    (2, 3, 1000, 1000, 128, True),
    (1, 4, 777, 1531, 64, False),
    (1, 4, 1531, 777, 64, True),
    (2, 2, 65, 200, 128, False),
    (1, 2, 4096, 4096, 128, True),
]


def inputs(B, H, S_q, S_kv, D, dtype, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    q = torch.randn(B, H, S_q, D, device="cuda", dtype=dtype, generator=g)
    k = torch.randn(B, H, S_kv, D, device="cuda", dtype=dtype, generator=g)
    v = torch.randn(B, H, S_kv, D, device="cuda", dtype=dtype, generator=g)
    return q, k, v


def poisoned(q):
    out = torch.full_like(q, float("nan"))
    lse = torch.full(q.shape[:3], float("nan"), device=q.device, dtype=torch.float32)
    return out, lse


def check(name, shape, dtype, config=None, seed=0):
    from tlx_kernels import attention as A

    B, H, S_q, S_kv, D, causal = shape
    q, k, v = inputs(B, H, S_q, S_kv, D, dtype, seed)
    out, lse = poisoned(q)
    A.MODULES[name].launch(q, k, v, causal, config, out=out, lse=lse)
    torch.cuda.synchronize()
    ref, ref_lse = A.reference(q, k, v, causal, with_lse=True)
    assert not torch.isnan(out).any(), "output rows left unwritten (NaN poison survived)"
    err = A.rel_err(out, ref)
    assert err < A.tolerance(dtype), f"{name} {shape} {dtype}: rel err {err:.3g}"
    assert torch.allclose(lse, ref_lse, atol=2e-3, rtol=1e-4), (lse - ref_lse).abs().max().item()


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s[:5])) + ("c" if s[5] else ""))
@pytest.mark.parametrize("name", VARIANTS)
def test_matches_reference_bf16(name, shape):
    check(name, shape, torch.bfloat16, seed=zlib.crc32(repr((name, shape)).encode()) % 1000)


@pytest.mark.parametrize("shape", [SHAPES[1], SHAPES[2]], ids=["d128c", "d64"])
@pytest.mark.parametrize("name", ["triton_baseline", "ws_pingpong", "ws_persistent"])
def test_matches_reference_fp16(name, shape):
    check(name, shape, torch.float16, seed=7)


def test_fresh_inputs_every_run():
    """Two runs on different inputs give different outputs, each right (no stale result passes)."""
    from tlx_kernels import attention as A

    outs = []
    for seed in (1, 2):
        q, k, v = inputs(1, 2, 300, 300, 128, torch.bfloat16, seed)
        outs.append(A.ws_persistent.launch(q, k, v, True))
        assert A.rel_err(outs[-1], A.reference(q, k, v, True)) < A.tolerance(torch.bfloat16)
    assert not torch.equal(outs[0], outs[1])


@pytest.mark.slow
def test_every_tlx_config_is_correct():
    """Every config (and trial config) of every TLX variant that fits the head dim, on one odd causal shape per
    head dim."""
    from tlx_kernels import attention as A
    from tlx_kernels.attention import common as C

    failures = []
    for D in (128, 64):
        shape = (1, 3, 1000, 1000, D, True)
        for name in A.TLX_MODULES:
            for cfg in C.configs_for(A.MODULES[name].CONFIGS + getattr(A.MODULES[name], "TRIALS", []), D):
                try:
                    check(name, shape, torch.bfloat16, config=cfg, seed=3)
                except AssertionError as e:
                    failures.append(f"{name} D{D} {C.config_name(cfg)}: {str(e).splitlines()[0]}")
    assert not failures, "\n".join(failures)


def test_top_level_attention_and_scale(monkeypatch):
    from tlx_kernels import attention as A

    monkeypatch.setattr(A, "CANDIDATES", [("ws_persistent", 2), ("triton_baseline", 1)])  # fewer compiles
    q, k, v = inputs(2, 4, 513, 513, 64, torch.bfloat16, 11)
    out, lse = A.attention(q, k, v, causal=True, sm_scale=0.3, return_lse=True)
    ref, ref_lse = A.reference(q, k, v, True, 0.3, with_lse=True)
    assert A.rel_err(out, ref) < A.tolerance(torch.bfloat16)
    assert torch.allclose(lse, ref_lse, atol=2e-3, rtol=1e-4)
    sdpa = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.3)
    assert A.rel_err(out, sdpa) < A.tolerance(torch.bfloat16)


def test_large_scores_stay_finite():
    """Scores of magnitude ~100 (scaled): exp2 must see s - max, never overflow."""
    from tlx_kernels import attention as A

    q, k, v = inputs(1, 2, 256, 384, 128, torch.bfloat16, 5)
    q = q * 8
    out = A.ws_persistent.launch(q, k, v, False)
    assert torch.isfinite(out).all()
    assert A.rel_err(out, A.reference(q, k, v, False)) < A.tolerance(torch.bfloat16)
    assert math.isfinite(A.rel_err(out, A.reference(q, k, v, False)))


def _bench_id(s):
    return f"B{s[0]}H{s[1]}S{s[2]}D{s[3]}" + ("c" if s[4] else "")


@pytest.mark.parametrize("shape", BENCH_SHAPES + LONG_SHAPES, ids=_bench_id)
def test_public_attention_matches_fp32_at_bench_shapes(shape, monkeypatch):
    """``attention(q, k, v, causal)`` as a user calls it (tuned, then launched from its plan), on the first and last
    head against the fp32 reference (a whole 32k problem's fp32 scores would take 128 GiB)."""
    from tlx_kernels import attention as A

    monkeypatch.setattr(A, "CANDIDATES", [("ws_persistent", 1), ("ws_pipelined", 1)])  # fewer compiles
    B, H, S, D, causal = shape
    q, k, v = inputs(B, H, S, S, D, torch.bfloat16, zlib.crc32(repr(shape).encode()) % 1000)
    first = A.attention(q, k, v, causal)  # tunes on this call
    # into NaN-poisoned outputs (a fresh one may reuse a tuning output): the general launch of this key, its plan
    out = A.attention(q, k, v, causal, out=torch.full_like(q, float("nan")))
    again = A.attention(q, k, v, causal, out=torch.full_like(q, float("nan")))
    assert torch.isfinite(out).all() and torch.equal(first, out)
    for b, h in {(0, 0), (B - 1, H - 1)}:
        sl = (slice(b, b + 1), slice(h, h + 1))
        err = A.rel_err(out[sl], A.reference(q[sl], k[sl], v[sl], causal))
        assert err < A.tolerance(torch.bfloat16), f"{shape} head ({b}, {h}): rel err {err:.3g}"
    assert torch.equal(out, again), "the repeated call computed something else"
