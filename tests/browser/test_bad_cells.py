"""Issue 25's crash, in a real JupyterLab: an unmasked kernel under --check used to take the Jupyter kernel down
(heap corruption in Triton's interpreter). Now the cell shows the error at its line and the next cell runs with
its tensors intact."""

from __future__ import annotations

import pytest
from browser_helpers import write_notebook
from lab_helpers import open_notebook, run_cell, wait_idle
from sample_kernels import oob_check_cell

expect = pytest.importorskip("playwright.sync_api").expect

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SETUP = "import torch\nx = torch.randn(1024)\ny = torch.empty(1024)"
OOB = oob_check_cell()
AFTER = "print('alive', x.shape[0], bool(torch.isfinite(x).all()))"


def test_out_of_bounds_with_check_fails_at_its_line_and_the_notebook_lives(page, lab, artifacts):
    name = write_notebook(lab[2], "oob.ipynb", ["%load_ext workbench", SETUP, OOB, AFTER])
    open_notebook(page, lab, name)
    for i in range(3):
        run_cell(page, i)
        wait_idle(page, 300_000)
    cells = page.locator(".jp-NotebookPanel:visible .jp-Notebook .jp-Cell")
    # the error, not the cell's status line (emptied in place when the cell ends, but still an output)
    err = cells.nth(2).locator(".jp-OutputArea-output", has_text="OutOfBoundsError")
    expect(err).to_have_count(1, timeout=120_000)
    text = err.inner_text()
    assert "Cell line 6" in text and "elements 1024..2047" in text, text
    run_cell(page, 3)
    wait_idle(page, 120_000)
    expect(cells.nth(3).locator(".jp-OutputArea-output").first).to_contain_text("alive 1024 True", timeout=60_000)
    page.screenshot(path=str(artifacts / "oob-check.png"))
    assert not page.locator(".jp-Dialog").count()  # no "kernel died" dialog
