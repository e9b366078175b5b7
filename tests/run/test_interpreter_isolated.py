"""Triton's interpreter in its worker process (issue 25): what a kernel writes reaches the notebook's tensors, its
error comes back at its line, and a crash or a hang of the interpreter is an error naming the kernel and the line it
was at, with the notebook's tensors as they were and a fresh worker for the next run."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time

import interpreter_kernels as K
import pytest
import torch
from interpreter_crash import segfault_when_running
from sample_kernels import oob_check_cell
from triton.tools.tensor_descriptor import TensorDescriptor

from workbench.run import isolate
from workbench.run.interpreter_bounds import OutOfBoundsError
from workbench.run.interpreter_isolated import (
    InterpretedKernelError,
    InterpreterCrashError,
    _how,
    _stack_line,
    run_interpreted,
)
from workbench.run.isolate import KernelHangError
from workbench.run.watchdog import Outcome


@pytest.fixture(scope="module")
def worker():
    w = isolate.shared_worker("interpreter")
    w.ready(isolate.SETUP_S)
    return w


def _run(kernel, args, kwargs, grid, **kw):
    return run_interpreted(kernel, args, kwargs, grid, name=kernel.__name__, **kw)


def test_what_the_kernel_writes_reaches_the_notebooks_tensors(worker):
    x, out = torch.randn(100), torch.empty(100)
    record, fallback = _run(K.helper_kernel, (x, out, 100), {"BLOCK": 32}, (4,))
    assert fallback is None and record["mode"] == "interpreter-worker" and record["worker_pid"] != os.getpid()
    assert torch.equal(out, x * 2 + 4)


def test_descriptors_and_bf16_travel_too(worker):
    torch.manual_seed(0)
    a, b = torch.randn(32, 48, dtype=torch.bfloat16), torch.randn(48, 32, dtype=torch.bfloat16)
    c = torch.full((32, 32), float("nan"), dtype=torch.bfloat16)
    descs = [TensorDescriptor.from_tensor(t, [16, 16]) for t in (a, b, c)]
    _run(K.desc_gemm, (*descs, 48), {"BM": 16, "BN": 16, "BK": 16}, (2, 2))
    torch.testing.assert_close(c.float(), a.float() @ b.float(), atol=0.05, rtol=0.02)


def test_an_out_of_bounds_access_comes_back_at_its_line_and_what_ran_before_it_is_written(worker):
    x, y = torch.randn(1024), torch.zeros(1024)
    with pytest.raises(OutOfBoundsError) as err:
        _run(K.unmasked_double, (x, y), {"BLOCK": 1024}, (2,))
    e = err.value
    assert e.lineno == K.lines_marked(K.unmasked_double, "OOB")[0] and e.filename == K.__file__
    assert "elements 1024..2047" in e.message and "program (1, 0, 0)" in e.message
    torch.testing.assert_close(y, x * 2)  # program 0 wrote all of y, in the worker, and that came back


def test_a_kernel_error_comes_back_at_its_line(worker):
    with pytest.raises(InterpretedKernelError, match="fails on purpose") as err:
        _run(K.failing_kernel, (torch.empty(8),), {"BLOCK": 8}, (1,))
    assert err.value.filename == K.__file__ and "tl.static_assert" in err.value.source_line
    assert isolate.shared_worker("interpreter").info["pid"] == worker.info["pid"]  # an error keeps the worker


def test_a_crash_names_the_kernel_and_the_line_it_was_at_and_the_tensors_stay(worker):
    x, y = torch.randn(64), torch.zeros(64)
    pid = worker.info["pid"]
    watcher = segfault_when_running("long_loop")
    with pytest.raises(InterpreterCrashError) as err:
        _run(K.long_loop, (x, y), {"ITERS": 10**7, "BLOCK": 64}, (1,))
    watcher.join(5)
    e = err.value
    assert "long_loop (grid (1,)) crashed Triton's interpreter (SIGSEGV)" in e.message
    assert e.filename == K.__file__ and e.lineno in K.lines_marked(K.long_loop, "LOOP"), e
    assert not y.any()  # nothing of the crashed launch was written
    x2, out = torch.randn(100), torch.empty(100)
    _run(K.helper_kernel, (x2, out, 100), {"BLOCK": 32}, (4,))  # a fresh worker runs the next launch
    assert torch.equal(out, x2 * 2 + 4) and isolate.shared_worker("interpreter").info["pid"] != pid


def test_a_run_past_its_limit_is_a_hang_at_the_line_it_was_running(worker):
    worker.ready(isolate.SETUP_S)
    x, y = torch.randn(64), torch.zeros(64)
    t0 = time.perf_counter()
    with pytest.raises(KernelHangError, match=r"did not finish within 1 s in Triton's interpreter") as err:
        _run(K.long_loop, (x, y), {"ITERS": 10**7, "BLOCK": 64}, (1,), timeout_s=1.0)
    assert time.perf_counter() - t0 < 1.0 + 10.0
    assert err.value.lineno in K.lines_marked(K.long_loop, "LOOP") and "--timeout S" in err.value.hint
    assert not y.any()


def test_no_isolate_runs_in_the_notebooks_process():
    x, out = torch.randn(100), torch.empty(100)
    record, fallback = _run(K.helper_kernel, (x, out, 100), {"BLOCK": 32}, (4,), isolated=False)
    assert record == {"mode": "in-process", "reason": "--no-isolate"} and fallback is None
    assert torch.equal(out, x * 2 + 4)


def test_a_launch_that_cannot_be_sent_runs_here_and_says_why(worker):
    x, out = torch.randn(100), torch.empty(100)
    record, fallback = _run(K.helper_kernel, (x, out, 100), {"BLOCK": 32}, lambda meta: (4,))
    assert record["mode"] == "interpreter-worker" and fallback is None  # a grid function travels by value
    out.zero_()
    lock = threading.Lock()
    record, fallback = _run(K.helper_kernel, (x, out, 100), {"BLOCK": 32}, lambda meta: (4,) if lock else ())
    assert record["mode"] == "in-process" and "cannot pickle '_thread.lock'" in fallback, (record, fallback)
    assert record["reason"] == fallback and torch.equal(out, x * 2 + 4)


def test_what_the_c_library_said_before_an_abort_is_in_the_message():
    """A real abort with faulthandler on, as the worker has it (a double free: glibc prints, then aborts)."""
    code = ("import faulthandler, ctypes; faulthandler.enable(); libc = ctypes.CDLL(None); "
            "libc.malloc.restype = ctypes.c_void_p; p = ctypes.c_void_p(libc.malloc(64)); libc.free(p); libc.free(p)")
    # glibc's words depend on where the freed chunk went: with its per-thread cache it said "free(): double free
    # detected in tcache 2" in some runs and "double free or corruption (fasttop)" in others (a fresh clone's CI);
    # without that cache the chunk always goes to a fast bin
    env = {**os.environ, "GLIBC_TUNABLES": "glibc.malloc.tcache_count=0"}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    out = Outcome("died", info={"exit_code": proc.returncode}, log_tail=proc.stderr)
    assert proc.returncode == -signal.SIGABRT and _how(out) == "SIGABRT: double free or corruption (fasttop)"
    cut = Outcome("died", info={"exit_code": -11}, log_tail=" 1 in f\n" + "x" * 4000 + "Fatal Python error: ...")
    assert _how(cut) == "SIGSEGV"  # a tail that starts inside a line says nothing of it


def test_a_crash_is_placed_at_the_current_threads_line_wherever_its_stack_is_in_the_dump():
    """A fatal error dumps every thread in the interpreter's order: the current thread's stack may come before
    another's (a fresh-clone run lost the line so: it read the last stack only). Earlier dumps asked for with
    SIGUSR1 do not count; without a fatal error the last dump asked for does (a hang)."""
    cell = "<tlx-cell-1>"
    asked = f'Current thread 0x01 (most recent call first):\n  File "{cell}", line 5 in spin\n'
    fatal = ("Fatal Python error: Segmentation fault\n\n"
             f'Current thread 0x01 (most recent call first):\n  File "interp.py", line 9 in f\n  File "{cell}", '
             'line 8 in spin\n  File "worker.py", line 3 in main\n\n'
             'Thread 0x02 (most recent call first):\n  File "threading.py", line 300 in wait\n')
    assert _stack_line(asked + fatal, cell) == 8
    assert _stack_line(asked, cell) == 5
    assert _stack_line(asked + fatal.replace(cell, "other.py"), cell) is None


NB_SETUP = (f"import sys, torch\nsys.path.insert(0, {os.path.dirname(__file__)!r})\n"
            "x = torch.randn(1024)\ny = torch.zeros(1024)")
NB_OOB = oob_check_cell()
NB_ARM = ("from interpreter_crash import segfault_when_running\nfrom workbench.run import isolate\n"
          "isolate.shared_worker('interpreter').ready(120)\nz = torch.zeros(64)\n"
          "watcher = segfault_when_running('spin')")
NB_CRASH = '''%%tlx --interpret
@triton.jit
def spin(x_ptr, z_ptr, ITERS: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    acc = tl.zeros((BLOCK,), tl.float32)
    for _ in range(ITERS):
        acc += tl.load(x_ptr + offs)
    tl.store(z_ptr + offs, acc)

spin[(1,)](x, z, ITERS=10**7, BLOCK=64)'''
NB_GOOD = '''%%tlx --check "w: x * 2"
@triton.jit
def double(x_ptr, w_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(w_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)

w = torch.empty(1024)
double[(4,)](x, w, 1024, BLOCK=256)'''
NB_AFTER = "print('alive', x.shape[0], bool(torch.equal(y, x * 2)), bool((z == 0).all()), bool(torch.equal(w, x * 2)))"
ANSI = re.compile(r"\x1b\[[0-9;]*m")


@pytest.mark.slow
def test_in_a_real_kernel_an_out_of_bounds_cell_and_a_crash_leave_the_notebook_working(tmp_path):
    nbformat = pytest.importorskip("nbformat")
    from nbclient import NotebookClient

    from workbench.run.device import detect

    if detect().available:
        pytest.skip("the no-GPU path (--check interprets only without a GPU)")
    nb = nbformat.v4.new_notebook()
    cells = ["%load_ext workbench", NB_SETUP, NB_OOB, NB_ARM, NB_CRASH, NB_GOOD, NB_AFTER]
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(tmp_path)}}).execute()

    def error(i):
        [e] = [o for o in nb.cells[i].outputs if o["output_type"] == "error"]
        return e["ename"], ANSI.sub("", "\n".join(e["traceback"]))

    name, text = error(2)
    assert name == "OutOfBoundsError" and "Cell line 6" in text and "elements 1024..2047" in text, text
    name, text = error(4)
    assert name == "InterpreterCrashError" and "spin (grid (1,)) crashed Triton's interpreter (SIGSEGV)" in text
    assert re.search(r"Cell line (7|8)\n", text) and "notebook's kernel and tensors are intact" in text, text
    assert not [o for o in nb.cells[5].outputs if o["output_type"] == "error"], nb.cells[5].outputs
    [out] = [o for o in nb.cells[6].outputs if o["output_type"] == "stream"]
    assert out["text"].strip() == "alive 1024 True True True"
