"""No false positives on the tutorials' own kernels: every ``%%tlx`` cell of tutorials 01-03 (the kernels
written in the notebooks, and the library kernel tutorial 02 runs last), compiled in-process without a
GPU after the notebook's setup cell, gets a Report whose static checks ran and found no error or warning; Meta's
kernel that tutorial 02 compares ours with gets exactly the warnings the tutorial discusses.
The notebooks as a whole are executed by tests/tutorials; this runs only the cells that compile."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("IPython")

from IPython.utils.capture import capture_output  # noqa: E402

from workbench.report import MIME_TYPE  # noqa: E402

TUTORIALS = Path(__file__).resolve().parents[2] / "tutorials"
CELLS = {"01-producer-consumer-gemm": 4, "02-flash-attention": 7, "03-broadcast-fusion": 1}  # %%tlx cells
# Kernels tutorial 02 compares ours with, not ours: what the checks must find in them (a true finding the tutorial
# reads): Meta's persistent ping-pong FA, whose async dots Triton waits for at issue
EXPECTED = {"_attn_fwd_ws_pipelined_pingpong_persistent": [("dot-waited-at-issue", "warning")] * 2}

pytestmark = pytest.mark.slow


def _cells(name: str) -> tuple[list[str], list[str]]:
    """(the setup cells: imports and tensors, the %%tlx cells) of a tutorial, in order."""
    nb = json.loads((TUTORIALS / f"{name}.ipynb").read_text())
    code = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    return [c for c in code if c.lstrip().startswith("import")], [c for c in code if c.startswith("%%tlx")]


@pytest.mark.parametrize("name", list(CELLS))
def test_the_tutorials_kernels_get_no_error_or_warning(ip, name, monkeypatch):
    monkeypatch.setenv("TLX_WORKBENCH_NO_GPU", "1")
    monkeypatch.chdir(TUTORIALS)
    setup, tlx_cells = _cells(name)
    assert len(tlx_cells) == CELLS[name]
    for cell in setup:
        assert ip.run_cell(cell).success, cell[:80]
    reports = []
    for cell in tlx_cells:
        with capture_output(display=True) as cap:
            res = ip.run_cell(cell)
        assert res.success, (cell.splitlines()[0], res.error_in_exec)
        reports += [o.data[MIME_TYPE] for o in cap.outputs if MIME_TYPE in o.data]
    assert len(reports) == len(tlx_cells)
    for r in reports:
        said = [(f["rule"], f["severity"], f["line"], f["message"]) for f in r["findings"]
                if f["severity"] != "info" or f["rule"] == "checks-failed"]
        expected = EXPECTED.get(r["kernel"]["name"], [])
        assert [x[:2] for x in said] == expected, (r["kernel"]["name"], said)
