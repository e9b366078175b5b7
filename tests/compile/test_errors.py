"""Every error compile can raise names the user's file and line and says what to do."""

import pytest
import sample_kernels as sk
import torch

import workbench
from workbench.errors import ArgumentError, CompileError, TargetError, ToolError


def test_triton_compile_error_names_file_line_and_caret():
    x = torch.empty(64)
    with pytest.raises(CompileError) as ei:
        workbench.compile(sk.broken_shapes, x, BLOCK=64)
    e = ei.value
    assert e.filename == sk.__file__
    assert e.lineno == sk.line_of("tl.store(x_ptr + offs, offs + other)")
    assert "offs + other" in e.source_line and "^" in str(e)
    assert "shape" in e.message.lower() or "incompatible" in e.message.lower()
    assert "Traceback" not in str(e)
    assert e.__cause__ is None and e.__suppress_context__


def test_undefined_name_error():
    x = torch.empty(64)
    with pytest.raises(CompileError) as ei:
        workbench.compile(sk.broken_name, x, BLOCK=64)
    assert ei.value.lineno == sk.line_of("tl.store(x_ptr + offs, undefined_thing)")
    assert "undefined_thing" in ei.value.message
    assert ei.value.hint


def test_a_block_pointers_element_type_is_a_triton_38_change_with_what_to_write_instead():
    # FlagGems 5.0.2 generates this for NVIDIA on Triton 3.x; stock Triton 3.8 fails on it without the workbench too
    x = torch.empty(64)
    with pytest.raises(CompileError) as ei:
        workbench.compile(sk.block_ptr_element_type, x, x, 64, BLOCK=64)
    assert ei.value.lineno == sk.line_of("tl.store(yb, v.to(yb.type.element_ty)")
    assert "element_ty" in ei.value.message and "x_ptr.dtype.element_ty" in ei.value.hint


def test_missing_argument():
    x = torch.empty(64)
    with pytest.raises(ArgumentError) as ei:
        workbench.compile(sk.vector_add, x, x, BLOCK=64)
    e = ei.value
    assert "vector_add" in e.message and "missing" in e.message
    assert e.filename == sk.__file__ and e.lineno == sk.line_of("def vector_add")


def test_unknown_keyword():
    x = torch.empty(64)
    with pytest.raises(ArgumentError) as ei:
        workbench.compile(sk.vector_add, x, x, x, 64, BLOCK=64, num_wraps=4)
    assert "'num_wraps'" in ei.value.message and "num_warps" in ei.value.hint


def test_unsupported_argument_type():
    x = torch.empty(64)
    with pytest.raises(ArgumentError) as ei:
        workbench.compile(sk.vector_add, x, "not a tensor", x, 64, BLOCK=64)
    assert "y_ptr" in ei.value.message and "str" in ei.value.message
    assert "tensors" in ei.value.hint


def test_not_a_kernel():
    with pytest.raises(ArgumentError) as ei:
        workbench.compile(lambda x: x, 1)
    assert "not a Triton kernel" in ei.value.message and "@triton.jit" in ei.value.hint


@pytest.mark.parametrize("target", ["sm_50", "gfx942", "hopper"])
def test_unsupported_target(target):
    x = torch.empty(64)
    with pytest.raises(TargetError) as ei:
        workbench.compile(sk.vector_add, x, x, x, 64, BLOCK=64, target=target)
    assert repr(target) in ei.value.message and "sm_90" in ei.value.hint


def test_missing_tool(monkeypatch, tmp_path):
    # Triton falls back to the binary in its wheel; take that away too, as on a broken install
    from triton import knobs

    tool = type(knobs.nvidia).__dict__["nvdisasm"]
    monkeypatch.setattr(tool, "default_path", str(tmp_path / "gone" / "nvdisasm"))
    monkeypatch.setenv("TRITON_NVDISASM_PATH", str(tmp_path / "no-such-nvdisasm"))
    x = torch.empty(64)
    with pytest.raises(ToolError) as ei:
        workbench.compile(sk.vector_add, x, x, x, 64, BLOCK=32, num_warps=1)
    assert "nvdisasm" in ei.value.message and "triton==3.6.0" in ei.value.hint


def test_caret_sits_under_the_column():
    from workbench.errors import WorkbenchError

    e = WorkbenchError("bad", filename="f.py", lineno=3, col=8, source_line="    x = foo(1)")
    line, caret = str(e).splitlines()[1:3]
    assert line[caret.index("^")] == "f"


def test_first_mlir_error_finds_the_diagnostic_in_captured_stderr():
    from workbench.compile.driver import first_mlir_error

    text = (
        "some warning\n"
        'loc("/tmp/cell_3.py":42:7): error: \'ttg.local_load\' op result layout does not match\n'
        'loc("/tmp/cell_3.py":50:1): error: second\n'
    )
    assert first_mlir_error(text) == "cell_3.py:42:7: 'ttg.local_load' op result layout does not match"
    assert first_mlir_error("/x/k.py:3:4: error: bad op\n") == "k.py:3:4: bad op"
    assert first_mlir_error("nothing here\n") is None


def test_amend_extends_message_and_str():
    e = CompileError("the IR failed verification", filename="k.py", lineno=3, hint="simplify")
    e.amend("\n  MLIR: k.py:3:4: bad op")
    assert e.message.endswith("MLIR: k.py:3:4: bad op")
    assert "MLIR: k.py:3:4: bad op" in str(e) and "hint: simplify" in str(e)
