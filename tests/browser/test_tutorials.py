"""Every tutorial in a live JupyterLab: run all cells, then for every %%tlx cell check that each of
its Reports is shown by the viewer with linked lines (source -> stage -> source, the exact lines of
the Report's line map), the tabs the Report has data for (and only those), what ran, was checked and
measured or why not, and that the browser logged no error. Parametrized over tutorials/*.ipynb."""

from __future__ import annotations

import importlib.util
import re
import shutil
from pathlib import Path

import pytest
from lab_helpers import linked, linked_source, open_notebook, pin_line, run_all, unpin_line, wait_all_ran

from workbench.report import MIME_TYPE, Report
from workbench.report.summaries import measurement_line

expect = pytest.importorskip("playwright.sync_api").expect

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
TUTORIALS = sorted((ROOT / "tutorials").glob("*.ipynb"))

# The cells of the open notebook as the front end holds them: source and outputs (nbformat JSON).
CELLS_JS = """() => window.jupyterapp.shell.currentWidget.content.widgets.map(c => ({
  type: c.model.type,
  source: c.model.sharedModel.getSource(),
  outputs: c.model.type === 'code' ? c.model.outputs.toJSON() : []
}))"""

def expected_tabs(r: Report) -> set[str]:
    tabs = {"code", "layouts"}
    if r.orchestration:
        tabs.add("orchestration")
    if r.timeline and r.timeline.get("status", "ok") == "ok":
        tabs.add("timeline")
    if any(m.get("kind") == "roofline" and m.get("status", "ok") == "ok" for m in r.measurements):
        tabs.add("roofline")
    if any(m.get("kind") == "stalls" and m.get("status") == "ok" for m in r.measurements):
        tabs.add("stalls")
    if r.previous:
        tabs.add("changes")
    return tabs


def check_linking(page, viewer, report: Report, shots: Path) -> None:
    stage = viewer.locator('.tlx-stage-picker[data-column="0"]').input_value()
    lmap = report.line_map(stage)
    first = report.kernel["source"]["first_line"]
    users = sorted(u for u in lmap if u >= first)
    assert users, f"no user line maps to {stage}"
    user = users[len(users) // 2]
    toolbar = viewer.locator(".tlx-code-toolbar")
    height = toolbar.bounding_box()["height"]
    pin_line(viewer, ".tlx-source", user)
    assert toolbar.bounding_box()["height"] == height  # a longer status never moves the code
    assert linked(viewer, stage) == sorted(set(lmap[user])), (user, stage)
    assert viewer.locator(".tlx-source .cm-scroller").evaluate("e => e.scrollLeft") == 0
    # and back: a highlighted stage line lights its source lines
    target = lmap[user][0]
    pin_line(viewer, f'.tlx-stage[data-stage="{stage}"]', target, stage)
    assert user in linked_source(viewer)
    viewer.screenshot(path=str(shots / "linked.png"))


def shows_text(item, text: str) -> None:
    """``item`` holds ``text``. Its DOM text, not its rendered text: JupyterLab skips the rendering of cells out of
    view (windowing mode contentVisibility), and a notebook still laying out outputs above can push an item out of
    view again after it was scrolled to, so its innerText read empty now and then (two fresh-clone runs of 2026-12-05
    failed so, one here and one on the fold below); the screenshots show the rendering."""
    item.scroll_into_view_if_needed()
    expect(item).to_contain_text(text, timeout=15_000)


def check_header(viewer, report: Report) -> None:
    folds = viewer.locator(".tlx-muted-fold")  # what a launch that did not run skipped: one line, folded
    assert folds.count() <= 1
    if folds.count():
        fold = folds.first
        fold.scroll_into_view_if_needed()
        assert fold.get_attribute("open") is None
        expect(fold.locator("summary")).to_contain_text("not run either: ", timeout=15_000)  # DOM text: see shows_text
        fold.locator("summary").click()
    checks = viewer.locator(".tlx-check")
    assert checks.count() == len(report.checks)
    for i, c in enumerate(report.checks):
        assert checks.nth(i).get_attribute("data-status") == c["status"]
        shows_text(checks.nth(i), c["message"])  # a skipped check says why
    for m in list(report.measurements) + ([report.timeline] if report.timeline else []):
        item = viewer.locator(f'.tlx-measured[data-kind="{m["kind"]}"]')
        assert item.count() == 1, m["kind"]
        if m.get("status", "ok") != "ok":
            shows_text(item, measurement_line(m))


def check_flags(viewer, report: Report, shots: Path) -> None:
    """Every finding and diagnostic at a source line marks that line in the source pane, its message on hover."""
    lines = sorted({f["line"] for f in report.findings if f.get("line")}
                   | {d["line"] for d in report.diagnostics if d.get("line") and d.get("source") != "run"})
    # a cell that launches a kernel an earlier cell defined shows that cell's source, says so, and marks its
    # %%tlx line as that cell's
    ksrc = report.kernel.get("source") or {}
    elsewhere = ksrc.get("in_cell") is False and bool(ksrc.get("text"))
    if elsewhere and re.match(r"%%?tlx\b", ksrc["text"]):
        lines = sorted(set(lines) | {1})
    # a waiting assertion, not inner_text(): a notebook's windowing may not have laid the cell out yet ('')
    viewer.scroll_into_view_if_needed()
    expect(viewer.locator(".tlx-source-col .tlx-col-title")).to_have_text(
        "source: the cell that defined the kernel" if elsewhere else "source", timeout=30_000)
    src = viewer.locator(".tlx-editor.tlx-source")
    flagged = src.get_attribute("data-flagged") or ""
    assert sorted(int(x) for x in flagged.split(",") if x) == lines, (flagged, lines)
    if lines:
        pin_line(viewer, ".tlx-source", lines[0])  # brings it into view
        mark = src.locator(".cm-line.tlx-flag").first
        expect(mark).to_be_visible()
        assert mark.get_attribute("title"), "a marked line says why on hover"
        viewer.screenshot(path=str(shots / "source-flags.png"))
        unpin_line(viewer, ".tlx-source", lines[0])


def check_tabs(viewer, report: Report, shots: Path) -> None:
    buttons = viewer.locator(".tlx-tab")
    tabs = {buttons.nth(i).get_attribute("data-tab") for i in range(buttons.count())}
    assert tabs == expected_tabs(report)
    content = {
        "layouts": ".tlx-layouts-pane .tlx-values, .tlx-layouts-pane .tlx-empty",
        "orchestration": ".tlx-orch-pane .tlx-orch-graph, .tlx-orch-pane .tlx-plot-status",
        "roofline": ".tlx-roofline-pane .tlx-plot-summary",
        "timeline": ".tlx-timeline-pane .tlx-plot-caption",
        "changes": ".tlx-changes-pane .tlx-stage-changes",
        "stalls": ".tlx-stalls-pane .tlx-stalls-summary",
    }
    for tab in sorted(tabs - {"code"}):
        viewer.locator(f'.tlx-tab[data-tab="{tab}"]').click()
        viewer.locator(content[tab]).first.wait_for(timeout=60_000)
        if tab == "roofline":  # a chart when there is something to place, else what is missing (no empty chart)
            roof = next(m for m in report.measurements if m.get("kind") == "roofline")
            placed = roof.get("intensity") is not None or any(p.get("tflops") for p in roof.get("points") or [])
            viewer.locator(".tlx-roofline-pane .js-plotly-plot" if placed else ".tlx-roofline-missing").wait_for(
                timeout=60_000)
        if tab == "layouts" and report.layouts.get("values"):
            # the first row is drawn without a click, beside the tables (not under them)
            expect(viewer.locator(".tlx-values tbody tr").first).to_have_class(re.compile("tlx-selected"))
            tables, side = (viewer.locator(s).bounding_box() for s in (".tlx-layout-tables", ".tlx-layout-side"))
            assert side["x"] >= tables["x"] + tables["width"], (tables, side)
            viewer.locator(".tlx-values tbody tr").first.click()
            viewer.locator(".tlx-layout-drawing canvas, .tlx-layout-drawing .tlx-layout-note").first.wait_for()
        viewer.screenshot(path=str(shots / f"tab-{tab}.png"))
    viewer.locator('.tlx-tab[data-tab="code"]').click()


def check_viewer(page, viewer, report: Report, shots_prefix: Path) -> None:
    """One Report's viewer: its kernel's name, header, lines linked both ways, its tabs (screenshots under
    ``<shots_prefix>-<kernel>``)."""
    viewer.scroll_into_view_if_needed()
    expect(viewer.locator(".tlx-kernel-name")).to_have_text(report.name)
    slug = re.sub(r"\W", "_", report.name)
    shots = shots_prefix.with_name(f"{shots_prefix.name}-{slug}")
    shots.mkdir(parents=True, exist_ok=True)
    check_header(viewer, report)
    check_flags(viewer, report, shots)
    check_linking(page, viewer, report, shots)
    check_tabs(viewer, report, shots)


def run_tutorial(page, lab, path: Path) -> list[dict]:
    """Copy a tutorial into the lab's root, open it, run all its cells; its code cells as the front end holds them."""
    root = lab[2]
    (root / "tutorials").mkdir(exist_ok=True)
    shutil.copy(path, root / "tutorials" / path.name)
    open_notebook(page, lab, f"tutorials/{path.name}")
    run_all(page)
    wait_all_ran(page, timeout=600_000)
    return [c for c in page.evaluate(CELLS_JS) if c["type"] == "code"]


@pytest.mark.parametrize("path", TUTORIALS, ids=lambda p: p.stem)
def test_tutorial_reports_render(page, lab, artifacts, path):
    cells = run_tutorial(page, lab, path)
    errors = [o for c in cells for o in c["outputs"] if o.get("output_type") == "error"]
    assert not errors, [f"{e['ename']}: {e['evalue']}" for e in errors]
    code_cells = page.locator(".jp-NotebookPanel:visible .jp-CodeCell")
    tlx_cells = [i for i, c in enumerate(cells) if c["source"].lstrip().startswith("%%tlx")]
    assert tlx_cells, f"{path.name} has no %%tlx cell"
    for i in tlx_cells:
        outs = cells[i]["outputs"]
        reports = [Report.from_dict(o["data"][MIME_TYPE]) for o in outs if MIME_TYPE in o.get("data", {})]
        assert reports, f"cell {i} shows no Report"
        viewers = code_cells.nth(i).locator(".tlx-viewer")
        expect(viewers).to_have_count(len(reports), timeout=60_000)
        assert code_cells.nth(i).locator(".tlx-render-error").count() == 0
        for k, report in enumerate(reports):
            check_viewer(page, viewers.nth(k), report, artifacts / "tutorials" / path.stem / f"cell{i:02d}")
    assert not page.console_errors, page.console_errors


@pytest.mark.parametrize("path", TUTORIALS, ids=lambda p: p.stem)
def test_tutorial_as_run_on_the_h200_reopens(page, lab, artifacts, path):
    """The tutorial as a GPU (H200, or H100 where no H200 came) executed it, opened as a saved notebook (nothing
    runs, no GPU here): every Report renders from its stored payload with its GPU measurements, timelines and
    checks, lines linked."""

    spec = importlib.util.spec_from_file_location("bench_recordings", ROOT / "testbed" / "recordings.py")
    recordings = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(recordings)
    rec = recordings.newest_recording(path.stem)
    if rec is None:
        pytest.skip(f"no H200 recording of {path.name}")
    gpu = recordings.recorded_on(rec)
    root = lab[2]
    (root / "recorded").mkdir(exist_ok=True)
    (root / "recorded" / path.name).write_bytes(rec.read_bytes())
    open_notebook(page, lab, f"recorded/{path.name}")
    cells = [c for c in page.evaluate(CELLS_JS) if c["type"] == "code"]
    code_cells = page.locator(".jp-NotebookPanel:visible .jp-CodeCell")
    shown = 0
    for i, cell in enumerate(cells):
        reports = [Report.from_dict(o["data"][MIME_TYPE]) for o in cell["outputs"] if MIME_TYPE in o.get("data", {})]
        if not reports:
            continue
        viewers = code_cells.nth(i).locator(".tlx-viewer")
        expect(viewers).to_have_count(len(reports), timeout=60_000)
        for k, report in enumerate(reports):
            viewer = viewers.nth(k)
            check_viewer(page, viewer, report, artifacts / "recorded" / path.stem / f"cell{i:02d}")
            compile_only = "--compile-only" in (report.cell.get("magic_line") or "")  # tutorial 04's hanging bugs
            # a Report recorded before 2.7 carries no run line in words: the viewer shows its stored fields
            shows_text(viewer.locator(".tlx-run-status"), "--compile-only" if compile_only else gpu)
            shown += 1
    assert shown, f"{rec.name} shows no Report"
    assert not page.console_errors, page.console_errors


def test_tutorial01_knob_widget_reruns_a_step(page, lab, artifacts):
    """A reader turns a knob of tutorial 01's step 3 in the browser (the ipywidgets dropdown): the step is
    compiled again (no GPU here) and its row joins the table under the controls, with the compiler's facts."""
    cells = run_tutorial(page, lab, next(p for p in TUTORIALS if p.name.startswith("01-")))
    i = next(n for n, c in enumerate(cells) if "knobs3 = W.knobs(" in c["source"])
    cell = page.locator(".jp-NotebookPanel:visible .jp-CodeCell").nth(i)
    cell.scroll_into_view_if_needed()
    widget = cell.locator(".widget-vbox").first
    expect(widget).to_contain_text("NUM_STAGES=3", timeout=60_000)  # the cell's own try
    rows = widget.locator("table tr")
    before = rows.count()
    stages = widget.locator(".widget-dropdown", has=page.locator(".widget-label", has_text="NUM_STAGES"))
    stages.locator("select").select_option(label="5")
    expect(widget).to_contain_text("last try: NUM_STAGES=5", timeout=180_000)
    expect(rows).to_have_count(before + 1)
    new_row = rows.nth(before)
    shows_text(new_row, "compiled only: over the shared-memory limit")
    expect(new_row.locator("td").first).to_have_text("NUM_STAGES=5")
    expect(new_row).not_to_contain_text("error")
    widget.screenshot(path=str(artifacts / "tutorial01-knobs.png"))
    assert not page.console_errors, page.console_errors
