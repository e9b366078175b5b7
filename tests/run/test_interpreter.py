"""Triton's CPU interpreter as ``%%tlx`` uses it: the process is left exactly as it was (the interpreter
patches ``triton.language`` and rewrites functions into their modules), bf16 ``tl.dot`` is right, and
kernels it would compute wrongly are recognised from their TTIR."""

from __future__ import annotations

import sys

import interpreter_kernels as K
import pytest
import torch
import triton.language as tl
import triton.language.extra.tlx  # noqa: F401 (as in %%tlx: with TLX loaded, TTIR has TritonGPU layouts)
import triton.runtime.interpreter  # noqa: F401 (its imports add tl.semantic: not a change the run made)
from triton.tools.tensor_descriptor import TensorDescriptor

import workbench
from workbench.run.interpreter import interpret
from workbench.run.interpreter_limits import interpreter_blocker


def _language_state() -> dict[tuple[str, str], object]:
    """Every attribute of tl, tl.core, tl.math and of each class they define, by identity."""
    objs = {m.__name__: m for m in (tl, tl.core, tl.math)}
    for m in (tl, tl.core, tl.math):
        objs.update({f"{v.__module__}.{v.__qualname__}": v for v in vars(m).values()
                     if isinstance(v, type) and v.__module__.startswith("triton.language")})
    return {(name, k): v for name, o in objs.items() for k, v in vars(o).items()}


def _changed(before: dict, after: dict) -> list:
    return sorted(k for k in before.keys() | after.keys() if before.get(k, KeyError) is not after.get(k, KeyError))


def _module_keys() -> dict[str, set[str]]:
    return {m: set(vars(sys.modules[m])) for m in (K.__name__, "triton.language.standard")}


def test_interpreting_leaves_triton_language_and_modules_as_they_were():
    x = torch.randn(100)
    out = torch.empty(100)
    lang, modules = _language_state(), _module_keys()
    interpret(K.helper_kernel, (x, out, 100), {"BLOCK": 32}, (4,))
    assert torch.equal(out, x * 2 + 4)  # it ran, helpers (tl.cdiv, twice) included
    assert _changed(lang, _language_state()) == []
    assert _module_keys() == modules  # nothing of the interpreter's left in the kernel's or tl.cdiv's module
    # the symptom: the next compile in this process failed (tl.core's builtins were interpreter versions)
    art = workbench.compile(K.helper_kernel, x, out, 100, BLOCK=32, target="sm_90")
    assert "tt.store" in art.stages["ttir"]


def test_a_failing_interpreted_kernel_leaves_triton_language_as_it_was():
    lang = _language_state()
    with pytest.raises(Exception, match="fails on purpose"):
        interpret(K.failing_kernel, (torch.empty(8),), {"BLOCK": 8}, (1,))
    assert _changed(lang, _language_state()) == []


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_dot_matches_torch(dtype):
    torch.manual_seed(0)
    a, b = torch.randn(32, 16, dtype=dtype), torch.randn(16, 32, dtype=dtype)
    c = torch.full((32, 32), float("nan"))
    interpret(K.dot_kernel, (a, b, c), {"M": 32, "N": 32, "K": 16}, (1,))
    # bf16/fp16 products are exact in fp32: only the summation order differs from torch's
    torch.testing.assert_close(c, a.float() @ b.float(), atol=1e-4, rtol=1e-5)


def _ttir(kernel, *args, **constexprs) -> str:
    return workbench.compile(kernel, *args, target="sm_90", **constexprs).stages["ttir"]


def test_bf16_arithmetic_is_wrong_in_the_interpreter_and_recognised():
    torch.manual_seed(0)
    x, y = torch.randn(16, dtype=torch.bfloat16), torch.randn(16, dtype=torch.bfloat16)
    out = torch.empty(16, dtype=torch.bfloat16)
    interpret(K.add_kernel, (x, y, out), {"BLOCK": 16}, (1,))
    # Triton 3.8 adds the uint16 bit patterns; if this starts to hold, interpreter_limits can allow arith.addf
    assert not torch.allclose(out.float(), (x + y).float(), atol=0.1, equal_nan=False)
    why = interpreter_blocker(_ttir(K.add_kernel, x, y, out, BLOCK=16))
    assert why is not None and why.startswith("Triton's interpreter computes bf16 arith.addf wrongly")
    s = torch.empty(1, dtype=torch.bfloat16)
    assert "bf16 arith.addf" in interpreter_blocker(_ttir(K.sum_kernel, x, s, BLOCK=16))  # inside tt.reduce


def test_what_the_interpreter_computes_right_is_not_blocked():
    h = torch.randn(16, dtype=torch.float16)
    assert interpreter_blocker(_ttir(K.add_kernel, h, h, h, BLOCK=16)) is None  # fp16 arithmetic
    a = torch.randn(32, 16, dtype=torch.bfloat16)
    b = torch.randn(16, 32, dtype=torch.bfloat16)
    for c in (torch.empty(32, 32), torch.empty(32, 32, dtype=torch.bfloat16)):  # bf16 dot, fp32 <-> bf16
        assert interpreter_blocker(_ttir(K.dot_kernel, a, b, c, M=32, N=32, K=16)) is None
    # TMA descriptors (tutorial 01's step 1): loads, stores, layout conversions into the dot
    descs = [TensorDescriptor.from_tensor(t, [16, 16]) for t in (a, b, torch.empty(32, 32, dtype=torch.bfloat16))]
    ttir = _ttir(K.desc_gemm, *descs, 16, BM=16, BN=16, BK=16)
    assert "ttg.convert_layout" in ttir and "bf16" in ttir
    assert interpreter_blocker(ttir) is None
