"""FastLauncher's plan logic on the CPU: the first launch of a problem goes through kernel[grid], repeats call
the CompiledKernel directly with descriptors equal to what the ordinary launch would convert."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from tlx_kernels.gemm import common as C  # noqa: E402
from tlx_kernels.gemm import triton_dot as T  # noqa: E402
from tlx_kernels.gemm import ws_cooperative as W  # noqa: E402
from tlx_kernels.gemm.fastlaunch import FastLauncher  # noqa: E402

from workbench.tlx.kernel import convert_args  # noqa: E402


class FakeCompiled:
    """Stands in for the CompiledKernel (a launch needs a GPU): records what its runner is called with."""

    def __init__(self):
        self.runs = []

    def __getitem__(self, grid):
        assert isinstance(grid, tuple) and len(grid) == 3, "Triton's runner indexes grid[0], grid[1], grid[2]"
        return lambda *args: self.runs.append((grid, args))


class FakeKernel:
    """The real kernel's signature; ``kernel[grid](...)`` records the call and returns a FakeCompiled."""

    def __init__(self, real):
        self.arg_names, self.params = real.arg_names, real.params
        self.launches = []
        self.compiled = FakeCompiled()

    def __getitem__(self, grid):
        def run(*args, **kwargs):
            self.launches.append((grid, args, kwargs))
            return self.compiled

        return run


def mats(M=300, N=504, K=200, a_t=False):  # not tile multiples, 16-byte aligned rows
    a = torch.randn(M, K, dtype=torch.bfloat16)
    if a_t:
        a = a.T.contiguous().T
    return a, torch.randn(K, N, dtype=torch.bfloat16)


def test_repeat_launch_reuses_the_plan_with_the_same_arguments(monkeypatch):
    monkeypatch.delenv("TLX_KERNELS_NO_FASTLAUNCH", raising=False)
    k = FakeKernel(W.ws_cooperative_kernel)
    launcher = FastLauncher(k, W.prepare, gluon_descriptors=True)
    cfg = dict(W.DEFAULT)
    a, b = mats()
    c0 = launcher(a, b, cfg)
    assert len(k.launches) == 1 and not k.compiled.runs and c0.shape == (300, 504)

    a2, b2 = mats()  # new tensors, same problem
    out = C.empty_out(300, 504, torch.bfloat16, "cpu")
    assert launcher(a2, b2, cfg, out) is out
    assert len(k.launches) == 1 and len(k.compiled.runs) == 1
    grid, fast = k.compiled.runs[0]

    # what the ordinary launch would pass for these tensors: prepare() + the conversion TLXKernel.run does
    args, kwargs, grid_slow, _ = W.prepare(a2, b2, cfg, out)
    (ga, gb, gc, *ints), _ = convert_args(args, {})
    assert grid == (*grid_slow, 1, 1)[:3]
    for got, want in zip(fast[:3], (ga, gb, gc), strict=True):
        assert got.base.data_ptr() == want.base.data_ptr()
        assert (list(got.shape), list(got.strides), list(got.block_shape)) == (
            list(want.shape),
            list(want.strides),
            list(want.block_shape),
        )
        assert got.layout == want.layout and got.padding == want.padding
    assert list(fast[3:6]) == ints
    names = W.ws_cooperative_kernel.arg_names
    assert list(fast[6:]) == [kwargs[n] for n in names[6:]]


def test_a_new_problem_or_config_goes_through_kernel_grid(monkeypatch):
    monkeypatch.delenv("TLX_KERNELS_NO_FASTLAUNCH", raising=False)
    k = FakeKernel(W.ws_cooperative_kernel)
    launcher = FastLauncher(k, W.prepare, gluon_descriptors=True)
    a, b = mats()
    launcher(a, b, dict(W.DEFAULT))
    launcher(*mats(a_t=True), dict(W.DEFAULT))  # other majorness
    launcher(*mats(M=301), dict(W.DEFAULT))  # other size
    launcher(a, b, dict(W.CONFIGS[1]))  # other config
    assert len(k.launches) == 4 and not k.compiled.runs
    launcher(a, b, dict(W.CONFIGS[1]))
    assert len(k.compiled.runs) == 1


def test_fastlaunch_can_be_turned_off(monkeypatch):
    monkeypatch.setenv("TLX_KERNELS_NO_FASTLAUNCH", "1")
    k = FakeKernel(W.ws_cooperative_kernel)
    launcher = FastLauncher(k, W.prepare, gluon_descriptors=True)
    a, b = mats()
    for _ in range(3):
        launcher(a, b, dict(W.DEFAULT))
    assert len(k.launches) == 3 and not k.compiled.runs


def test_kernel_whose_signature_does_not_fit_is_refused(monkeypatch):
    monkeypatch.delenv("TLX_KERNELS_NO_FASTLAUNCH", raising=False)
    k = FakeKernel(W.ws_cooperative_kernel)
    k.arg_names = ["x", *k.arg_names[1:]]
    with pytest.raises(TypeError, match="does not start with"):
        FastLauncher(k, W.prepare, gluon_descriptors=True)(*mats(), dict(W.DEFAULT))


def test_plain_triton_kernel_repeats_with_host_descriptors(monkeypatch):
    from triton.tools.tensor_descriptor import TensorDescriptor

    monkeypatch.delenv("TLX_KERNELS_NO_FASTLAUNCH", raising=False)
    k = FakeKernel(T.dot_persistent_kernel)
    launcher = FastLauncher(None, lambda *a: (k, *T.prepare(*a)[1:]))
    a, b = mats()
    launcher(a, b, dict(T.DEFAULT))
    out = launcher(a, b, dict(T.DEFAULT))
    assert len(k.launches) == 1 and len(k.compiled.runs) == 1
    _, fast = k.compiled.runs[0]
    _, args, kw, grid, _ = T.prepare(a, b, dict(T.DEFAULT), out)
    for got, want in zip(fast[:3], args[:3], strict=True):
        assert type(got) is TensorDescriptor
        assert (got.base.data_ptr(), list(got.shape), list(got.strides), list(got.block_shape)) == (
            want.base.data_ptr(),
            list(want.shape),
            list(want.strides),
            list(want.block_shape),
        )
    assert list(fast[6:]) == [kw[n] for n in T.dot_persistent_kernel.arg_names[6:]]


def test_launches_inside_a_tlx_cell_always_go_through_kernel_grid(monkeypatch):
    # the %%tlx magic captures launches by intercepting kernel[grid]: a plan must not bypass it
    from workbench.magic import capture

    monkeypatch.delenv("TLX_KERNELS_NO_FASTLAUNCH", raising=False)
    k = FakeKernel(W.ws_cooperative_kernel)
    launcher = FastLauncher(k, W.prepare, gluon_descriptors=True)
    a, b = mats()
    launcher(a, b, dict(W.DEFAULT))  # a plan, made outside any cell
    monkeypatch.setattr(capture, "_ACTIVE", object())
    launcher(a, b, dict(W.DEFAULT))
    launcher(a, b, dict(W.DEFAULT))
    assert len(k.launches) == 3 and not k.compiled.runs
    monkeypatch.setattr(capture, "_ACTIVE", None)
    launcher(a, b, dict(W.DEFAULT))
    assert len(k.launches) == 3 and len(k.compiled.runs) == 1


def test_a_repeat_with_a_misaligned_output_is_refused(monkeypatch):
    """Repeats build descriptors without the constructors' checks, so C.operands must refuse what they
    would: an output whose base is not 16-byte aligned (a view at an odd element offset)."""
    monkeypatch.delenv("TLX_KERNELS_NO_FASTLAUNCH", raising=False)
    k = FakeKernel(W.ws_cooperative_kernel)
    launcher = FastLauncher(k, W.prepare, gluon_descriptors=True)
    a, b = mats()
    launcher(a, b, dict(W.DEFAULT))
    store = torch.empty(300 * 504 + 8, dtype=torch.bfloat16)
    misaligned = store[1 : 1 + 300 * 504].view(300, 504)
    with pytest.raises(ValueError, match="16-byte aligned"):
        launcher(a, b, dict(W.DEFAULT), misaligned)
    assert not k.compiled.runs
