"""One test per rule of TLX_API.md's last section: the message and the user's line."""

from __future__ import annotations

import inspect

import diag_kernels as D
import pytest

from workbench.errors import CompileError
from workbench.tlx import TLXCompileError


def err_line(kernel) -> int:
    lines, first = inspect.getsourcelines(kernel.fn)
    return first + next(i for i, ln in enumerate(lines) if "# ERR" in ln)


def diag(kernel, args, **kw) -> TLXCompileError:
    with pytest.raises(TLXCompileError) as ei:
        kernel.trace(args, kw)
    e = ei.value
    assert isinstance(e, CompileError)
    assert e.filename == D.__file__
    assert e.lineno == err_line(kernel), (e.lineno, err_line(kernel), str(e))
    assert e.hint or e.rule == "unsupported"
    assert "Traceback" not in str(e)
    return e


def _x(n=1024, dtype=None):
    import torch

    return torch.empty(n, dtype=dtype or torch.float32)


def test_task_outside_async_tasks():
    e = diag(D.task_outside, (_x(),), BLOCK=128)
    assert e.rule == "task-outside"
    assert "only allowed directly inside `with tlx.async_tasks():`" in e.message


def test_replica_id_outside_replicated_task():
    e = diag(D.replica_outside, (_x(),), BLOCK=128)
    assert e.rule == "replica-id"
    assert "async_task_replica_id() is only meaningful inside a replicated task" in e.message
    assert "replicate=" in e.hint


def test_more_warps_than_a_cta_holds():
    e = diag(D.too_many_warps, (_x(),), BLOCK=128, num_warps=4)
    assert e.rule == "warps"
    assert "36 warps" in e.message and "at most 32 warps" in e.message


def test_buffer_index_out_of_range():
    e = diag(D.index_out_of_range, (_x(),), BLOCK=128)
    assert e.rule == "index-range"
    assert "buffer index 2 is out of range" in e.message and "holds 2 buffers" in e.message


def test_async_dot_b_must_be_shared():
    e = diag(D.dot_b_in_registers, (_x(),), BM=64, BN=64, BK=32)
    assert e.rule == "dot-operand"
    assert "operand b must be a shared-memory buffer" in e.message and "register tensor" in e.message


def test_async_dot_shape_mismatch():
    e = diag(D.dot_shape_mismatch, (_x(),), BM=64, BN=64, BK=32)
    assert e.rule == "dot-shape"
    assert "a is [64, 32], b is [64, 64]" in e.message


def test_async_dot_dtype_mismatch():
    e = diag(D.dot_dtype_mismatch, (_x(),), BM=64, BN=64, BK=32)
    assert e.rule == "dot-dtype"
    assert "a is bf16 but b is fp16" in e.message


def test_expect_bytes_mismatch():
    import torch
    from triton.tools.tensor_descriptor import TensorDescriptor

    t = torch.empty(128, 128, dtype=torch.bfloat16)
    desc = TensorDescriptor(t, [128, 128], [128, 1], [64, 64])
    e = diag(D.expect_bytes_mismatch, (desc,), BM=64, BK=64)
    assert e.rule == "expect-bytes"
    assert "expects 8192 bytes" in e.message and "bring 16384 bytes (8192 + 8192)" in e.message


def test_shared_memory_over_limit():
    e = diag(D.smem_over_limit, (_x(),), BM=128, BK=128)
    assert e.rule == "smem"
    # 8 x 32 KiB + 2 x 32 KiB = 327680 bytes, 95232 over 232448
    assert "327680 bytes, 95232 over the device limit of 232448" in e.message
    assert "a 8x[128, 128] bf16 = 262144 B" in e.message and "b 2x[128, 128]" in e.message


def test_unsupported_tl_call_is_named():
    e = diag(D.unsupported_tl_dot, (_x(64 * 64),), BM=64)
    assert e.rule == "unsupported"
    assert "tl.dot is not supported by the TLX lowering" in e.message
    assert "tlx.async_dot" in e.hint


def test_unsupported_tlx_feature_is_named():
    e = diag(D.unsupported_remote_arrive, (_x(),))
    assert e.rule == "unsupported"
    assert "remote_cta_rank" in e.message


def test_register_tensor_captured_by_a_task():
    e = diag(D.register_tensor_into_task, (_x(),), BLOCK=128)
    assert e.rule == "capture"
    assert "register tensor `offs`" in e.message


def test_statement_between_tasks():
    e = diag(D.statement_between_tasks, (_x(),), BLOCK=128)
    assert e.rule == "task"


def test_diagnostic_through_workbench_compile():
    from workbench.compile import compile as wb_compile

    with pytest.raises(TLXCompileError) as ei:
        wb_compile(D.index_out_of_range, _x(), BLOCK=128)
    assert ei.value.lineno == err_line(D.index_out_of_range)


@pytest.mark.parametrize("rule", ["smem", "expect-bytes"])
def test_whole_kernel_checks_through_workbench_compile(rule):
    # these two run after the trace (TLXASTSource.make_ir), on the compile path as on trace()
    import torch
    from triton.tools.tensor_descriptor import TensorDescriptor

    from workbench.compile import compile as wb_compile

    if rule == "smem":
        kernel, args, kw = D.smem_over_limit, (_x(),), dict(BM=128, BK=128)
    else:
        t = torch.empty(128, 128, dtype=torch.bfloat16)
        kernel, args, kw = (
            D.expect_bytes_mismatch,
            (TensorDescriptor(t, [128, 128], [128, 1], [64, 64]),),
            dict(BM=64, BK=64),
        )
    with pytest.raises(TLXCompileError) as ei:
        wb_compile(kernel, *args, **kw)
    assert ei.value.rule == rule
    assert ei.value.lineno == err_line(kernel)


@pytest.mark.parametrize("name", ["index_out_of_range", "dot_shape_mismatch", "smem_over_limit"])
def test_launch_path_compile_raises_the_diagnostic(name):
    """What ``kernel[grid]`` does on a cache miss, without a GPU: ``triton.compile`` of the kernel's source
    with no lowering context around it (TLXASTSource activates one for the trace). The diagnostic must
    come out at the user's line, through Triton's own traceback filtering (whose walk of the exception
    chain would never end if the chain had a cycle)."""
    import triton

    kernel = getattr(D, name)
    kw = {"index_out_of_range": dict(BLOCK=128), "smem_over_limit": dict(BM=128, BK=128)}.get(
        name, dict(BM=64, BN=64, BK=32)
    )
    src, target, _backend, options = kernel.specialize((_x(),), kw)
    with pytest.raises(TLXCompileError) as ei:
        triton.compile(src, target=target, options=options.__dict__)
    assert ei.value.lineno == err_line(kernel) and ei.value.filename == D.__file__
    seen, todo = [], [ei.value]
    while todo:
        e = todo.pop()
        assert not any(e is s for s in seen), "cycle in the exception chain"
        seen.append(e)
        todo += [x for x in (e.__cause__, e.__context__) if x is not None]
