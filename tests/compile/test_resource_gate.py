"""The shared-memory gate: a compile that cannot fit fails right after TTGIR with its allocations at their lines
(issue 25: a 512x512 tl.dot sat 46 s in the compiler first); a compile that fits is the same compile."""

from __future__ import annotations

import inspect
import time

import pytest
import torch
import triton
import triton.language as tl
import triton.language.extra.tlx  # noqa: F401 (uTLX's stages hook, which the gate chains to)
from sample_kernels import matmul

import workbench
from workbench.compile import cache
from workbench.compile.resource_gate import gate


@triton.jit
def big_dot(a_ptr, b_ptr, c_ptr, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + r[:, None] * BLOCK + r[None, :])
    b = tl.load(b_ptr + r[:, None] * BLOCK + r[None, :])
    tl.store(c_ptr + r[:, None] * BLOCK + r[None, :], tl.dot(a, b))


def test_a_tile_larger_than_shared_memory_stops_after_ttgir_at_its_line(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    monkeypatch.setenv("TLX_WORKBENCH_CACHE_DIR", str(tmp_path / "wb"))
    cache.clear()
    t = torch.empty(512, 512, dtype=torch.float16)
    t0 = time.perf_counter()
    with pytest.raises(workbench.CompileError) as err:
        workbench.compile(big_dot, t, t, torch.empty(512, 512), BLOCK=512)
    assert time.perf_counter() - t0 < 20  # LLVM and ptxas took 40-49 s on this kernel
    e = err.value
    lines, first = inspect.getsourcelines(big_dot.fn)
    assert e.lineno == first + next(i for i, ln in enumerate(lines) if "a = tl.load" in ln)
    assert "`a` alone needs 512 KiB" in e.message and "227 KiB a block can use on sm_90" in e.message
    assert "`b`: 512x512 f16 = 512 KiB" in e.message


def test_a_kernel_that_fits_compiles_to_the_same_triton_cache_entry():
    from triton import knobs

    t = torch.empty(64, 64, dtype=torch.float16)
    inside = workbench.compile(big_dot, t, t, torch.empty(64, 64), BLOCK=64)
    before = knobs.runtime.add_stages_inspection_hook
    with gate("sm_90", __file__):
        assert knobs.runtime.add_stages_inspection_hook() == before()  # same key part
    assert knobs.runtime.add_stages_inspection_hook is before  # put back
    assert inside.metadata.shared_bytes > 0


def test_a_search_candidate_that_fits_only_piece_by_piece_stops_before_ptx(tmp_path, monkeypatch):
    """Each operand ring fits, the two together (5 stages of 128x64 + 64x256 fp16: 240 KiB) do not: inside
    ``stop_over_total`` (a search's compile task) the compile stops after LLVM IR, before PTX and ptxas, with the
    allocations at their lines; a cell's compile of the same goes on (its Report and smem-limit finding say it)."""
    from workbench.compile.resource_gate import stop_over_total

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    monkeypatch.setenv("TLX_WORKBENCH_CACHE_DIR", str(tmp_path / "wb"))
    cache.clear()
    a, b, c = torch.empty(128, 4096, dtype=torch.float16), torch.empty(4096, 256, dtype=torch.float16), \
        torch.empty(128, 256, dtype=torch.float16)
    call = (a, b, c, 128, 256, 4096, 4096, 256, 256)
    args = dict(BM=128, BN=256, BK=64, num_stages=5, num_warps=8)
    with stop_over_total(), pytest.raises(workbench.CompileError) as err:
        workbench.compile(matmul, *call, **args)
    e = err.value
    assert "needs 240 KiB of shared memory" in e.message and "stopped before PTX and ptxas" in e.message
    assert "5x64x256 f16 = 160 KiB" in e.message and e.config_rejected and e.finding["rule"] == "smem-limit"
    lines, first = inspect.getsourcelines(matmul.fn)
    assert e.lineno is not None and first <= e.lineno < first + len(lines)
    art = workbench.compile(matmul, *call, **args)  # outside: compiled, too big to launch
    assert art.metadata.shared_bytes == 240 * 1024 and "sass" in art.stages
