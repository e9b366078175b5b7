"""The Stalls tab in a real JupyterLab (headless Chromium) on real samples: the warp-stall report an H100 recorded
for Meta's ``hopper_gemm_ws`` at 4096^3 (tests/measure/data, ``bench/stalls.py``), read here with the
``ncu-report`` package and placed on the kernel compiled here (``workbench.measure.stalls.from_report``): the
summary, a stacked bar per role, the lines and SASS instructions by samples, a click on a SASS row showing it in
Source & IR with the hot SASS lines shaded."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from browser_helpers import write_notebook
from lab_helpers import open_notebook, run_cell, wait_idle

from workbench.report import MIME_TYPE

expect = pytest.importorskip("playwright.sync_api").expect
pytest.importorskip("ncu_report")

pytestmark = [pytest.mark.browser, pytest.mark.slow]

REPORT = Path(__file__).resolve().parents[1] / "measure" / "data" / "meta_hopper_gemm_ws_4096.ncu-rep"
CELL = f"""from tlx_kernels import meta_tutorials as mt
from workbench.measure.stalls import from_report
from workbench.report import Report
art = mt.case("hopper_gemm_ws").compile()
rep = Report.from_artifact(art)
rep.measurements.append(from_report({str(REPORT)!r}, art))
rep"""


def test_the_stalls_tab_on_an_h100_report_of_metas_gemm(page, lab, artifacts):
    open_notebook(page, lab, write_notebook(lab[2], "stalls_h100.ipynb", [CELL]))
    run_cell(page, 0)
    wait_idle(page, 300_000)
    cells = page.evaluate("""() => window.jupyterapp.shell.currentWidget.content.widgets.map(c =>
        c.model.type === 'code' ? c.model.outputs.toJSON() : [])""")
    [data] = [o["data"][MIME_TYPE] for outs in cells for o in outs if MIME_TYPE in o.get("data", {})]
    [m] = [x for x in data["measurements"] if x["kind"] == "stalls"]
    viewer = page.locator(".jp-NotebookPanel:visible .tlx-viewer").first
    viewer.locator('.tlx-tab[data-tab="stalls"]').click()
    pane = viewer.locator(".tlx-stalls-pane")
    expect(pane.locator(".tlx-stalls-summary")).to_contain_text(f"{m['samples']} warp samples")
    expect(pane.locator(".tlx-stalls-summary")).to_contain_text("100.0% on a role and a line")
    pane.locator(".tlx-plot .main-svg").first.wait_for(timeout=60_000)
    roles = [r["role"] for r in m["roles"] if r["samples"]]
    for role in roles:  # one bar per role that has samples
        expect(pane.locator(".tlx-plot")).to_contain_text(role)
    tables = pane.locator(".tlx-stalls-table")
    expect(tables).to_have_count(2)
    hot = m["hot"][0]
    first = tables.nth(1).locator("tr").nth(1)
    expect(first).to_contain_text(hot["op"])
    viewer.screenshot(path=str(artifacts / "stalls-h100-meta-gemm.png"))
    first.click()  # the hottest instruction, shown in the SASS column of Source & IR
    sass = viewer.locator('.tlx-editor.tlx-stage[data-stage="sass"]')
    sass.wait_for(timeout=30_000)
    expect(sass).to_have_attribute("data-linked", re.compile(rf"(^|,){hot['sass_line']}(,|$)"), timeout=30_000)
    expect(sass.get_by_text(f"/*{hot['address']:04x}*/")).to_be_in_viewport()  # scrolled to it
    viewer.screenshot(path=str(artifacts / "stalls-h100-meta-gemm-sass.png"))
    assert not page.console_errors, page.console_errors
