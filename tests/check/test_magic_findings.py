"""The %%tlx magic runs the orchestration checks on every compiled kernel: a cell whose ring kernel's
consumer starts at the wrong phase gets a first-wait-passes error at its cell line, in the Report
payload and in the text/plain summary. Compile only (CPU tensors): safe on a GPU machine too."""

from __future__ import annotations

import pytest

pytest.importorskip("IPython")

from IPython.utils.capture import capture_output  # noqa: E402
from sample_kernels import RING_KERNELS, kernel_text  # noqa: E402

from workbench.report import MIME_TYPE, validate  # noqa: E402

# the ring kernel whose consumer starts at the wrong phase (tests/check/ring_kernels.py), compiled in a cell
CELL = """import torch, triton, workbench
import triton.language as tl
import triton.language.extra.tlx as tlx
from triton.tools.tensor_descriptor import TensorDescriptor

""" + kernel_text("first_wait_passes", RING_KERNELS) + """
x = torch.empty(64, 512, dtype=torch.float16)
out = torch.empty(64, 64, dtype=torch.float16)
art = workbench.compile(first_wait_passes, TensorDescriptor(x, [64, 512], [512, 1], [64, 64]), out, 512,
                        BM=64, BK=64, STAGES=3)
"""
# cell line of the consumer's barrier_wait on full (the %%tlx line is line 1)
WAIT_LINE = next(i for i, ln in enumerate(("%%tlx\n" + CELL).splitlines(), 1) if "# BUG: first-wait-passes" in ln)


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
