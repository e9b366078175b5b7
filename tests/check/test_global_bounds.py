"""global-out-of-bounds: unmasked loads and stores that the launch's grid and tensor sizes prove leave their
tensor, at their line; in-range, masked, and unbounded accesses say nothing."""

from __future__ import annotations

import inspect

import torch
import triton
import triton.language as tl

import workbench


@triton.jit
def gb_unmasked(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * 1024 + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs) * 2)


@triton.jit
def gb_masked(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) * 2, mask=m)


@triton.jit
def gb_tile(x_ptr, y_ptr, stride, BM: tl.constexpr, BN: tl.constexpr):
    rows = tl.program_id(0) * BM + tl.arange(0, BM)
    cols = tl.program_id(1) * BN + tl.arange(0, BN)
    offs = rows[:, None] * stride + cols[None, :]
    tl.store(y_ptr + offs, tl.load(x_ptr + offs) + 1)


@triton.jit
def gb_shifted(x_ptr, y_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs - 1))


def _rules(kernel, *args, grid, **kw):
    return [f for f in workbench.check(kernel, *args, grid=grid, **kw) if f.rule == "global-out-of-bounds"]


def _line(fn, text: str) -> int:
    lines, first = inspect.getsourcelines(fn.fn)
    return first + next(i for i, ln in enumerate(lines) if text in ln)


def test_the_issue_kernel_is_an_error_at_its_line_with_the_range():
    x, y = torch.empty(1024), torch.empty(1024)
    found = _rules(gb_unmasked, x, y, 1024, BLOCK=1024, grid=(2,))
    assert found and all(f.severity == "error" for f in found)
    f = found[0]
    assert f.line == _line(gb_unmasked, "tl.store(y_ptr + offs")
    assert "elements 0..2047" in f.message and "1024 elements from its pointer (1024 past its end)" in f.message
    assert _rules(gb_unmasked, x, y, 1024, BLOCK=1024, grid=(1,)) == []  # one program stays inside


def test_masked_accesses_and_a_missing_grid_say_nothing():
    x, y = torch.empty(1000), torch.empty(1000)
    assert _rules(gb_masked, x, y, 1000, BLOCK=256, grid=(4,)) == []
    assert [f for f in workbench.check(gb_unmasked, torch.empty(1024), torch.empty(1024), 1024, BLOCK=1024)
            if f.rule == "global-out-of-bounds"] == []


def test_two_dimensional_tiles_are_bounded_exactly():
    x, y = torch.empty(256, 128), torch.empty(256, 128)
    assert _rules(gb_tile, x, y, 128, BM=64, BN=64, grid=(4, 2)) == []  # exactly covers 256 x 128
    over = _rules(gb_tile, x, y, 128, BM=64, BN=64, grid=(5, 2))
    assert over and "elements 0..40959" in over[0].message, [f.message for f in over]


def test_a_negative_offset_is_before_the_start():
    found = _rules(gb_shifted, torch.empty(64), torch.empty(64), BLOCK=64, grid=(1,))
    assert found and "1 before its start" in found[0].message and "`x_ptr`" in found[0].message
