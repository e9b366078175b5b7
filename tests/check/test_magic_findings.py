"""The %%tlx magic runs the orchestration checks on every compiled kernel: a cell whose ring kernel's
consumer starts at the wrong phase gets a first-wait-passes error at its cell line, in the Report
payload and in the text/plain summary. Compile only (CPU tensors): safe on a GPU machine too."""

from __future__ import annotations

import pytest

pytest.importorskip("IPython")

from IPython.utils.capture import capture_output  # noqa: E402

from workbench.report import MIME_TYPE, validate  # noqa: E402

CELL = """import torch, triton, workbench
import triton.language as tl
import triton.language.extra.tlx as tlx
from triton.tools.tensor_descriptor import TensorDescriptor

@triton.jit
def ring(x_desc, out_ptr, K, BM: tl.constexpr, BK: tl.constexpr, STAGES: tl.constexpr):
    bufs = tlx.local_alloc((BM, BK), tl.float16, STAGES)
    full = tlx.alloc_barriers(STAGES, arrive_count=1)
    empty = tlx.alloc_barriers(STAGES, arrive_count=1)
    with tlx.async_tasks():
        with tlx.async_task("default"):
            for k in range(0, K // BK):
                s = k % STAGES
                tlx.barrier_wait(empty[s], ((k // STAGES) & 1) ^ 1)
                tlx.barrier_expect_bytes(full[s], BM * BK * 2)
                tlx.async_descriptor_load(x_desc, bufs[s], [0, k * BK], full[s])
        with tlx.async_task(num_warps=4):
            acc = tl.zeros([BM, BK], tl.float32)
            for k in range(0, K // BK):
                s = k % STAGES
                tlx.barrier_wait(full[s], ((k // STAGES) & 1) ^ 1)
                acc += tlx.local_load(bufs[s]).to(tl.float32)
                tlx.barrier_arrive(empty[s])
            offs = tl.arange(0, 64)[:, None] * 64 + tl.arange(0, 64)[None, :]
            tl.store(out_ptr + offs, acc.to(tl.float16))

x = torch.empty(64, 512, dtype=torch.float16)
out = torch.empty(64, 64, dtype=torch.float16)
art = workbench.compile(ring, TensorDescriptor(x, [64, 512], [512, 1], [64, 64]), out, 512, BM=64, BK=64, STAGES=3)
"""
WAIT_LINE = 23  # cell line of the consumer's barrier_wait on full (the %%tlx line is line 1)


def test_a_tlx_cell_reports_the_finding_at_its_cell_line(ip):
    assert "barrier_wait(full[s]" in ("%%tlx\n" + CELL).splitlines()[WAIT_LINE - 1]
    with capture_output(display=True) as cap:
        res = ip.run_cell("%%tlx\n" + CELL)
    assert res.success, res.error_in_exec
    [out] = [o for o in cap.outputs if MIME_TYPE in o.data]
    report = out.data[MIME_TYPE]
    validate(report)
    errors = [f for f in report["findings"] if f["severity"] == "error"]
    assert [(f["rule"], f["line"]) for f in errors] == [("first-wait-passes", WAIT_LINE)]
    assert errors[0]["hint"] and errors[0]["related"]
    assert f"line {WAIT_LINE}" in out.data["text/plain"] and "first-wait-passes" in out.data["text/plain"]
