"""A compile runs first in a forked child (``workbench.compile.child``): an abort in Triton's C++ costs that compile,
not the process; the compile here then loads what the child wrote."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import textwrap

import pytest
import sample_kernels as sk
import torch

import workbench
from workbench.compile import cache, child
from workbench.errors import CompileError

driver = importlib.import_module("workbench.compile.driver")  # workbench.compile is also a function's name

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")


def _aborts() -> str:
    os.write(2, b"LLVM ERROR: something Triton could not lower\n")
    os.abort()


def test_a_child_that_aborts_is_a_result_not_a_crash():
    got = child.run(_aborts)
    assert got.state == "died" and got.signal == "SIGABRT"
    assert "LLVM ERROR: something Triton could not lower" in got.output
    assert child.run(lambda: "ptxas info: 40 registers").output == "ptxas info: 40 registers"
    assert child.run(lambda: 1 / 0).state == "raised"


def test_a_child_that_never_ends_is_ended():
    import time

    assert child.run(lambda: time.sleep(30) or "", timeout_s=0.5).state == "timeout"


def test_an_abort_while_compiling_is_a_compile_error_at_the_kernel(monkeypatch, tmp_path):
    monkeypatch.setenv("TLX_WORKBENCH_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    cache.clear()
    real = driver._build_artifact

    def build(*a, **k):  # what reading a layout through Triton's C++ did on fla-core's comba kernel
        if child.in_child():
            _aborts()
        return real(*a, **k)

    monkeypatch.setattr(driver, "_build_artifact", build)
    x = torch.empty(64)
    with pytest.raises(CompileError) as ei:
        workbench.compile(sk.vector_add, x, x, x, 64, BLOCK=64)
    e = ei.value
    assert "aborted (SIGABRT) on vector_add" in e.message
    assert "LLVM ERROR: something Triton could not lower" in e.message
    assert e.filename == sk.__file__ and e.lineno == sk.line_of("def vector_add") and "child process" in e.hint


def test_the_compile_here_loads_what_the_child_compiled(monkeypatch, tmp_path):
    monkeypatch.setenv("TLX_WORKBENCH_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    cache.clear()
    built = []
    real = driver._build_artifact
    monkeypatch.setattr(driver, "_build_artifact", lambda *a, **k: built.append(1) or real(*a, **k))
    x = torch.empty(64)
    art = workbench.compile(sk.vector_add, x, x, x, 64, BLOCK=64)
    assert built == [] and not art.cache_hit  # built in the child only, and not a cache hit for the user
    assert art.metadata.registers and "sass" in art.stages and art.compiled is not None
    monkeypatch.setenv("TLX_WORKBENCH_COMPILE_IN_CHILD", "0")
    cache.clear()
    alone = workbench.compile(sk.vector_add, x, x, x, 64, BLOCK=32)
    assert built == [1] and alone.metadata.registers


def test_reading_the_layout_of_a_subview_of_a_transposed_swizzled_buffer_lives(tmp_path):
    # fla-core 0.6.0's chunk_scaled_dot_comba_pkt_fwd_kernel (num_warps=4): the 16x64 view of a 32x64 buffer with a
    # transposed 64-byte swizzle, read at 16x64, aborted the process in Triton's getTMABlockShape
    script = textwrap.dedent('''
        from triton.backends.compiler import GPUTarget
        from workbench.compile import triton_reach
        decl = "#shared2 = #ttg.nvmma_shared<{swizzlingByteWidth = 64, transposed = true, elementBitWidth = 16}>\\n"
        decl += "#smem = #ttg.shared_memory"
        types = [("!ttg.memdesc<32x64xbf16, #shared2, #smem, mutable>", [32, 64]),
                 ("!ttg.memdesc<16x64xbf16, #shared2, #smem, 32x64>", [16, 64])]
        whole, view = triton_reach.linear_layouts(decl, types, GPUTarget("cuda", 90, 32))
        assert view == whole and view["shape"] == [32, 64] and view["offset"], view
        print("ok")
    ''')
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stdout.strip() == "ok", p.stderr[-2000:]


def test_a_child_says_nothing_to_the_status_line(tmp_path):
    # the status line draws through the notebook's sockets, which belong to the parent
    from workbench.compile import progress

    heard = tmp_path / "heard"

    def listener(what: str) -> None:
        with open(heard, "a") as f:
            f.write(what + "\n")

    def work() -> str:
        progress.note("compiling k: ttgir")
        return "done"

    with progress.listening(listener):
        assert child.run(work).output == "done"
        progress.note("here")
    assert heard.read_text() == "here\n"
