"""Pins tlx_kernels.triton_reach (the cached launches' reach into Triton) against the installed Triton 3.8.

A cached launch calls Triton's C launcher itself, as ``CudaLauncher.__call__`` does, with every parameter's value
in the order ``JITFunction.run`` passes them, after Triton's own TensorDescriptor expansion. These tests read the
installed sources for each of those conventions (no GPU needed), so a Triton upgrade that changes one fails here.
"""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

import triton  # noqa: E402
from tlx_kernels import triton_reach as R  # noqa: E402
from triton.backends.nvidia import driver as nv_driver  # noqa: E402
from triton.compiler.compiler import CompiledKernel  # noqa: E402
from triton.runtime.jit import JITFunction  # noqa: E402
from triton.tools.tensor_descriptor import TensorDescriptor  # noqa: E402


def flat(src: str) -> str:
    return re.sub(r"\s+", " ", src)


def test_triton_is_the_pinned_version():
    assert triton.__version__ == "3.8.0"


def jit_run_source() -> str:
    """Triton's own ``JITFunction.run`` (uTLX wraps it to translate ``ctas_per_cga``: see the test below)."""
    cls = flat(inspect.getsource(JITFunction))
    return cls[cls.index("def run(self, *args, grid, warmup, **kwargs):"):cls.index("def repr(self, _):")]


def test_utlx_wraps_the_jit_run_only_to_translate_ctas_per_cga():
    """A cached launch replays the grid given to ``kernel[grid]``; uTLX rescales it only for ``ctas_per_cga``,
    which no plan accepts (``Template`` refuses it)."""
    import triton.language.extra.tlx  # noqa: F401  (installs the wrapper)

    src = flat(inspect.getsource(JITFunction.run))
    if "ctas_per_cga" in src:
        assert 'ctas_per_cga = kwargs.pop("ctas_per_cga", None)' in src and "if ctas_per_cga is not None:" in src
        assert "return _orig_run(self, *args, grid=grid, warmup=warmup, **kwargs)" in src
    from tlx_kernels import launch as L
    from tlx_kernels.gemm import common as C
    from tlx_kernels.gemm import ws_cooperative as W

    a, b = torch.empty(512, 256, dtype=torch.bfloat16), torch.empty(256, 512, dtype=torch.bfloat16)
    c = C.empty_out(512, 512, a.dtype, a.device)
    args, kwargs, _grid, _ = W.prepare(a, b, None, c)
    L.Template(W.kernel, args, kwargs, (a, b, c))
    with pytest.raises(L.NoPlan, match="ctas_per_cga"):
        L.Template(W.kernel, args, dict(kwargs, ctas_per_cga=(2, 1, 1)), (a, b, c))


def test_the_jit_launches_every_bound_argument_in_parameter_order_on_the_current_stream():
    src = jit_run_source()
    assert "device = driver.active.get_current_device()" in src
    assert "stream = driver.active.get_current_stream(device)" in src
    assert ("kernel.run(grid_0, grid_1, grid_2, stream, kernel.function, kernel.packed_metadata, launch_metadata, "
            "knobs.runtime.launch_enter_hook, knobs.runtime.launch_exit_hook, *bound_args.values())") in src


def test_launch_hooks_are_chains_whose_calls_say_whether_anything_listens():
    from triton import knobs

    for hook in (knobs.runtime.launch_enter_hook, knobs.runtime.launch_exit_hook):
        assert isinstance(hook, knobs.HookChain) and isinstance(hook.calls, list)
    assert "for call in self.calls" in inspect.getsource(knobs.HookChain.__call__)


def test_jit_state_watches_what_enters_the_jit_cache_key_and_launch():
    src = jit_run_source()
    for watched in ("knobs.runtime.add_stages_inspection_hook", "knobs.compilation.instrumentation_mode",
                    "knobs.runtime.debug", "knobs.runtime.launch_enter_hook", "knobs.runtime.launch_exit_hook"):
        assert watched in src, watched


def test_jit_state_changes_with_a_patched_run_a_hook_or_the_instrumentation_mode():
    from tlx_kernels.gemm import ws_cooperative as W
    from triton import knobs

    before = R.jit_state(W.kernel)
    assert R.jit_state(W.kernel) == before
    orig = JITFunction.run
    assert not R.run_wrapped(W.kernel)
    patched = lambda self, *a, **k: orig(self, *a, **k)  # noqa: E731
    patched.__wrapped__ = orig  # what the %%tlx capture does (workbench.run.launch_patches)
    JITFunction.run = patched
    try:
        assert R.jit_state(W.kernel) != before and R.run_wrapped(W.kernel)
    finally:
        JITFunction.run = orig
    assert not R.hooks_set()
    listener = lambda metadata: None  # noqa: E731
    knobs.runtime.launch_enter_hook.add(listener)  # what a profiler does
    try:
        assert R.jit_state(W.kernel) != before and R.hooks_set()
    finally:
        knobs.runtime.launch_enter_hook.remove(listener)
    saved = knobs.compilation.instrumentation_mode
    knobs.compilation.instrumentation_mode = "consan"
    try:
        assert R.jit_state(W.kernel) != before
    finally:
        knobs.compilation.instrumentation_mode = saved
    assert R.jit_state(W.kernel) == before and not R.hooks_set()


def test_cuda_launcher_calls_the_c_launch_as_compiled_launch_does():
    init = flat(inspect.getsource(nv_driver.CudaLauncher.__init__))
    assert "launcher = triton.runtime.driver.active.utils.launch" in init
    assert "self.launch = wrap_handle_tensordesc(launcher, signature, tensordesc_meta)" in init
    assert 'tensordesc_meta = getattr(metadata, "tensordesc_meta", None)' in init
    assert "signature = {idx: value for idx, value in src.signature.items()}" in init
    for attr in ("arg_annotations", "kernel_signature", "global_scratch_size", "profile_scratch_size",
                 "launch_cooperative_grid", "launch_pdl", "gsan_enabled"):
        assert f"self.{attr} =" in init, attr
    call = flat(inspect.getsource(nv_driver.CudaLauncher.__call__))
    assert ("self.launch(gridX, gridY, gridZ, stream, function, self.launch_cooperative_grid, self.launch_pdl, "
            "kernel_metadata, launch_metadata, launch_enter_hook, launch_exit_hook, global_scratch, profile_scratch, "
            "self.arg_annotations, self.kernel_signature, kernel_args)") in call
    # with no scratch sizes and no sanitizer, the scratch arguments are None and the args are passed as given
    assert "if size > 0:" in call and "return None" in call and "kernel_args = args" in call


def test_the_c_launch_takes_the_arguments_compiled_launch_passes():
    c = (Path(nv_driver.__file__).parent / "driver.c").read_text()
    assert 'PyArg_ParseTuple(args, "iiiKKpp(iii)OOOOOOy*O"' in c  # grid, stream, function, coop, pdl, metadata, ...
    # a pointer may be a plain int (no data_ptr call, no attribute query); None is a null pointer
    body = c[c.index("bool extractPointer("):c.index("bool extractI8(")]
    assert "PyLong_Check(obj)" in body and "obj == Py_None" in body


def test_compiled_kernel_exposes_what_compiled_launch_reads():
    src = flat(inspect.getsource(CompiledKernel))
    for piece in ("def run(self):", "self._init_handles()", "self.packed_metadata = backend.pack_metadata",
                  "self.module, self.function, self.n_regs, self.n_spills, self.n_max_threads",
                  "self._run = driver.active.launcher_cls(self.src, self.metadata)"):
        assert piece in src, piece


def test_a_descriptor_base_is_read_only_through_data_ptr_and_dtype():
    """What makes ``at_address`` sufficient: Triton's descriptor code reads a base through these two only."""
    post = inspect.getsource(TensorDescriptor.__post_init__)
    assert set(re.findall(r"self\.base\.(\w+)", post)) == {"data_ptr", "dtype"}
    expand = inspect.getsource(nv_driver.make_tensordesc_arg)
    assert set(re.findall(r"arg\.base\.(\w+)", expand)) == {"data_ptr"}
    decompose = inspect.getsource(nv_driver.decompose_descriptor)  # no metadata: the base is a pointer argument
    assert "arg.base," in decompose


def test_at_address_rebases_and_checks_like_triton():
    t = torch.empty(64, 64, dtype=torch.bfloat16)
    d = TensorDescriptor(t, [64, 64], [64, 1], [16, 32])
    moved = R.at_address(d, 4096)
    assert moved.base.data_ptr() == 4096 and moved.base.dtype == torch.bfloat16
    assert (moved.shape, moved.strides, moved.block_shape) == (d.shape, d.strides, d.block_shape)
    with pytest.raises(AssertionError, match="16-byte aligned"):
        R.at_address(d, 4104)


def test_wrap_handle_tensordesc_returns_the_callable_when_there_is_no_descriptor():
    """CompiledLaunch.expand of a kernel without descriptors is the identity on the argument list."""
    from triton.backends.nvidia.driver import wrap_handle_tensordesc

    expand = wrap_handle_tensordesc(R._last, {"x": "*fp32", "n": "i32"}, [])
    assert expand([1, 2]) == [1, 2]


def test_the_tlx_capture_marks_its_patch_so_no_plan_is_made_under_it():
    from tlx_kernels.gemm import ws_cooperative as W

    from workbench.run import launch_patches

    assert not R.run_wrapped(W.kernel)
    undo = launch_patches.install(lambda: None)
    try:
        assert R.run_wrapped(W.kernel)
    finally:
        undo()
    assert not R.run_wrapped(W.kernel)
