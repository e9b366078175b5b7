"""Pins workbench.compile.triton_reach against the installed Triton (pinned exactly in pyproject.toml)."""

import importlib.util
from pathlib import Path
from typing import Any

import pytest
import torch
import triton
import triton.language as tl
import triton.profiler.language as pl
from standin_driver import StandInDriver
from triton.backends.compiler import GPUTarget
from triton.compiler import make_backend

from workbench.compile.triton_reach import active_driver, jit_file_line, specialize, warm_cache_key, warp_groups


@triton.jit
def _add(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) + 1, mask=offs < n)


def test_triton_version_is_the_pinned_one():
    assert triton.__version__ == "3.8.0"


def test_jit_file_line_names_the_def_line():
    filename, line = jit_file_line(_add)
    assert filename == __file__
    assert Path(__file__).read_text().splitlines()[line - 1].startswith("def _add(")


def test_specialize_matches_the_jit_binder():
    backend = make_backend(GPUTarget("cuda", 90, 32))
    options, signature, constexprs, attrs = specialize(_add, backend, (torch.empty(64), 64), {"BLOCK": 64,
                                                                                              "debug": False})
    assert signature == {"x_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}
    assert list(constexprs.values()) == [64]
    assert options.num_warps == 4



def test_warp_groups_reads_the_budgets_triton_allocates():
    ttgir = """#blocked = #ttg.blocked<{sizePerThread = [1], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
module attributes {"ttg.num-ctas" = 1 : i32, "ttg.num-warps" = 4 : i32, ttg.target = "cuda:90", \
"ttg.threads-per-warp" = 32 : i32} {
  tt.func public @k(%arg0: i32) {
    ttg.warp_specialize(%arg0) attributes {requestedRegisters = array<i32: 232, 232>}
    default {
      ttg.warp_yield
    }
    partition0(%a: i32) num_warps(4) {
      ttg.warp_return
    }
    partition1(%a: i32) num_warps(4) {
      ttg.warp_return
    } : (i32) -> ()
    tt.return
  }
}
"""
    groups = warp_groups(ttgir, GPUTarget("cuda", 90, 32))
    assert groups and groups[0]["requestedRegisters"] == [232, 232]
    assert groups[0]["warpGroupStartIds"] == [4, 8]
    assert len(groups[0]["actualRegisters"]) == 3 and groups[0]["actualRegisters"][1:] == [232, 232]
    assert importlib.util.find_spec("triton._C.libtriton") is not None


def test_active_driver_stands_in_and_restores_the_previous_state():
    from triton.runtime import driver

    before = driver._active  # None until something resolves it (no GPU here: resolving would raise)
    with active_driver(StandInDriver("standin")) as s:
        assert driver.active is s
        assert driver.active.get_current_target().backend == "standin"
    assert driver._active is before
    try:
        with active_driver(StandInDriver("standin")):
            raise KeyError("inside")
    except KeyError:
        pass
    assert driver._active is before


@triton.jit
def _scale(x_ptr, y_ptr, n, factor, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * factor, mask=offs < n)


def test_jit_compile_after_workbench_compile_is_a_cache_hit(tmp_path, monkeypatch):
    """With uTLX's stages hook installed, the JIT's cache key includes an entry ``specialize`` must add too;
    without it every launch after ``workbench.compile`` compiled the kernel a second time (seen on the H200)."""
    import triton.language.extra.tlx  # noqa: F401  (installs uTLX's stages inspection hook)

    import workbench
    from workbench.compile import cache

    assert triton.knobs.runtime.add_stages_inspection_hook is not None
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    monkeypatch.setenv("TLX_WORKBENCH_CACHE_DIR", str(tmp_path / "workbench"))
    monkeypatch.setenv("TLX_WORKBENCH_COMPILE_IN_CHILD", "0")  # the first compile here, a miss: the key is ours
    cache.clear(memory=True)
    seen = []
    monkeypatch.setattr(triton.knobs.compilation, "listener",
                        lambda *, src, metadata, metadata_group, times, cache_hit: seen.append(cache_hit))
    x = torch.randn(3000)
    workbench.compile(_scale, x, torch.empty_like(x), x.numel(), 2.0, BLOCK=512, target="sm_90")
    with active_driver(StandInDriver()):  # sm_90, as JITFunction.run(warmup=True) asks
        _scale.warmup(x, torch.empty_like(x), x.numel(), 2.0, BLOCK=512, grid=(6,))
    assert seen == [False, True]


def _mlir_context():
    from triton._C.libtriton import ir

    ctx = ir.context()
    ir.load_dialects(ctx)
    make_backend(GPUTarget("cuda", 90, 32)).load_dialects(ctx)
    return ctx


def test_parse_in_context_gives_a_module_of_that_context():
    from workbench.compile.triton_reach import parse_in_context

    ctx = _mlir_context()
    mod = parse_in_context("module {\n  tt.func public @k(%arg0: i32) {\n    tt.return\n  }\n}\n", ctx)
    assert mod.context is ctx
    assert "tt.func public @k(%arg0: i32" in str(mod)
    with pytest.raises(RuntimeError):
        parse_in_context("module { not.mlir }", ctx)


@triton.jit
def _recorded(x_ptr, n, BLOCK: tl.constexpr):
    pl.enter_scope("store")
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)
    pl.exit_scope("store")


def _compile_recorded(instrumentation_mode: str = "") -> Any:
    from triton.compiler import ASTSource

    from workbench.compile.binding import bind

    target = GPUTarget("cuda", 90, 32)
    bound = bind(_recorded, make_backend(target), (torch.empty(64), 64),
                 {"BLOCK": 64, "instrumentation_mode": instrumentation_mode})
    src = ASTSource(_recorded, bound.signature, bound.constexprs, bound.attrs)
    return triton.compile(src, target=target, options=bound.options.__dict__)


def test_proton_instrumentation_is_protons_hook_without_a_session(monkeypatch, tmp_path):
    """Proton 3.8's InstrumentationHook activated with a stand-in device: its passes lower proton.record into
    clock reads stored to a global buffer; afterwards the compiler, Proton's flag and the mode knob are as before."""
    from triton.backends import backends
    from triton.profiler import mode as pm
    from triton.profiler.flags import flags

    from workbench.compile.triton_reach import proton_instrumentation

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    pl.enable_semantic("triton")  # Proton records only Gluon kernels' scopes unless told
    try:
        before = (backends["nvidia"].compiler.instrumentation, flags.instrumentation_on,
                  triton.knobs.compilation.instrumentation_mode)
        with proton_instrumentation(pm.Default(buffer_type="global"), max_shared_mem=232448) as mode:
            assert mode == triton.knobs.compilation.instrumentation_mode and "buffer_type=BUFFER_TYPE.GLOBAL" in mode
            assert set(backends["nvidia"].compiler.instrumentation.manager) == {"ttgpuir_to_llvmir", "llvmir_to_llvm"}
            instrumented = _compile_recorded(mode)
        after = (backends["nvidia"].compiler.instrumentation, flags.instrumentation_on,
                 triton.knobs.compilation.instrumentation_mode)
        plain = _compile_recorded()
    finally:
        pl.disable_semantic("triton")
    assert after == before
    assert 'proton.record start "store"' in instrumented.asm["ttgir"]
    assert "globaltimer" in instrumented.asm["ptx"] or "%clock" in instrumented.asm["ptx"]
    assert "proton" not in plain.asm["ttgir"] and "%clock" not in plain.asm["ptx"]


def test_proton_instrumentation_leaves_a_running_session_alone(monkeypatch):
    """Only one InstrumentationHook may be active: inside a Proton session activate() refuses, and the session's
    hook stays active with its state."""
    from triton.profiler import mode as pm
    from triton.profiler.flags import flags
    from triton.profiler.hooks import InstrumentationHook

    from workbench.compile.triton_reach import proton_instrumentation

    monkeypatch.setattr(InstrumentationHook, "active_count", 1)
    monkeypatch.setattr(flags, "instrumentation_on", True)
    monkeypatch.setattr(triton.knobs.compilation, "instrumentation_mode", "the session's")
    with pytest.raises(RuntimeError, match="Only one instance"):
        with proton_instrumentation(pm.Default(), max_shared_mem=232448):
            pass
    assert InstrumentationHook.active_count == 1 and flags.instrumentation_on
    assert triton.knobs.compilation.instrumentation_mode == "the session's"


def test_profile_allocator_is_the_one_instrumented_launches_call():
    from triton.runtime import _allocation

    from workbench.compile.triton_reach import profile_allocator

    def alloc(size, alignment, stream):
        return None

    with profile_allocator(alloc):
        assert _allocation.has_profile_allocator() and _allocation._profile_allocator.get() is alloc
    assert not _allocation.has_profile_allocator()


def test_gluon_source_class_is_what_gluon_kernels_compile_from():
    from triton.compiler import ASTSource

    from workbench.compile.triton_reach import gluon_source_class

    cls = gluon_source_class()
    assert issubclass(cls, ASTSource) and cls.__name__ == "GluonASTSource"


def test_storage_id_is_one_per_storage():
    from workbench.compile.triton_reach import storage_id

    x = torch.empty(16)
    assert storage_id(x.untyped_storage()) == storage_id(x[4:].untyped_storage()) == storage_id(x.view(4, 4)
                                                                                                  .untyped_storage())
    assert storage_id(x.untyped_storage()) != storage_id(torch.empty(16).untyped_storage())


def test_scaled_mm_is_an_fp8_product_with_per_tensor_scales():
    from workbench.compile.triton_reach import scaled_mm

    a = torch.randn(32, 64).to(torch.float8_e4m3fn)
    b = torch.randn(16, 64).to(torch.float8_e4m3fn).t()  # column-major, as cuBLASLt wants it
    two, half = torch.tensor(2.0), torch.tensor(0.5)
    out = scaled_mm(a, b, scale_a=two, scale_b=half, out_dtype=torch.bfloat16, use_fast_accum=True)
    assert out.dtype == torch.bfloat16 and out.shape == (32, 16)
    torch.testing.assert_close(out.float(), a.float() @ b.float(), atol=0.5, rtol=0.02)


_DECLS = """#blocked = #ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], \
order = [1, 0]}>
#mma = #ttg.nvidia_mma<{versionMajor = 3, versionMinor = 0, warpsPerCTA = [4, 1], instrShape = [16, 64, 16]}>
#shared = #ttg.nvmma_shared<{swizzlingByteWidth = 128, transposed = false, elementBitWidth = 16}>
#smem = #ttg.shared_memory"""


def test_linear_layouts_are_tritons_own():
    """Triton's C++ conversion, read back: a blocked layout's bases follow its parameters, a wgmma accumulator
    holds 16x8 per warp and register pairs, a 128-byte swizzle XORs 16-byte chunks with the row, and a ring of
    buffers is laid out one buffer at a time."""
    from workbench.compile.triton_reach import linear_layouts

    types = [("tensor<16x64xf16, #blocked>", [16, 64]), ("tensor<64x64xf32, #mma>", [64, 64]),
             ("!ttg.memdesc<3x8x64xf16, #shared, #smem, mutable>", [3, 8, 64]),
             ("tensor<8xf16, #blocked>", [8])]
    blocked, mma, shared, wrong_rank = linear_layouts(_DECLS, types, GPUTarget("cuda", 90, 32))
    assert blocked == {"shape": [16, 64], "register": [[0, 1], [0, 2], [0, 4]],
                       "lane": [[0, 8], [0, 16], [0, 32], [1, 0], [2, 0]], "warp": [[4, 0], [8, 0]], "block": []}
    assert mma["register"][:3] == [[0, 1], [8, 0], [0, 8]] and mma["lane"] == [[0, 2], [0, 4], [1, 0], [2, 0],
                                                                                   [4, 0]]
    assert mma["warp"] == [[16, 0], [32, 0]]
    assert shared == {"shape": [8, 64], "offset": [[0, 1], [0, 2], [0, 4], [0, 8], [0, 16], [0, 32], [1, 8],
                                                   [2, 16], [4, 32]], "block": []}
    # a rank the layout does not have is refused here: in C++ it is an assertion that ends the process
    assert "does not fit" in wrong_rank["reason"]


def test_linear_layouts_of_a_module_mlir_rejects_say_why():
    from workbench.compile.triton_reach import linear_layouts

    out = linear_layouts("#blocked = #ttg.blocked<{sizePerThread = [1]}>", [("tensor<8xf16, #blocked>", [8])],
                         GPUTarget("cuda", 90, 32))
    assert out[0]["reason"].startswith("Triton could not read the layout")


def test_dispatch_mode_sees_aten_ops_and_dynamo_rebinds_manual_seed():
    from workbench.compile.triton_reach import dispatch_mode, load_dynamo

    seen = []

    class Mode(dispatch_mode()):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(func.overloadpacket.__name__)
            return func(*args, **(kwargs or {}))

    with Mode():
        torch.ones(3) @ torch.ones(3)
    assert "dot" in seen or "mm" in seen
    load_dynamo()
    assert hasattr(torch.manual_seed, "__wrapped__")  # dynamo's wrapper: what the evaluation's watch must not see


def test_warm_cache_key_memoises_the_key_every_compile_starts_with():
    from triton.runtime.cache import triton_key

    warm_cache_key()
    assert triton_key.cache_info().currsize == 1  # a forked compile child inherits it


def test_module_handle_reads_what_triton_loads():
    """``module_handle`` calls ``CompiledKernel._init_handles`` and reads ``.module`` (set to None until loaded)."""
    import inspect

    from triton.compiler.compiler import CompiledKernel

    init = inspect.getsource(CompiledKernel._init_handles)
    assert "self.module" in init and "load_binary" in init
    assert "self.module = None" in inspect.getsource(CompiledKernel.__init__)
