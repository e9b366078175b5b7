"""On a GPU: the cached launches of ``matmul``, ``attention`` and ``broadcast_linear`` (tlx_kernels.launch).

A repeated call must launch from its plan (the counters say so) and compute exactly what the general path
(``kernel[grid]``) computes, with new inputs and outputs every call; layouts that differ must never share a plan;
more pointer sets than a plan keeps stay right; the launch goes to the current torch stream; a launch hook or a
patched ``JITFunction.run`` (the ``%%tlx`` capture) takes the general path; ``graph=True`` replays into the
caller's buffers and follows in-place changes of the inputs. Results are checked against fp32 references.
"""

from __future__ import annotations

import itertools

import pytest

torch = pytest.importorskip("torch")

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

BF16 = torch.bfloat16
_seeds = itertools.count(2000)


def gemm_inputs(M, N, K, dtype=BF16, a_t=False, b_t=False):
    g = torch.Generator(device="cuda").manual_seed(next(_seeds))
    a = torch.randn(M, K, device="cuda", dtype=dtype, generator=g)
    b = torch.randn(K, N, device="cuda", dtype=dtype, generator=g)
    return (a.T.contiguous().T if a_t else a), (b.T.contiguous().T if b_t else b)


def gemm_err(out, a, b) -> float:
    """max |out - ref| / max |ref| against the fp32 product, over its bound (``fp32_tolerance``): < 1 is right."""
    from tlx_kernels.gemm.common import fp32_tolerance, rel_err

    return rel_err(out, a.float() @ b.float()) / fp32_tolerance(out.dtype)


def nan_out(M, N, dtype=BF16):
    from tlx_kernels.gemm.common import empty_out

    return empty_out(M, N, dtype, "cuda", fill=float("nan"))


@pytest.mark.parametrize("name", ["ws_cooperative", "ws_pingpong", "tma_pipelined", "triton_dot"])
def test_repeat_matmul_calls_launch_from_the_plan_and_match_the_general_launch(name):
    from tlx_kernels import gemm as G

    mod = G.MODULES[name]
    plans = mod._matmul.plans
    for i in range(4):
        a, b = gemm_inputs(1024, 768, 512)
        before = plans.counts["cached"]
        out = mod.matmul(a, b, config=mod.DEFAULT, out=nan_out(1024, 768) if i % 2 else None)
        assert gemm_err(out, a, b) < 1
        assert torch.equal(out, mod.launch(a, b, mod.DEFAULT)), "the plan computed something else"
        if i == 3:
            from tlx_kernels.gemm.calls import call_key

            reason = plans.reason(call_key(a, b, out, mod.DEFAULT))
            assert plans.counts["cached"] == before + 1 or reason, f"neither cached nor refused: {plans.counts}"


def test_layouts_never_share_a_plan():
    """Row/column-major operands, fp16, an odd shape and a misaligned one (copied for TMA: no plan), called in
    turn with fresh data: each call is right, so no call ran another layout's plan."""
    from tlx_kernels.gemm import ws_cooperative as W

    cases = [dict(M=1024, N=768, K=512), dict(M=1024, N=768, K=512, a_t=True), dict(M=1024, N=768, K=512, b_t=True),
             dict(M=1024, N=768, K=512, dtype=torch.float16), dict(M=1000, N=1000, K=1000),
             dict(M=1000, N=1500, K=777), dict(M=768, N=1024, K=512)]
    cached = W._matmul.plans.counts["cached"]
    for _round in range(3):
        for case in cases:
            a, b = gemm_inputs(**case)
            out = W.matmul(a, b, config=W.DEFAULT)
            assert gemm_err(out, a, b) < 1, case
    assert W._matmul.plans.counts["cached"] >= cached + 2 * (len(cases) - 1)


def test_more_pointer_sets_than_a_plan_keeps_stay_right():
    from tlx_kernels import launch as L
    from tlx_kernels.gemm import ws_cooperative as W

    keep = [gemm_inputs(512, 512, 512) for _ in range(2 * L.MAX_POINTER_SETS + 3)]  # alive: distinct addresses
    for _round in range(2):
        for a, b in keep:
            out = W.matmul(a, b, config=W.DEFAULT, out=nan_out(512, 512))
            assert gemm_err(out, a, b) < 1


def test_cached_launches_go_to_the_current_stream():
    """Queued behind a long sleep on a side stream, the product must not exist before that stream gets to it."""
    from tlx_kernels.gemm import ws_cooperative as W

    a, b = gemm_inputs(1024, 1024, 1024)
    W.matmul(a, b, config=W.DEFAULT, out=nan_out(1024, 1024))  # plan it (a call with an output buffer)
    out = nan_out(1024, 1024)
    side = torch.cuda.Stream()
    torch.cuda.synchronize()
    with torch.cuda.stream(side):
        torch.cuda._sleep(2_000_000_000)  # ~1 s of GPU clock cycles
        before = W._matmul.plans.counts["cached"]
        W.matmul(a, b, config=W.DEFAULT, out=out)
        assert W._matmul.plans.counts["cached"] == before + 1
    torch.cuda.default_stream().synchronize()
    assert not side.query(), "the sleep ended before the check: the test proves nothing"
    assert torch.isnan(out).all(), "the cached launch ran on another stream than the current one"
    side.synchronize()
    assert gemm_err(out, a, b) < 1


def test_a_launch_hook_or_a_patched_run_takes_the_general_path():
    from tlx_kernels.gemm import ws_cooperative as W
    from triton import knobs
    from triton.runtime.jit import JITFunction

    a, b = gemm_inputs(1024, 512, 512)
    W.matmul(a, b, config=W.DEFAULT)
    seen = []
    knobs.runtime.launch_enter_hook.add(seen.append)
    try:
        cached = W._matmul.plans.counts["cached"]
        out = W.matmul(a, b, config=W.DEFAULT)
        assert W._matmul.plans.counts["cached"] == cached and len(seen) == 1, "a listening hook was bypassed"
    finally:
        knobs.runtime.launch_enter_hook.remove(seen.append)
    assert gemm_err(out, a, b) < 1
    orig, calls = JITFunction.run, []

    def run(self, *args, **kwargs):  # marked as the %%tlx capture marks its patch (workbench.run.launch_patches)
        calls.append(self)
        return orig(self, *args, **kwargs)

    run.__wrapped__ = orig
    JITFunction.run = run
    try:
        for _ in range(2):  # the second call must not be planned by the first
            out = W.matmul(a, b, config=W.DEFAULT)
            assert gemm_err(out, a, b) < 1
    finally:
        JITFunction.run = orig
    assert calls == [W.kernel, W.kernel], "a patched JITFunction.run (the %%tlx capture) was bypassed"
    cached = W._matmul.plans.counts["cached"]
    W.matmul(a, b, config=W.DEFAULT)
    assert W._matmul.plans.counts["cached"] == cached + 1, "the plan is not used again once the patches are gone"


def test_graph_replays_into_out_and_follows_in_place_input_changes():
    from tlx_kernels.gemm import ws_cooperative as W

    a, b = gemm_inputs(2048, 1024, 512)
    out = nan_out(2048, 1024)
    assert W.matmul(a, b, out=out, graph=True) is out
    assert gemm_err(out, a, b) < 1
    for _ in range(2):
        a2, b2 = gemm_inputs(2048, 1024, 512)
        a.copy_(a2)
        b.copy_(b2)
        out.fill_(float("nan"))
        W.matmul(a, b, out=out, graph=True)  # replay
        assert gemm_err(out, a2, b2) < 1
    other = nan_out(2048, 1024)
    W.matmul(a, b, out=other, graph=True)  # another output: another graph
    assert torch.equal(other, out)


def attention_inputs(B, H, S_q, S_kv, D, dtype=BF16):
    g = torch.Generator(device="cuda").manual_seed(next(_seeds))
    return tuple(torch.randn(B, H, S, D, device="cuda", dtype=dtype, generator=g) for S in (S_q, S_kv, S_kv))


@pytest.mark.parametrize("causal", [False, True])
def test_repeat_attention_calls_launch_from_the_plan(causal):
    from tlx_kernels import attention as A

    mod = A.ws_pipelined
    plans = mod.attention.plans
    for i in range(4):  # calls 0 and 2 are the first of their keys (no out, out): 1 and 3 replay their plans
        q, k, v = attention_inputs(2, 4, 1024, 1024, 128)
        before = plans.counts["cached"]
        out = mod.attention(q, k, v, causal, out=torch.full_like(q, float("nan")) if i >= 2 else None)
        assert A.rel_err(out, A.reference(q, k, v, causal)) < A.tolerance(BF16)
        if i % 2:
            assert plans.counts["cached"] == before + 1, plans.counts


def test_top_level_attention_with_lse_is_cached_and_right(monkeypatch):
    from tlx_kernels import attention as A

    monkeypatch.setattr(A, "CANDIDATES", [("ws_persistent", 2), ("ws_pingpong", 1)])  # fewer compiles
    plans = A._attention.plans
    for i in range(3):
        q, k, v = attention_inputs(2, 4, 768, 1280, 64)
        before = plans.counts["cached"]
        out, lse = A.attention(q, k, v, True, sm_scale=0.2, return_lse=True)
        ref, ref_lse = A.reference(q, k, v, True, 0.2, with_lse=True)
        assert A.rel_err(out, ref) < A.tolerance(BF16)
        assert torch.allclose(lse, ref_lse, atol=2e-3, rtol=1e-4)
        if i:
            assert plans.counts["cached"] == before + 1, plans.counts


def test_a_padded_attention_output_is_never_planned():
    """S_q = 1000: the kernel writes a padded buffer that is copied out; a plan would skip the copy."""
    from tlx_kernels import attention as A
    from tlx_kernels.attention.calls import call_key

    for _ in range(2):
        q, k, v = attention_inputs(1, 2, 1000, 1000, 128)
        out = A.ws_pipelined.attention(q, k, v, False)
        assert A.rel_err(out, A.reference(q, k, v, False)) < A.tolerance(BF16)
    assert "copy" in A.ws_pipelined.attention.plans.reason(call_key(q, k, v, False, None, None, None, False))


def test_attention_graph_replays():
    from tlx_kernels import attention as A

    q, k, v = attention_inputs(2, 4, 1024, 1024, 128)
    out = torch.full_like(q, float("nan"))
    A.ws_pipelined.attention(q, k, v, True, out=out, graph=True)
    q2, k2, v2 = attention_inputs(2, 4, 1024, 1024, 128)
    for t, new in ((q, q2), (k, k2), (v, v2)):
        t.copy_(new)
    out.fill_(float("nan"))
    A.ws_pipelined.attention(q, k, v, True, out=out, graph=True)
    assert A.rel_err(out, A.reference(q2, k2, v2, True)) < A.tolerance(BF16)


def test_broadcast_graph_replays():
    from tlx_kernels import broadcast as BC

    s = {x.name: x for x in BC.TEST_SHAPES}["realistic"]
    U, X, W, b = BC.make_inputs(s.B, s.C, s.DU, s.DX, s.N, bias=s.bias, seed=5)
    out = BC.empty_out(s.B, s.C, s.N, U.dtype, "cuda", fill=float("nan"))
    BC.broadcast_linear(U, X, W, b, s.act, config=BC.DEFAULT, out=out, graph=True)
    U2, X2, W2, b2 = BC.make_inputs(s.B, s.C, s.DU, s.DX, s.N, bias=s.bias, seed=6)
    for t, new in ((U, U2), (X, X2), (W, W2)) + (((b, b2),) if b is not None else ()):
        t.copy_(new)
    out.fill_(float("nan"))
    BC.broadcast_linear(U, X, W, b, s.act, config=BC.DEFAULT, out=out, graph=True)
    assert BC.rel_err(out, BC.reference(U2, X2, W2, b2, s.act)) < 1e-2
