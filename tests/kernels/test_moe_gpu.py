"""On a GPU: every grouped GEMM of tlx_kernels.moe (TLX warp-specialized, plain Triton), the forward and both
backward products, against a loop of torch.matmul in fp32, into NaN-poisoned outputs, fresh random inputs per test.

Tolerance (``fp32_tolerance``): max |out - ref| / max |ref| < 5e-3 for bf16 (rounding the output to bf16 moves an
element by up to 2^-8 of itself; fp32 summation order adds ~1e-6), 1e-3 for fp16. Cases: ragged counts (no
multiple of any tile), empty experts first, in the middle and last, one expert, all empty, tokens past the last
expert (rows left untouched), 256 experts of a few tokens each, and DeepSeek-V3- and Mixtral-like layers with
skewed routing; every config of each variant; the public calls (tuned) and torch._grouped_mm agree.
"""

from __future__ import annotations

import itertools

import pytest

torch = pytest.importorskip("torch")

from tlx_kernels.accuracy import rel_err  # noqa: E402
from tlx_kernels.gemm.common import fp32_tolerance  # noqa: E402
from tlx_kernels.moe import calls, routing  # noqa: E402
from tlx_kernels.moe.reference import covered_rows, reference  # noqa: E402

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

VARIANTS = list(calls.VARIANTS)
KINDS = ("fwd", "dx", "dw")
COUNTS = {
    "ragged": [1000, 37, 1301, 1, 129],
    "empty-first-middle-last": [0, 500, 0, 700, 0],
    "single": [2049],
    "all-empty": [0, 0, 0],
    "many-small": routing.counts(4096, 256, "skewed"),
}
K, N = 776, 1000  # multiples of 8 (TMA), of no tile
_seeds = itertools.count(2000)


def operands(kind, counts, K_=K, N_=N, dtype=torch.bfloat16, extra_rows=0):
    g = torch.Generator(device="cuda").manual_seed(next(_seeds))
    T, E = sum(counts) + extra_rows, len(counts)
    x = torch.randn(T, K_, device="cuda", dtype=dtype, generator=g)
    w = torch.randn(E, K_, N_, device="cuda", dtype=dtype, generator=g) / K_ ** 0.5
    dy = torch.randn(T, N_, device="cuda", dtype=dtype, generator=g)
    a, b = {"fwd": (x, w), "dx": (dy, w), "dw": (x, dy)}[kind]
    return a, b, routing.offsets_of(counts, "cuda")


def poisoned(kind, a, b, offsets):
    shape = {"fwd": lambda: (a.shape[0], b.shape[2]), "dx": lambda: (a.shape[0], b.shape[1]),
             "dw": lambda: (offsets.shape[0], a.shape[1], b.shape[1])}[kind]()
    return torch.full(shape, float("nan"), device="cuda", dtype=a.dtype)


def check(kind, a, b, offsets, out):
    torch.cuda.synchronize()
    ref = reference(kind, a, b, offsets)
    if kind != "dw":
        rows = covered_rows(offsets)
        assert torch.isnan(out[rows:]).all(), "a row past the last expert was written"
        out, ref = out[:rows], ref[:rows]
    assert not torch.isnan(out).any(), "output left unwritten (NaN poison survived)"
    if ref.numel():
        err = rel_err(out, ref)
        assert err < fp32_tolerance(a.dtype), f"{kind}: max rel err {err:.3g} against fp32"


@pytest.mark.parametrize("name", list(COUNTS))
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("variant", VARIANTS)
def test_matches_a_loop_of_matmuls(variant, kind, name):
    a, b, offsets = operands(kind, COUNTS[name], extra_rows=17)
    out = calls.launch(kind, a, b, offsets, variant, out=poisoned(kind, a, b, offsets))
    check(kind, a, b, offsets, out)
    if kind == "dw":
        for e, c in enumerate(COUNTS[name]):
            if c == 0:
                assert not out[e].any(), f"expert {e} has no tokens: its dw must be zeros"


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_config_is_correct(variant):
    """Every config, forward and dw (ragged rows, ragged reduction), groups smaller and larger than a tile, and
    several tiles per CTA (the persistent loop and the ring across groups)."""
    for cfg in calls.VARIANTS[variant].CONFIGS:
        for kind in ("fwd", "dx", "dw"):
            a, b, offsets = operands(kind, [0, 3000, 130, 0, 5000, 1], K_=1024, N_=2048)
            check(kind, a, b, offsets, calls.launch(kind, a, b, offsets, variant, cfg, poisoned(kind, a, b, offsets)))


@pytest.mark.parametrize("kind", KINDS)
def test_trials_are_correct(kind):
    """The TLX kernel's TRIALS (SKIP_EMPTY_HALF: a consumer whose half of the tile is past the group's rows
    issues no wgmma): groups of 64 rows and fewer, of 65, and last row tiles with 1 to 64 rows left."""
    from tlx_kernels.moe import ws_cooperative as WS

    counts = [0, 64, 65, 1, 129, 300, 0, 40, 222]
    for cfg in WS.TRIALS:
        a, b, offsets = operands(kind, counts, K_=1024, N_=2048, extra_rows=5)
        out = calls.launch(kind, a, b, offsets, "ws_cooperative", cfg, poisoned(kind, a, b, offsets))
        check(kind, a, b, offsets, out)


@pytest.mark.parametrize("dtype", [torch.float16], ids=["fp16"])
@pytest.mark.parametrize("variant", VARIANTS)
def test_fp16(variant, dtype):
    for kind in KINDS:
        a, b, offsets = operands(kind, COUNTS["ragged"], dtype=dtype)
        check(kind, a, b, offsets, calls.launch(kind, a, b, offsets, variant, out=poisoned(kind, a, b, offsets)))


MODEL = [routing.Shape("dsv3-up", 32, 7168, 4096, 16384, "skewed"),
         routing.Shape("mixtral-down", 8, 3584, 4096, 16384, "skewed"),
         routing.Shape("dsv3-256", 256, 7168, 2048, 8192, "uniform")]


@pytest.mark.parametrize("shape", MODEL, ids=lambda s: s.label.replace(" ", "-"))
@pytest.mark.parametrize("variant", VARIANTS)
def test_model_shapes(variant, shape):
    for kind in KINDS:
        a, b, offsets = operands(kind, shape.counts(), K_=shape.K, N_=shape.N)
        check(kind, a, b, offsets, calls.launch(kind, a, b, offsets, variant, out=poisoned(kind, a, b, offsets)))


def test_public_calls_tune_match_and_repeat():
    """grouped_mm / _dx / _dw as a user calls them: tuned on the first call of a problem size (over both variants),
    the same result on a repeat, equal to torch._grouped_mm within the tolerance; the launches cannot be cached
    (global scratch for the descriptors), which the plans record."""
    counts = routing.counts(8192, 16, "skewed")
    x, w, offsets = operands("fwd", counts, K_=2048, N_=1024)
    dy = torch.randn(x.shape[0], 1024, device="cuda", dtype=x.dtype)
    out = calls.grouped_mm(x, w, offsets)
    again = calls.grouped_mm(x, w, offsets, out=poisoned("fwd", x, w, offsets))
    torch.cuda.synchronize()
    assert torch.equal(out, again), "the repeated call computed something else"
    check("fwd", x, w, offsets, again)
    assert rel_err(out, torch._grouped_mm(x, w, offs=offsets)) < fp32_tolerance(x.dtype)
    check("dx", dy, w, offsets, calls.grouped_mm_dx(dy, w, offsets, out=poisoned("dx", dy, w, offsets)))
    check("dw", x, dy, offsets, calls.grouped_mm_dw(x, dy, offsets, out=poisoned("dw", x, dy, offsets)))
    assert calls._grouped.tuner.timings, "the first call of a problem size tunes"
    assert calls.PLANS.counts["general"] >= 4 and calls.PLANS.counts["planned"] == 0, calls.PLANS.counts


def test_repeated_launches_agree():
    """Bitwise equal results launch after launch (no state leaks between launches: descriptors, ring phases)."""
    for variant in VARIANTS:
        for kind in KINDS:
            a, b, offsets = operands(kind, COUNTS["ragged"])
            first = calls.launch(kind, a, b, offsets, variant)
            second = calls.launch(kind, a, b, offsets, variant)
            torch.cuda.synchronize()
            assert torch.equal(first, second), (variant, kind)


@pytest.mark.parametrize("variant", [None, *VARIANTS], ids=lambda v: v or "tuned")
def test_grouped_linear_gradients_match_autograd_of_the_reference(variant):
    """``grouped_linear`` forward and backward against torch's autograd through a loop of fp32 matmuls: ragged and
    empty experts, rows past the last expert (zeros out, zero gradient), a non-contiguous upstream gradient."""
    from tlx_kernels.moe.autograd import grouped_linear

    counts = [1000, 0, 37, 1301, 0, 129]
    x, w, offsets = operands("fwd", counts, K_=512, N_=768, extra_rows=9)
    x.requires_grad_(True)
    w.requires_grad_(True)
    out = grouped_linear(x, w, offsets, variant=variant)
    g = torch.randn(out.shape[1], out.shape[0], device="cuda", dtype=out.dtype).t()  # transposed: not contiguous
    out.backward(g)
    x32, w32 = x.detach().float().requires_grad_(True), w.detach().float().requires_grad_(True)
    ref = reference("fwd", x32, w32, offsets)
    ref.backward(g.float())
    rows = covered_rows(offsets)
    assert not out[rows:].any() and not x.grad[rows:].any(), "rows past the last expert must be zeros"
    tol = fp32_tolerance(x.dtype)
    assert rel_err(out[:rows], ref[:rows]) < tol
    assert rel_err(x.grad[:rows], x32.grad[:rows]) < tol
    assert rel_err(w.grad, w32.grad) < tol
    assert not w.grad[1].any() and not w.grad[4].any(), "an expert with no tokens has a zero weight gradient"


def test_the_producer_waits_for_each_experts_arrival_flag():
    """WAIT_FLAGS (the expert-parallel layer's arrival wait, run on one GPU): with every flag below its target the
    kernel waits; then, from the host, a second stream copies each expert's rows into place and raises that
    expert's flag (memory copies: the copy engine, no SM, which the spinning persistent kernel holds), and the
    kernel finishes with the right output. The same as the plain kernel's."""
    import time

    from tlx_kernels.moe import ws_cooperative as WS

    counts = [700, 0, 1301, 129]
    a, b, offsets = operands("fwd", counts)
    p = calls.problem("fwd", a, b, offsets, poisoned("fwd", a, b, offsets))
    kernel, args, kwargs, grid = calls.prepare(p, "ws_cooperative")
    calls.ensure_allocator(a)
    flags = torch.zeros(len(counts), dtype=torch.int32, device="cuda")
    raised = torch.full_like(flags, 2)
    rows = a.clone()
    a.fill_(float("nan"))  # the rows are "in flight": they land before their expert's flag
    side = torch.cuda.Stream()
    torch.cuda.synchronize()
    kernel[grid](*args, **kwargs, flags=flags, flag_target=2, WAIT_FLAGS=True)
    time.sleep(0.05)  # the kernel is spinning on expert 0's flag by now
    starts = [0] + routing.offsets_of(counts).tolist()
    with torch.cuda.stream(side):
        for e in range(len(counts)):
            a[starts[e]:starts[e + 1]].copy_(rows[starts[e]:starts[e + 1]])
            flags[e:e + 1].copy_(raised[e:e + 1])
    torch.cuda.synchronize()
    check("fwd", a, b, offsets, p.c)
    plain = calls.launch("fwd", a, b, offsets, "ws_cooperative", WS.DEFAULT, poisoned("fwd", a, b, offsets))
    torch.cuda.synchronize()
    assert torch.equal(p.c[:sum(counts)], plain[:sum(counts)])
