"""Cached launches (tlx_kernels.launch) on a CPU: what a plan would launch, checked against the kernel signature.

For every kernel behind ``matmul``, ``attention`` and ``broadcast_linear``: the plan's argument list (every parameter
in order, pointers and descriptors taken from the call's tensors) matches the specialization Triton computes for
the same launch (``workbench.compile.triton_reach.specialize``: the JIT's own binder); two calls with the same key
give the same arguments but their pointers; calls whose launch reads a copy or whose tensors overlap get no plan;
``graph=True`` without output buffers is refused with what to pass. The launches themselves run in
``test_launch_gpu.py``.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from tlx_kernels import attention as A  # noqa: E402
from tlx_kernels import broadcast as BC  # noqa: E402
from tlx_kernels import gemm as G  # noqa: E402
from tlx_kernels import launch as L  # noqa: E402
from tlx_kernels.attention.calls import call_key as attention_key  # noqa: E402
from tlx_kernels.gemm import common as GC  # noqa: E402
from tlx_kernels.gemm.calls import call_key as gemm_key  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import make_backend  # noqa: E402

from workbench.compile.triton_reach import specialize  # noqa: E402

BACKEND = make_backend(GPUTarget("cuda", 90, 32))
BF16 = torch.bfloat16


def gemm_launch(name: str, M=1024, N=768, K=512, b_t=False, cfg=None):
    a = torch.randn(M, K).to(BF16)
    b = torch.randn(N, K).to(BF16).T if b_t else torch.randn(K, N).to(BF16)
    c = GC.empty_out(M, N, BF16, "cpu")
    mod = G.MODULES[name]
    prepared = mod.prepare(a, b, cfg or mod.DEFAULT, c)
    kernel = mod.kernel if name != "triton_dot" else prepared[0]
    args, kwargs, grid, _ = prepared if name != "triton_dot" else prepared[1:]
    return kernel, args, kwargs, grid, (a, b, c)


def attention_launch(name: str, S=1024, D=128, causal=True, want_lse=False):
    q, k, v = (torch.randn(2, 3, S, D).to(BF16) for _ in range(3))
    launch = A.MODULES[name].prepare(q, k, v, causal, want_lse=want_lse)
    return launch.kernel, launch.args, launch.kwargs, launch.grid, (q, k, v, launch.out, launch.lse)


def broadcast_launch(bias=True, name="realistic"):
    s = {x.name: x for x in BC.TEST_SHAPES}[name]
    U, X, W = torch.randn(s.B, s.DU).to(BF16), torch.randn(s.B, s.C, s.DX).to(BF16), torch.randn(s.DU + s.DX,
                                                                                                  s.N).to(BF16)
    b = torch.randn(s.N).to(BF16) if bias else None
    args, kwargs, grid, y = BC.prepare(U, X, W, b, s.act)
    return BC.KERNEL, args, kwargs, grid, (U, X, W, b, y)


LAUNCHES = {f"gemm-{n}": (lambda n=n: gemm_launch(n)) for n in G.MODULES}
LAUNCHES.update({f"gemm-{n}-colmajor-b": (lambda n=n: gemm_launch(n, b_t=True)) for n in ("ws_cooperative",)})
LAUNCHES.update({f"attention-{n}": (lambda n=n: attention_launch(n)) for n in A.MODULES})
LAUNCHES["attention-ws_persistent-lse-d64"] = lambda: attention_launch("ws_persistent", D=64, want_lse=True)
LAUNCHES["broadcast-bias"] = lambda: broadcast_launch(True)
LAUNCHES["broadcast-no-bias"] = lambda: broadcast_launch(False)


@pytest.mark.parametrize("case", sorted(LAUNCHES))
def test_plan_arguments_match_the_kernel_signature(case):
    kernel, args, kwargs, grid, tensors = LAUNCHES[case]()
    template = L.Template(kernel, args, kwargs, tensors)
    _options, signature, constexprs, _attrs = specialize(kernel, BACKEND, args, kwargs)
    assert template.names == tuple(signature) == tuple(kernel.arg_names)
    sources = {i: (slot, off) for i, slot, off in template.sources}
    for i, (name, ty) in enumerate(signature.items()):
        value = template.values[i]
        if i in sources:
            slot, off = sources[i]
            assert ty.startswith("tensordesc" if i in template.descs else "*"), (name, ty)
            assert value is None and 0 <= off < tensors[slot].untyped_storage().nbytes(), (name, off)
        elif ty == "constexpr":
            assert constexprs[(i,)] == value, name
        else:
            assert {"i32": int, "i64": int, "fp32": float, "u1": bool}[ty] is type(value), (name, ty, value)
    # every descriptor of the plan is Triton's descriptor of the launch, moved to the recorded address
    for i, d in template.descs.items():
        orig = args[i] if i < len(args) else kwargs[kernel.arg_names[i]]
        assert (d.shape, d.strides, d.block_shape, d.padding) == (orig.shape, orig.strides, orig.block_shape,
                                                                   orig.padding)
        slot, off = sources[i]
        assert d.base.data_ptr() == tensors[slot].data_ptr() + off == orig.base.data_ptr()


def same_layout(tensors):
    """New tensors (other addresses, other values) with the layouts of ``tensors``."""
    out = []
    for t in tensors:
        if t is None:
            out.append(None)
            continue
        store = torch.empty(t.untyped_storage().nbytes() // t.element_size() + 8, dtype=t.dtype)
        start = (-store.data_ptr() % 16) // t.element_size() + t.storage_offset()
        out.append(store.as_strided(t.shape, t.stride(), start))
    return out


@pytest.mark.parametrize("case", ["gemm-ws_cooperative", "gemm-ws_cooperative-colmajor-b", "attention-ws_persistent",
                                  "broadcast-no-bias"])
def test_calls_with_one_key_differ_only_in_pointers(case):
    kernel, args, kwargs, grid, tensors = LAUNCHES[case]()
    first = L.Template(kernel, args, kwargs, tensors)
    moved = same_layout(tensors)
    if case.startswith("attention"):
        moved[4] = tensors[4]  # the placeholder lse (one per device, never written)
    assert [L.layout(t) for t in moved] == [L.layout(t) for t in tensors]
    assert all(m is None or m is t or m.data_ptr() != t.data_ptr() for m, t in zip(moved, tensors, strict=True))
    fill = first.fill([moved[slot].data_ptr() + off for _, slot, off in first.sources])
    # the launch the general path makes for the moved tensors is the plan's, filled with their pointers
    if case.startswith("gemm"):
        again = G.MODULES["ws_cooperative"].prepare(*moved[:2], None, moved[2])
        a2, k2 = again[0], again[1]
    elif case.startswith("attention"):
        launch = A.MODULES["ws_persistent"].prepare(*moved[:3], True, None, None, moved[3])
        assert launch.lse is moved[4]
        a2, k2 = launch.args, launch.kwargs
    else:
        act = {x.name: x for x in BC.TEST_SHAPES}["realistic"].act
        a2, k2, _grid, _y = BC.prepare(*moved[:4], act, None, moved[4])
    want = L.Template(kernel, a2, k2, moved)
    assert want.sources == first.sources
    for i, (got, exp) in enumerate(zip(fill, want.fill([moved[s].data_ptr() + o for _, s, o in want.sources]),
                                       strict=True)):
        if i in first.descs:
            assert (got.base.data_ptr(), got.shape, got.strides, got.block_shape) == (
                exp.base.data_ptr(), exp.shape, exp.strides, exp.block_shape), kernel.arg_names[i]
        else:
            assert got == exp, kernel.arg_names[i]


def test_keys_separate_layouts_dtypes_alignment_and_configs():
    a = torch.empty(256, 128, dtype=BF16)
    b = torch.empty(128, 64, dtype=BF16)
    base = gemm_key(a, b, None, None)
    assert gemm_key(torch.empty(256, 128, dtype=BF16), torch.empty(128, 64, dtype=BF16), None, None) == base
    assert gemm_key(a, torch.empty(64, 128, dtype=BF16).T, None, None) != base  # column-major b
    assert gemm_key(a.half(), b.half(), None, None) != base
    wide = torch.empty(256, 136, dtype=BF16)
    assert gemm_key(wide[:, 4:132], b, None, None) != gemm_key(wide[:, :128], b, None, None)  # 8 bytes off 16
    assert gemm_key(a, b, None, G.ws_cooperative.CONFIGS[1]) != base
    assert gemm_key(a, b, torch.empty(256, 64, dtype=BF16), None) != base
    q = torch.empty(1, 2, 128, 64, dtype=BF16)
    k = torch.empty(1, 2, 256, 64, dtype=BF16)
    key = attention_key(q, k, k, False, None, None, None, False)
    assert attention_key(q, k, k, True, None, None, None, False) != key
    assert attention_key(q, k, k, False, 0.5, None, None, False) != key
    assert attention_key(q, k, k, False, None, None, None, True) != key


def test_a_launch_that_reads_a_copy_or_overlapping_tensors_is_not_planned():
    # K = 777: the row stride of A is not 16-byte aligned, so A is copied into padded storage for TMA
    kernel, args, kwargs, _grid, tensors = gemm_launch("ws_cooperative", M=256, N=256, K=777)
    with pytest.raises(L.NoPlan, match="copy"):
        L.Template(kernel, args, kwargs, tensors)
    # S_q = 1000 is no multiple of the query tile: the kernel writes a padded buffer, copied out afterwards
    with pytest.raises(L.NoPlan, match="copy"):
        L.Template(*attention_launch("ws_pipelined", S=1000)[:3], attention_launch("ws_pipelined", S=1000)[4])
    a = torch.empty(512, 512, dtype=BF16)
    c = GC.empty_out(512, 512, BF16, "cpu")
    args, kwargs, _grid, _ = G.ws_cooperative.prepare(a, a, None, c)  # a @ a: both operands in one tensor
    with pytest.raises(L.NoPlan, match="overlap"):
        L.Template(G.ws_cooperative.kernel, args, kwargs, (a, a, c))


def test_an_offer_that_is_no_compiled_kernel_makes_no_plan():
    """A ``%%tlx`` capture returns its own record from ``kernel[grid]``: nothing is planned, nothing refused."""
    kernel, args, kwargs, grid, tensors = gemm_launch("ws_cooperative")
    plans = L.Plans()
    plans.offer("k", kernel, None, args, kwargs, grid, tensors)
    assert plans.get("k") is None and plans.reason("k") is None and plans.counts["general"] == 1
    assert not plans.launch("k", tensors)


def test_graph_without_output_buffers_is_refused_with_what_to_pass():
    a, b = torch.empty(64, 64, dtype=BF16), torch.empty(64, 64, dtype=BF16)
    with pytest.raises(ValueError, match="pass out="):
        G.ws_cooperative.matmul(a, b, graph=True)
    q = torch.empty(1, 1, 128, 64, dtype=BF16)
    with pytest.raises(ValueError, match="pass out="):
        A.attention(q, q, q, graph=True)
    with pytest.raises(ValueError, match="pass lse="):
        A.attention(q, q, q, out=torch.empty_like(q), return_lse=True, graph=True)
    U, X, W = torch.empty(2, 64, dtype=BF16), torch.empty(2, 8, 64, dtype=BF16), torch.empty(128, 64, dtype=BF16)
    with pytest.raises(ValueError, match="pass out="):
        BC.broadcast_linear(U, X, W, graph=True)


@pytest.mark.parametrize("case", ["gemm-ws_cooperative", "attention-ws_persistent", "broadcast-no-bias"])
def test_the_compiled_kernel_takes_what_the_plan_passes(case):
    """Compiled for sm_90: the kernel needs no scratch memory per launch (else no plan is made), carries one TMA
    descriptor record per descriptor of the plan, and the C launcher's argument list (Triton's expansion of the
    signature) is as long as the plan's arguments once each descriptor becomes (map, shape, strides)."""
    from triton.backends.driver import expand_signature

    from workbench.compile import compile as wb_compile

    kernel, args, kwargs, _grid, tensors = LAUNCHES[case]()
    template = L.Template(kernel, args, kwargs, tensors)
    compiled = wb_compile(kernel, *args, target="sm_90", binary=True, **kwargs).compiled
    md = compiled.metadata
    assert md.global_scratch_size == 0 and md.profile_scratch_size == 0
    assert len(md.tensordesc_meta) == len(template.descs)
    expanded = expand_signature(compiled.src.signature.values(), md.tensordesc_meta, "nvTmaDesc")
    per_value = [1 + 2 * len(template.descs[i].shape) if i in template.descs else 1
                 for i in range(len(template.values))]
    assert len(expanded) == sum(per_value)
    assert [expanded[sum(per_value[:i])] for i in template.descs] == ["nvTmaDesc"] * len(template.descs)


def test_every_public_call_shows_its_plans():
    """What test_launch_gpu.py and bench/launch_overhead.py read: each public call's cached launches."""
    for mod in (*G.MODULES.values(),):
        assert isinstance(mod._matmul.plans, L.Plans), mod.__name__
    for name in ("ws_pipelined", "ws_pingpong", "ws_persistent"):
        assert isinstance(getattr(A, name).attention.plans, L.Plans), name
    assert isinstance(A._attention.plans, L.Plans)
