"""%%tlx --search in a real JupyterLab: the progress bar while it runs, then the Report with a Search tab whose
table sorts, and whose row buttons ask the kernel for that candidate's Report (docked beside the notebook); a
second cell diffs against a row. On a CPU (compile-only: the real compiles, on a local Ray cluster)."""

from __future__ import annotations

import pytest
from browser_helpers import write_notebook
from lab_helpers import open_notebook, run_cell, wait_idle

expect = pytest.importorskip("playwright.sync_api").expect

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SETUP = """import torch
x = torch.randn(4096)
y = torch.empty(4096)"""

SEARCH_CELL = """%%tlx --search "BLOCK=[128,256,512] num_warps=[4,8]" --check "y: x * 2" -o s
@triton.jit
def scale(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)

scale[lambda meta: (triton.cdiv(4096, meta["BLOCK"]),)](x, y, 4096, BLOCK=64)"""

DIFF_CELL = """%%tlx --diff "s.report(5)" --search "BLOCK=[128]"
scale[lambda meta: (triton.cdiv(4096, meta["BLOCK"]),)](x, y, 4096, num_warps=4)"""


def test_search_cell_progress_table_and_candidate_reports(page, lab, artifacts):
    name = write_notebook(lab[2], "search.ipynb", ["%load_ext workbench", SETUP, SEARCH_CELL, DIFF_CELL])
    open_notebook(page, lab, name)
    run_cell(page, 0)
    wait_idle(page)
    run_cell(page, 1)
    wait_idle(page)
    run_cell(page, 2)
    cell = page.locator(".jp-NotebookPanel:visible .jp-Notebook .jp-Cell").nth(2)
    bar = cell.locator(".jupyter-widgets .widget-label, .jupyter-widgets code").first
    bar.wait_for(timeout=120_000)  # the progress widget, while Ray starts and the candidates compile
    page.screenshot(path=str(artifacts / "search-progress.png"))
    viewer = cell.locator(".tlx-viewer").first
    viewer.wait_for(timeout=600_000)
    wait_idle(page, 600_000)
    expect(cell.locator(".jupyter-widgets code").first).to_contain_text("6 candidates", timeout=30_000)

    viewer.locator('.tlx-tab[data-tab="search"]').click()
    table = viewer.locator(".tlx-search-table")
    expect(table.locator("tbody tr")).to_have_count(6)
    expect(viewer.locator(".tlx-search-summary")).to_contain_text("6 candidates of scale")
    statuses = table.locator("tbody tr").evaluate_all("rows => rows.map(r => r.dataset.status)")
    assert statuses == ["compiled"] * 6, statuses
    page.screenshot(path=str(artifacts / "search-tab.png"))

    # sorted by candidate; a click on that header reverses it, a click on another sorts by that one
    table.locator('th[data-col="index"]').click()
    order = table.locator("tbody tr").evaluate_all("rows => rows.map(r => Number(r.dataset.index))")
    assert order == [5, 4, 3, 2, 1, 0], order
    table.locator('th[data-col="cfg:num_warps"]').click()
    warps = table.locator("tbody tr").evaluate_all("rows => rows.map(r => r.children[2].textContent)")
    assert warps == ["4", "4", "4", "8", "8", "8"], warps

    # a row's Report: the kernel displays candidate 5's Report, docked beside the notebook
    table.locator('tbody tr[data-index="5"] .tlx-search-open').click()
    docked = page.locator(".tlx-docked-panel .tlx-viewer")
    docked.wait_for(timeout=60_000)
    expect(viewer.locator(".tlx-search-status")).to_contain_text("open beside", timeout=30_000)
    assert docked.locator(".tlx-kernel-name").inner_text() == "scale"
    docked.locator('.tlx-tab[data-tab="search"]').click()
    expect(docked.locator('.tlx-search-table tbody tr.tlx-search-shown')).to_have_attribute("data-index", "5")
    page.screenshot(path=str(artifacts / "search-candidate-docked.png"))

    # another cell diffs against that row
    run_cell(page, 3)
    diff_cell = page.locator(".jp-NotebookPanel:visible .jp-Notebook .jp-Cell").nth(3)
    diff_viewer = diff_cell.locator(".tlx-viewer").first
    diff_viewer.wait_for(timeout=600_000)
    wait_idle(page, 600_000)
    expect(diff_viewer.locator('.tlx-tab[data-tab="changes"]')).to_have_count(1)
    diff_viewer.locator('.tlx-tab[data-tab="changes"]').click()  # the earlier Report as the user named it
    expect(diff_viewer.locator(".tlx-changes-pane .tlx-layout-note").first).to_contain_text(
        "Compared with s.report(5) (")
    page.screenshot(path=str(artifacts / "search-diff-changes.png"))
    # its one candidate (BLOCK=128, 4 warps) was compiled by the search above: Triton's cache served it
    diff_viewer.locator('.tlx-tab[data-tab="search"]').click()
    compile_col = diff_viewer.locator(".tlx-search-table thead th").evaluate_all(
        "hs => hs.findIndex(h => h.dataset.col === 'compile_s')")
    cells = diff_viewer.locator(".tlx-search-table tbody tr").evaluate_all(
        f"rows => rows.map(r => r.children[{compile_col}].textContent)")
    assert cells == ["cached"], cells
    page.screenshot(path=str(artifacts / "search-diff.png"))

    # the search cell run again (the kernel defined anew, same source): every row is the one kept on disk (no
    # compile, no cluster), each saying when it was measured
    run_cell(page, 2)
    viewer = cell.locator(".tlx-viewer").first
    viewer.wait_for(timeout=120_000)
    wait_idle(page, 120_000)
    viewer.locator('.tlx-tab[data-tab="search"]').click()
    expect(viewer.locator('.tlx-search-table thead th[data-col="cached"]')).to_have_text("kept from")
    col = viewer.locator(".tlx-search-table thead th").evaluate_all(
        "hs => hs.findIndex(h => h.dataset.col === 'cached')")
    kept = viewer.locator(".tlx-search-table tbody tr").evaluate_all(
        f"rows => rows.map(r => r.children[{col}].textContent)")
    assert len(kept) == 6 and all(k.startswith("20") for k in kept), kept
    expect(viewer.locator(".tlx-search-summary")).to_contain_text("6 of 6 rows kept")
    page.screenshot(path=str(artifacts / "search-kept.png"))
    assert not page.console_errors, page.console_errors
