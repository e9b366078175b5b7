"""Pins workbench.compile.triton_reach against the installed Triton (pinned exactly in pyproject.toml)."""

import importlib.util
from pathlib import Path

import torch
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import make_backend

from workbench.compile.triton_reach import active_driver, jit_file_line, specialize, warp_groups


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

    class StandIn:
        def get_current_target(self):
            return GPUTarget("standin", 90, 32)

    before = driver._active  # None until something resolves it (no GPU here: resolving would raise)
    with active_driver(StandIn()) as s:
        assert driver.active is s
        assert driver.active.get_current_target().backend == "standin"
    assert driver._active is before
    try:
        with active_driver(StandIn()):
            raise KeyError("inside")
    except KeyError:
        pass
    assert driver._active is before


class _JitDriver:
    """What JITFunction.run(warmup=True) asks of the driver, for sm_90 on a machine with no GPU."""

    def get_current_target(self):
        return GPUTarget("cuda", 90, 32)

    def get_active_torch_device(self):
        return torch.device("cpu")

    def get_current_device(self):
        return 0

    def get_current_stream(self, device=None):
        return 0


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
    cache.clear(memory=True)
    seen = []
    monkeypatch.setattr(triton.knobs.compilation, "listener",
                        lambda *, src, metadata, metadata_group, times, cache_hit: seen.append(cache_hit))
    x = torch.randn(3000)
    workbench.compile(_scale, x, torch.empty_like(x), x.numel(), 2.0, BLOCK=512, target="sm_90")
    with active_driver(_JitDriver()):
        _scale.warmup(x, torch.empty_like(x), x.numel(), 2.0, BLOCK=512, grid=(6,))
    assert seen == [False, True]
