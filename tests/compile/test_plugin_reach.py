"""Pins workbench.compile.plugin_reach against the installed triton-utlx: the repairs are needed and work."""

import importlib

import pytest
import torch
import triton.language.core as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl

import workbench
from workbench.compile.plugin_reach import repair_gluon


@gluon.jit
def _gluon_copy(src, dst, n, BLOCK: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([1], [32], [4], [0])
    offs = gl.arange(0, BLOCK, layout=layout) + gl.program_id(0) * BLOCK
    mask = offs < n
    gl.store(dst + offs, gl.load(src + offs, mask=mask), mask=mask)


def test_utlx_still_installs_what_we_repair():
    importlib.import_module("triton.language.extra.tlx")
    from triton import knobs

    # uTLX's tensor shim and stages hook: if a new uTLX drops them, drop the repair (and this test)
    assert getattr(tl.tensor, "_utlx_encoding_shim", False)
    hook = knobs.runtime.add_stages_inspection_hook
    assert hook is not None and "utlx" in getattr(getattr(hook, "__wrapped__", hook), "__module__", "")


def test_gluon_kernel_compiles_with_tlx_imported(tmp_path, monkeypatch):
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    monkeypatch.setenv("TLX_WORKBENCH_CACHE_DIR", str(tmp_path / "wb"))
    importlib.import_module("triton.language.extra.tlx")
    assert repair_gluon()
    x = torch.empty(1000)
    art = workbench.compile(_gluon_copy, x, x, 1000, BLOCK=128)
    assert "ttg.convert_layout" in art.stages["ttgir"] or "#blocked" in art.stages["ttgir"]
    assert "ld.global" in art.stages["ptx"]


def test_chained_hook_keeps_utlx_cache_key():
    from triton import knobs

    importlib.import_module("triton.language.extra.tlx")
    repair_gluon()
    hook = knobs.runtime.add_stages_inspection_hook
    assert hook._workbench_chained
    assert hook() == hook.__wrapped__()


@pytest.mark.parametrize("times", [2])
def test_repair_is_idempotent(times):
    importlib.import_module("triton.language.extra.tlx")
    for _ in range(times):
        assert repair_gluon()
    from triton import knobs

    assert not getattr(knobs.runtime.add_stages_inspection_hook.__wrapped__, "_workbench_chained", False)


def test_the_local_alloc_guard_wraps_utlx_as_it_is_called():
    """guard_local_alloc wraps uTLX's local_alloc with the parameters it has; a shape that aborted the process
    in uTLX's C++ (a 64x48 fp16 ring slot) is an error at the kernel's line, the rest compiles as before."""
    import inspect

    import triton
    import triton.language.extra.tlx as tlx
    import utlx_plugin.mem_ops as mem_ops

    from workbench.compile.plugin_reach import guard_local_alloc

    assert list(inspect.signature(mem_ops.local_alloc).parameters) == [
        "shape", "dtype", "num", "storage", "layout", "reuse", "_semantic"]
    assert guard_local_alloc() and guard_local_alloc()  # idempotent
    assert tlx.local_alloc._workbench_shape_guard

    @triton.jit
    def slots(out_ptr, BM: tl.constexpr, BK: tl.constexpr):
        bufs = tlx.local_alloc((BM, BK), tl.float16, 2)
        rows = tlx.local_load(bufs[0]).to(tl.float32).sum(1)
        tl.store(out_ptr + tl.arange(0, BM), rows)

    workbench.compile(slots, torch.empty(64), BM=64, BK=64)
    with pytest.raises(workbench.CompileError, match=r"local_alloc\(64, 48\).*power of two \(not 48\)") as err:
        workbench.compile(slots, torch.empty(64), BM=64, BK=48)
    assert "tlx.local_alloc((BM, BK)" in (err.value.source_line or str(err.value))


def test_the_clc_guard_turns_a_crash_into_an_error_at_the_line():
    """Meta's blackwell_gemm_clc tutorial (cluster launch control) crashed the process (a segmentation fault):
    uTLX hands back a null value for an MLIR op stock Triton 3.8 lacks and does not check it. In a subprocess (a
    guard that stopped working must not take the test run down): with the guard, a CompileError at the
    tlx.clc_consumer line, and the process lives."""
    import inspect
    import subprocess
    import sys

    import utlx_plugin.dynamic_launch as dl

    from workbench.compile.plugin_reach import guard_clc

    assert list(inspect.signature(dl._clc_query).parameters) == ["clc_response_addr", "_semantic"]
    assert guard_clc() and guard_clc() and dl._clc_query._workbench_null_guard  # idempotent
    code = ("from tlx_kernels import meta_tutorials as mt\nimport workbench\n"
            "try:\n    mt.case('blackwell_gemm_clc').compile()\n"
            "except workbench.CompileError as e:\n    print('ERROR AT', e.lineno, e.source_line.strip())\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "tile_id = tlx.clc_consumer(clc_context, clc_phase_consumer)" in proc.stdout, proc.stdout
