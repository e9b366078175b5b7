"""Common TLX mistakes compiled for sm_90 on the CPU: each fails at its line, says what is wrong in the words of the
pass that found it (an assertion's reason, not MLIR's "the pipeline failed") and hints at the fix, not at
something unrelated (a shape hint for a float phase, a shared-memory hint for a missing op)."""

from __future__ import annotations

import inspect

import pytest
import torch
import triton
import triton.language as tl
import triton.language.extra.tlx as tlx
from triton.tools.tensor_descriptor import TensorDescriptor

import workbench
from workbench.errors import CompileError


@triton.jit
def box_mismatch(x_desc):
    buf = tlx.local_alloc((64, 64), tl.bfloat16, 2)  # the descriptor's box is 128 x 64
    bars = tlx.alloc_barriers(2, arrive_count=1)
    tlx.barrier_expect_bytes(bars[0], 64 * 64 * 2)
    tlx.async_descriptor_load(x_desc, buf[0], [0, 0], bars[0])
    tlx.barrier_wait(bars[0], 0)


@triton.jit
def whole_barrier_array(x_desc):
    bars = tlx.alloc_barriers(2, arrive_count=1)
    tlx.barrier_expect_bytes(bars, 128 * 64 * 2)


@triton.jit
def fp32_wgmma(x_desc):
    a = tlx.local_alloc((64, 64), tl.float32, 1)
    b = tlx.local_alloc((64, 64), tl.float32, 1)
    acc = tl.zeros((64, 64), dtype=tl.float32)
    acc = tlx.async_dot(a[0], b[0], acc)
    acc = tlx.async_dot_wait(0, acc)


@triton.jit
def float_phase(x_desc):
    bars = tlx.alloc_barriers(1, arrive_count=1)
    tlx.barrier_wait(bars[0], 1.5)


def _line(fn, text: str) -> int:
    lines, first = inspect.getsourcelines(fn.fn)
    return next(first + i for i, ln in enumerate(lines) if text in ln)


def _error(fn) -> CompileError:
    x = torch.empty(256, 64, dtype=torch.bfloat16)
    with pytest.raises(CompileError) as info:
        workbench.compile(fn, TensorDescriptor(x, [256, 64], [64, 1], [128, 64]))
    return info.value


def test_a_buffer_that_is_not_the_descriptors_box():
    e = _error(box_mismatch)
    assert e.lineno == _line(box_mismatch, "tlx.async_descriptor_load(")
    assert "8192 elements tensor with 4096 elements" in e.message
    assert "block_shape" in e.hint and "local_alloc" in e.hint


def test_the_whole_barrier_array_where_one_barrier_belongs():
    e = _error(whole_barrier_array)
    assert e.lineno == _line(whole_barrier_array, "tlx.barrier_expect_bytes(")
    assert "bars[i]" in e.hint


def test_a_wgmma_the_backend_cannot_build_says_the_assertions_reason():
    e = _error(fp32_wgmma)
    assert "WGMMA type or shape is not supported" in e.message and "Failures have been detected" not in e.message
    assert e.lineno == _line(fp32_wgmma, "def fp32_wgmma")  # the pass reports no op location, only the kernel's
    assert "tlx.async_dot" in e.hint


def test_a_float_phase_gets_an_integer_hint_not_a_shape_hint():
    e = _error(float_phase)
    assert e.lineno == _line(float_phase, "tlx.barrier_wait(")
    assert "float" in e.message and "make it an int" in e.hint
