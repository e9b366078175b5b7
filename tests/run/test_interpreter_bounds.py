"""Out-of-bounds accesses in Triton's interpreter are errors at their line before they touch memory (they used to
corrupt the heap and take the notebook's kernel down: issue 25), in range and masked ones run as before."""

from __future__ import annotations

import inspect

import pytest
import torch
import triton
import triton.language as tl

from workbench.run.interpreter import interpret
from workbench.run.interpreter_bounds import _OPS, OutOfBoundsError


@triton.jit
def unmasked_copy(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs) * 2)


@triton.jit
def masked_copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2, mask=m)


@triton.jit
def store_past(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs + 8, tl.load(x_ptr + offs))


@triton.jit
def atomic_past(y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.atomic_add(y_ptr + offs + BLOCK, 1.0)


def _line(fn, text: str) -> int:
    lines, first = inspect.getsourcelines(fn.fn)
    return first + next(i for i, ln in enumerate(lines) if text in ln)


def test_the_builder_methods_wrapped_exist_with_their_pointer_and_mask_where_expected():
    from triton.runtime import interpreter as ti

    for name, (_, ptr_name, mask_name) in _OPS.items():
        params = list(inspect.signature(getattr(ti.interpreter_builder, name)).parameters)
        assert ptr_name in params and (mask_name is None or mask_name in params), (name, params)


def test_in_range_and_masked_accesses_run():
    x, y = torch.randn(100), torch.zeros(100)
    interpret(masked_copy, (x, y, 100), {"BLOCK": 64}, (2,))
    torch.testing.assert_close(y, x * 2)


def test_an_unmasked_load_past_the_end_is_an_error_at_its_line_with_the_range():
    x, y = torch.randn(1024), torch.zeros(1024)
    with pytest.raises(OutOfBoundsError) as err:
        interpret(unmasked_copy, (x, y), {"BLOCK": 1024}, (2,))
    e = err.value
    assert "tl.load out of bounds of `x_ptr` (1024 elements" in e.message
    assert "elements 1024..2047" in e.message and "program (1, 0, 0)" in e.message
    assert e.lineno == _line(unmasked_copy, "tl.store(y_ptr + offs") and e.filename == __file__
    torch.testing.assert_close(y[:1024], x * 2)  # program 0 ran; nothing past the end was written


def test_a_store_past_the_end_is_caught_before_it_writes():
    x, y = torch.randn(64), torch.zeros(64)
    before = y.clone()
    with pytest.raises(OutOfBoundsError, match=r"tl.store out of bounds of `y_ptr`.*8 lane\(s\).*elements 64..71"):
        interpret(store_past, (x, y), {"BLOCK": 64}, (1,))
    torch.testing.assert_close(y, before)  # the whole store was refused


def test_an_atomic_past_the_end_is_caught():
    y = torch.zeros(32)
    with pytest.raises(OutOfBoundsError, match="an atomic out of bounds of `y_ptr`"):
        interpret(atomic_past, (y,), {"BLOCK": 32}, (1,))


def test_after_an_error_the_interpreter_is_left_as_it_was():
    from triton.runtime import interpreter as ti

    with pytest.raises(OutOfBoundsError):
        interpret(unmasked_copy, (torch.randn(8), torch.zeros(8)), {"BLOCK": 16}, (1,))
    assert not any(name in vars(ti.interpreter_builder) for name in _OPS)
    x, y = torch.randn(100), torch.zeros(100)
    interpret(masked_copy, (x, y, 100), {"BLOCK": 64}, (2,))
    torch.testing.assert_close(y, x * 2)


OOB_CELL = """%%tlx --check "y: x * 2"
@triton.jit
def k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * 1024 + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs) * 2)

k[(2,)](x, y, 1024, BLOCK=1024)
"""


def test_the_issue_cell_fails_at_its_line_and_the_notebook_lives_on():
    """Issue 25's cell: it killed the Jupyter kernel twice ("malloc(): smallbin double linked list corrupted")."""
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.utils.capture import capture_output

    from workbench.run.device import detect

    if detect().available:
        pytest.skip("the no-GPU path (on a GPU the launch runs in the isolated worker)")
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "workbench")
    try:
        shell.run_cell("import torch\nx = torch.randn(1024)\ny = torch.zeros(1024)")
        with capture_output() as out:
            res = shell.run_cell(OOB_CELL)
        assert isinstance(res.error_in_exec, OutOfBoundsError)
        text = out.stdout + out.stderr
        assert "Cell line 6" in text and "tl.store(y_ptr + offs, tl.load(x_ptr + offs) * 2)" in text, text
        assert "elements 1024..2047" in text
        res = shell.run_cell("assert bool(torch.isfinite(x).all()) and y.shape == (1024,)")
        assert res.success
    finally:
        shell.run_line_magic("unload_ext", "workbench")
