"""The TLX Workbench JupyterLab extension in a real browser against a real `jupyter lab`."""

from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path

import pytest
from browser_helpers import DOT_LINE, EVIL, MIME, evil_report, write_notebook
from lab_helpers import (
    linked,
    linked_source,
    open_notebook,
    pin_line,
    run_cell,
    unpin_line,
    wait_idle,
)

from workbench.report import Report, validate

expect = pytest.importorskip("playwright.sync_api").expect

pytestmark = [pytest.mark.browser, pytest.mark.slow]

MATMUL_CELL = """%%tlx --stages ptx,sass
@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K,
                  stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + offs_m[:, None] * stride_am + offs_k[None, :] * stride_ak
    b_ptrs = b_ptr + offs_k[:, None] * stride_bk + offs_n[None, :] * stride_bn
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptrs)
        b = tl.load(b_ptrs)
        acc = tl.dot(a, b, acc)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk
    c_ptrs = c_ptr + offs_m[:, None] * stride_cm + offs_n[None, :] * stride_cn
    tl.store(c_ptrs, acc.to(tl.float16))

M = N = K = 256
a = torch.randn((M, K), dtype=torch.float16, device=DEVICE)
b = torch.randn((K, N), dtype=torch.float16, device=DEVICE)
c = torch.empty((M, N), dtype=torch.float16, device=DEVICE)
grid = (M // 128, N // 128)
matmul_kernel[grid](a, b, c, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                    c.stride(0), c.stride(1), BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, num_warps=4)
"""


MATMUL_DOT_LINE = 1 + next(i for i, ln in enumerate(MATMUL_CELL.splitlines()) if "tl.dot" in ln)


# --------------------------------------------------------------------------------------------


def test_extension_is_installed(lab):
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "jupyter", "labextension", "list"], capture_output=True, text=True, timeout=120
    )
    text = out.stdout + out.stderr
    line = next((ln for ln in text.splitlines() if "tlx-workbench" in ln), "")
    assert line, text
    assert "enabled" in line and "OK" in line, line


def test_report_markup_is_text_and_features_work(page, lab, artifacts):
    """A Report whose strings contain <script> and onerror= is shown as text and runs nothing."""
    _, _, root = lab
    report = evil_report()
    validate(report)  # hand-made, but exactly what the schema (and so the Python side) allows
    (root / "evil.json").write_text(json.dumps(report))
    name = write_notebook(
        root,
        "evil.ipynb",
        [
            "import json\nfrom IPython.display import display\n"
            "r = json.load(open('evil.json'))\n"
            f"display({{{MIME!r}: r, 'text/html': '<b class=\"tlx-html-fallback\">fallback</b>', "
            "'text/plain': 'TLX report'}, raw=True)",
        ],
    )
    open_notebook(page, lab, name)
    run_cell(page, 0)
    viewer = page.locator(".jp-NotebookPanel:visible .jp-OutputArea .tlx-viewer").first
    viewer.wait_for(timeout=120_000)
    page.wait_for_timeout(500)
    page.screenshot(path=str(artifacts / "evil-report.png"))

    # The renderer outranks the HTML fallback, and markup stays text.
    assert page.locator(".tlx-html-fallback").count() == 0
    assert viewer.locator(".tlx-kernel-name").inner_text() == f"evil_kernel{EVIL}"
    assert viewer.locator("script, img, iframe, svg[onload]").count() == 0
    assert EVIL in viewer.locator(".tlx-diag-msg").first.inner_text()  # the finding
    assert EVIL in viewer.locator(".tlx-related").inner_text()
    assert viewer.locator(".tlx-bench").inner_text() == "median 0.01230 ms \u00b7 120.0 TFLOP/s"
    assert page.evaluate("window.__tlxPwned") is None

    # Header facts.
    assert viewer.locator('[data-fact="warps"] .tlx-fact-value').inner_text() == "4"
    assert viewer.locator('[data-fact="registers"] .tlx-fact-value').inner_text() == "90"
    assert viewer.locator('[data-fact="shared"] .tlx-fact-value').inner_text() == "32 KiB"
    assert viewer.locator('[data-fact="target"] .tlx-fact-value').inner_text() == "sm_90a"

    # view.stages_first puts PTX first; clicking the tl.dot line highlights its PTX lines.
    assert viewer.locator('.tlx-stage-picker[data-column="0"]').input_value() == "ptx"
    pin_line(viewer, ".tlx-source", DOT_LINE)
    ptx_lines = linked(viewer, "ptx")
    assert len(ptx_lines) == 3, ptx_lines
    hl = viewer.locator('.tlx-stage[data-stage="ptx"] .cm-line.tlx-linked')
    assert hl.count() == 3
    assert "wgmma" in hl.nth(1).inner_text()
    assert f"source line {DOT_LINE}" in viewer.locator(".tlx-status").inner_text()
    page.screenshot(path=str(artifacts / "evil-linked-ptx.png"))

    # Reverse direction: hover a PTX line, the source line lights up.
    hl.nth(0).hover()
    expect(viewer).to_have_attribute("data-linked-source", str(DOT_LINE))
    # A click on a finding pins its line.
    viewer.locator(".tlx-finding .tlx-diag-line").click()
    expect(viewer.locator(".tlx-status")).to_contain_text(f"pinned source line {DOT_LINE} ")

    # A 50,000-line SASS: switch, the mapped HGMMA line is scrolled to and highlighted,
    # and CodeMirror keeps the DOM small.
    viewer.locator('.tlx-stage-picker[data-column="0"]').select_option("sass")
    unpin_line(viewer, ".tlx-source", DOT_LINE)
    pin_line(viewer, ".tlx-source", DOT_LINE)  # pin again
    sass = viewer.locator('.tlx-stage[data-stage="sass"]')
    # a 50,000-line stage takes a moment to lay out on a loaded machine: wait for it, not a fixed time
    expect(sass.locator(".cm-line.tlx-linked", has_text="HGMMA")).to_have_count(1, timeout=15_000)
    assert sass.locator(".cm-line").count() < 2000
    page.screenshot(path=str(artifacts / "evil-sass.png"))

    # Search within a stage.
    search = viewer.locator('.tlx-stage-col[data-column="0"] .tlx-search')
    search.fill("HGMMA")
    page.wait_for_timeout(200)
    assert viewer.locator('.tlx-stage-col[data-column="0"] .tlx-search-count').inner_text() == "1/1"
    assert sass.locator(".tlx-search-current").count() == 1

    # Two stages side by side; picking the other column's stage swaps them (never one stage twice).
    viewer.locator(".tlx-split-toggle").check()
    viewer.locator('.tlx-stage-picker[data-column="1"]').select_option("ptx")
    expect(viewer.locator('.tlx-stage[data-stage="ptx"]')).to_have_attribute("data-linked", re.compile(r"\d"))
    assert len(linked(viewer, "ptx")) == 3
    viewer.locator('.tlx-stage-picker[data-column="1"]').select_option("sass")
    pickers = [viewer.locator(f'.tlx-stage-picker[data-column="{i}"]').input_value() for i in (0, 1)]
    assert pickers == ["ptx", "sass"], pickers
    assert viewer.locator(".tlx-stage").count() == 2

    # Layouts: table and drawings (distributed and shared).
    viewer.locator('.tlx-tab[data-tab="layouts"]').click()
    rows = viewer.locator(".tlx-values tbody tr")
    assert rows.count() == 3
    assert EVIL in rows.nth(0).inner_text()
    rows.nth(1).click()
    drawing = viewer.locator(".tlx-layout-drawing")
    assert drawing.get_attribute("data-layout") == "nvidia_mma"
    assert drawing.locator("canvas").count() == 1
    assert "4 warps" in drawing.inner_text()
    page.screenshot(path=str(artifacts / "evil-layout-mma.png"))
    rows.nth(2).click()
    assert drawing.get_attribute("data-layout") == "nvmma_shared"
    assert "1-way" in drawing.inner_text()
    page.screenshot(path=str(artifacts / "evil-layouts.png"))

    # Timeline and roofline (plotly, loaded on first use).
    viewer.locator('.tlx-tab[data-tab="roofline"]').click()
    viewer.locator(".tlx-roofline-pane .js-plotly-plot").wait_for(timeout=60_000)
    assert "CUDA events" in viewer.locator(".tlx-roofline-pane .tlx-plot-caption").inner_text()
    viewer.locator('.tlx-tab[data-tab="timeline"]').click()
    viewer.locator(".tlx-timeline-pane .js-plotly-plot").wait_for(timeout=60_000)
    assert EVIL in viewer.locator(".tlx-timeline-pane .tlx-roles").inner_text()
    page.wait_for_timeout(500)
    page.screenshot(path=str(artifacts / "evil-timeline.png"))
    assert page.evaluate("window.__tlxPwned") is None
    assert not page.console_errors, page.console_errors


def test_tlx_cell_viewer_and_docked_view(page, lab, artifacts):
    """A real %%tlx cell: compile a tl.dot matmul (no GPU needed), link source to PTX, SASS, dock."""
    name = write_notebook(lab[2], "matmul.ipynb", ["%load_ext workbench", MATMUL_CELL])
    open_notebook(page, lab, name)

    # %%tlx cells are highlighted as Python, the magic line marked.
    cell = page.locator(".jp-NotebookPanel:visible .jp-Notebook .jp-Cell").nth(1)
    assert cell.locator(".cm-editor.tlx-cell").count() == 1
    assert cell.locator(".tlx-magic").inner_text() == "%%tlx"
    colors = page.evaluate(
        """() => {
          const cell = Array.from(document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell'))[1];
          const spans = Array.from(cell.querySelectorAll('.cm-line span'));
          const def = spans.find(s => s.textContent === 'def');
          const line = def.closest('.cm-line');
          return [getComputedStyle(def).color, getComputedStyle(line).color];
        }"""
    )
    assert colors[0] != colors[1], colors  # 'def' is coloured as a keyword

    run_cell(page, 0)
    wait_idle(page)
    run_cell(page, 1)
    viewer = page.locator(".jp-NotebookPanel:visible .jp-OutputArea .tlx-viewer").first
    viewer.wait_for(timeout=300_000)
    wait_idle(page, 300_000)
    page.wait_for_timeout(500)
    errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    page.screenshot(path=str(artifacts / "matmul-viewer.png"))
    assert viewer.locator(".tlx-kernel-name").inner_text() == "matmul_kernel", (
        errors.all_inner_texts() if errors.count() else ""
    )
    first_id = viewer.get_attribute("data-report-id")

    # Click the tl.dot line: mapped PTX lines are highlighted.
    picker = viewer.locator('.tlx-stage-picker[data-column="0"]')
    if picker.input_value() != "ptx":
        picker.select_option("ptx")
    scroller = viewer.locator(".tlx-source .cm-scroller")
    # the clicked line, not its neighbour (the flaky click of issue 17), and no sideways scroll
    pin_line(viewer, ".tlx-source", MATMUL_DOT_LINE)
    assert scroller.evaluate("e => e.scrollLeft") == 0
    ptx_lines = linked(viewer, "ptx")
    assert ptx_lines, "tl.dot maps to no PTX line"
    hl = viewer.locator('.tlx-stage[data-stage="ptx"] .cm-line.tlx-linked')
    assert hl.count() >= 1
    text = "\n".join(hl.all_inner_texts())
    assert re.search(r"mma|wgmma|fma|ld\.shared|ldmatrix|\.loc", text), text
    # and back: a click on a linked PTX line lights the tl.dot line
    pin_line(viewer, '.tlx-stage[data-stage="ptx"]', ptx_lines[0], "ptx")
    assert MATMUL_DOT_LINE in linked_source(viewer)
    assert scroller.evaluate("e => e.scrollLeft") == 0
    page.screenshot(path=str(artifacts / "matmul-dot-ptx.png"))

    # Switch to SASS.
    picker.select_option("sass")
    page.wait_for_timeout(300)
    sass = viewer.locator('.tlx-stage[data-stage="sass"]')
    assert sass.locator(".cm-line").count() > 10
    assert re.search(r"\b(HMMA|HGMMA|FFMA|IMAD|MOV)\b", sass.inner_text())
    page.screenshot(path=str(artifacts / "matmul-sass.png"))
    # the pinned tl.dot brought its HGMMA into view (not the UMOV that sets up its descriptor), and the stepper
    # goes through the linked ranges
    in_view = """s => { const box = s.querySelector('.cm-scroller').getBoundingClientRect();
        return Array.from(s.querySelectorAll('.cm-line.tlx-linked')).filter(l => {
          const r = l.getBoundingClientRect(); return r.top >= box.top && r.bottom <= box.bottom;
        }).map(l => l.textContent); }"""
    seen = sass.evaluate(in_view)
    assert any("HGMMA" in t for t in seen), seen
    col = viewer.locator('.tlx-stage-col[data-column="0"]')
    total = int(col.locator(".tlx-linked-count").inner_text().split("/")[1])
    assert total > 1, col.locator(".tlx-linked-count").inner_text()
    col.locator(".tlx-linked-next").click()
    first = col.locator(".tlx-linked-count").inner_text()
    col.locator(".tlx-linked-next").click()
    assert col.locator(".tlx-linked-count").inner_text() != first
    assert sass.evaluate(in_view), "a stepped-to range is in view"
    page.screenshot(path=str(artifacts / "matmul-sass-stepped.png"))
    # IR noise is folded until asked for: SASS's //## File comments, TTGIR's loc(...) suffixes
    assert "//## File" not in sass.inner_text()
    picker.select_option("ttgir")
    page.wait_for_timeout(300)
    ttgir = viewer.locator('.tlx-stage[data-stage="ttgir"]')
    assert "tt.dot" in ttgir.inner_text() or "ttng.warp_group_dot" in ttgir.inner_text()
    assert " loc(" not in ttgir.inner_text()
    page.screenshot(path=str(artifacts / "matmul-ttgir-folded.png"))
    viewer.locator(".tlx-noise-toggle").check()
    expect(ttgir.locator(".cm-line", has_text=" loc(#loc").first).to_be_visible()
    picker.select_option("sass")
    page.wait_for_timeout(300)
    expect(sass.locator(".cm-line", has_text="//## File").first).to_be_visible()
    page.screenshot(path=str(artifacts / "matmul-sass-locations.png"))
    viewer.locator(".tlx-noise-toggle").uncheck()

    # the source column is as wide as its longest line up to half the row; the divider gives it more (nothing cut)
    src, row = viewer.locator(".tlx-source-col"), viewer.locator(".tlx-code-row")
    w0, rw = src.bounding_box()["width"], row.bounding_box()["width"]
    assert 0.3 * rw < w0 <= 0.52 * rw, (w0, rw)
    scroller = viewer.locator(".tlx-source .cm-scroller")
    assert scroller.evaluate("e => e.scrollWidth > e.clientWidth + 2")  # the cell's longest line does not fit
    bar = viewer.locator(".tlx-col-resizer").bounding_box()
    page.mouse.move(bar["x"] + 2, bar["y"] + 60)
    page.mouse.down()
    page.mouse.move(bar["x"] + 2 + 0.3 * rw, bar["y"] + 60, steps=6)
    page.mouse.up()
    assert src.bounding_box()["width"] > w0 + 0.25 * rw
    assert scroller.evaluate("e => e.scrollWidth <= e.clientWidth + 2")  # now every line is whole
    page.screenshot(path=str(artifacts / "matmul-source-widened.png"))
    viewer.locator(".tlx-col-resizer").dblclick()
    assert abs(src.bounding_box()["width"] - w0) < 2

    # Open beside: the left sidebar folds to give room; the docked viewer follows the cell and updates when it
    # runs again.
    expect(page.locator(".jp-FileBrowser")).to_be_visible()
    viewer.locator(".tlx-open-beside").click()
    docked = page.locator(".tlx-docked-panel .tlx-viewer")
    docked.wait_for(timeout=30_000)
    expect(page.locator(".jp-FileBrowser")).to_be_hidden()
    assert docked.locator(".tlx-kernel-name").inner_text() == "matmul_kernel"
    assert docked.get_attribute("data-report-id") == first_id
    page.screenshot(path=str(artifacts / "matmul-docked.png"))

    run_cell(page, 1)
    deadline = time.time() + 300
    while docked.get_attribute("data-report-id") == first_id and time.time() < deadline:
        page.wait_for_timeout(500)
    assert docked.get_attribute("data-report-id") not in (None, first_id)
    wait_idle(page)
    page.wait_for_timeout(300)
    page.screenshot(path=str(artifacts / "matmul-docked-rerun.png"))
    assert not page.console_errors, page.console_errors


def test_schema_example_with_diff(page, lab, artifacts):
    """The schema's own example (with --diff's `previous`) renders, with a Changes tab."""
    import shutil
    from pathlib import Path

    example = Path(__file__).resolve().parents[2] / "workbench" / "report" / "examples" / "vector_add_diff.json"
    if not example.exists():
        pytest.skip("workbench/report/examples/vector_add_diff.json is not there")
    root = lab[2]
    shutil.copy(example, root / "example.json")
    name = write_notebook(
        root,
        "example.ipynb",
        [
            "import json\nfrom IPython.display import display\n"
            f"display({{{MIME!r}: json.load(open('example.json')), 'text/plain': 'TLX report'}}, raw=True)",
        ],
    )
    open_notebook(page, lab, name)
    run_cell(page, 0)
    viewer = page.locator(".jp-NotebookPanel:visible .jp-OutputArea .tlx-viewer").first
    viewer.wait_for(timeout=120_000)
    data = json.loads(example.read_text())
    assert viewer.locator(".tlx-kernel-name").inner_text() == data["kernel"]["name"]
    viewer.locator('.tlx-tab[data-tab="changes"]').click()
    rows = viewer.locator(".tlx-stage-changes tbody tr")
    assert rows.count() == 1 + len(data["previous"]["stages"])
    rows.nth(1).click()
    assert viewer.locator(".tlx-diff").get_attribute("data-title") == data["previous"]["stages"][0]["name"]
    page.screenshot(path=str(artifacts / "example-changes.png"))
    viewer.locator('.tlx-tab[data-tab="layouts"]').click()
    viewer.locator(".tlx-values tbody tr").first.click()
    assert viewer.locator(".tlx-layout-drawing canvas").count() == 1
    page.screenshot(path=str(artifacts / "example-layouts.png"))
    assert not page.console_errors, page.console_errors


GPU_EXAMPLES = sorted((Path(__file__).resolve().parents[2] / "workbench" / "report" / "examples").glob("gpu_*.json"))


@pytest.mark.parametrize("example", GPU_EXAMPLES, ids=lambda p: p.stem)
def test_report_recorded_on_a_gpu(page, lab, artifacts, example):
    """A Report recorded on the GPU (--bench --check --timeline): the median, the roofline point,
    the per-role timeline and the passed check, all from real payloads."""
    root = lab[2]
    shutil.copy(example, root / example.name)
    data = json.loads(example.read_text())
    report = Report.from_dict(data)
    name = write_notebook(
        root,
        f"{example.stem}.ipynb",
        [
            "import json\nfrom IPython.display import display\n"
            f"display({{{MIME!r}: json.load(open({example.name!r})), 'text/plain': 'TLX report'}}, raw=True)",
        ],
    )
    open_notebook(page, lab, name)
    run_cell(page, 0)
    viewer = page.locator(".jp-NotebookPanel:visible .jp-OutputArea .tlx-viewer").first
    viewer.wait_for(timeout=120_000)
    expect(viewer.locator(".tlx-kernel-name")).to_have_text(report.name)
    bench = next(m for m in report.measurements if m["kind"] == "bench")
    expect(viewer.locator(".tlx-bench")).to_contain_text(f"median {bench['timing']['median_ms']:.4g} ms")
    for c in report.checks:
        assert viewer.locator(f'.tlx-check[data-status="{c["status"]}"]').count() >= 1
    assert "ran on" in viewer.locator(".tlx-run-status").inner_text()
    page.screenshot(path=str(artifacts / f"{example.stem}-header.png"))
    viewer.locator('.tlx-tab[data-tab="roofline"]').click()
    viewer.locator(".tlx-roofline-pane .js-plotly-plot").wait_for(timeout=60_000)
    assert "achieved" in viewer.locator(".tlx-roofline-pane .tlx-plot-summary").inner_text()
    page.screenshot(path=str(artifacts / f"{example.stem}-roofline.png"))
    viewer.locator('.tlx-tab[data-tab="timeline"]').click()
    viewer.locator(".tlx-timeline-pane .js-plotly-plot").wait_for(timeout=60_000)
    roles = viewer.locator(".tlx-timeline-pane .tlx-roles tbody tr")
    assert roles.count() == len(report.timeline["roles"])
    page.wait_for_timeout(500)
    page.screenshot(path=str(artifacts / f"{example.stem}-timeline.png"))
    assert not page.console_errors, page.console_errors
