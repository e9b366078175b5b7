"""Driving JupyterLab from Playwright: open a notebook, run cells, wait for the kernel, and click
editor lines only once the layout has stopped moving (a loaded machine keeps laying out for a
while after the viewer appears; a click measured before that lands on another line)."""

from __future__ import annotations

import re
import time

KERNEL_IDLE = """() => Array.from(document.querySelectorAll('.jp-StatusBar-TextItem'))
    .some(e => /\\|\\s*Idle\\s*$/.test(e.textContent || ''))"""

# Resolves when the element's box has been the same for `frames` animation frames in a row.
_STABLE = """(el, frames) => new Promise(resolve => {
  let last = '', same = 0;
  const tick = () => {
    const r = el.getBoundingClientRect();
    const box = [r.x, r.y, r.width, r.height].map(Math.round).join(',');
    same = box === last ? same + 1 : 0;
    last = box;
    if (same >= frames) { resolve(box); } else { requestAnimationFrame(tick); }
  };
  requestAnimationFrame(tick);
})"""


def open_notebook(page, lab, name: str) -> None:
    base, token, _ = lab
    # A workspace of its own, reset: only this notebook is open (nothing restored from other tests).
    ws = re.sub(r"[^\w-]", "-", name.rsplit(".", 1)[0])
    page.goto(f"{base}/lab/workspaces/{ws}/tree/{name}?token={token}&reset")
    page.wait_for_selector(".jp-NotebookPanel:visible .jp-Notebook .jp-Cell", timeout=90_000)
    page.wait_for_function(KERNEL_IDLE, timeout=120_000)  # kernel started and connected


def _prompt(cell) -> str:
    return cell.locator(".jp-InputPrompt").inner_text().strip()


def run_cell(page, index: int, key: str = "Control+Enter") -> None:
    """Run one cell (command mode + Ctrl-Enter) and wait until the kernel took it."""
    cell = page.locator(".jp-NotebookPanel:visible .jp-Notebook .jp-Cell").nth(index)
    before = _prompt(cell)
    for _ in range(3):
        cell.locator(".jp-InputPrompt").click()
        page.keyboard.press("Escape")
        page.keyboard.press(key)
        deadline = time.time() + 15
        while time.time() < deadline:
            now = _prompt(cell)
            if now != before and re.search(r"\[(\d+|\*)\]", now):
                return
            page.wait_for_timeout(200)
    raise AssertionError(f"cell {index} did not start running (prompt {_prompt(cell)!r})")


def run_all(page) -> None:
    """The notebook's Run All Cells command (Run menu)."""
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")


def wait_idle(page, timeout: float = 240_000) -> None:
    page.wait_for_function(
        """() => !Array.from(document.querySelectorAll('.jp-Notebook .jp-InputPrompt'))
                 .some(p => (p.textContent || '').includes('[*]'))""",
        timeout=timeout,
    )


def wait_all_ran(page, timeout: float = 900_000) -> None:
    """Every code cell of the open notebook has run (an execution count in its model, which also
    holds for cells the windowed notebook has not put in the DOM) and the kernel is idle."""
    page.wait_for_function(
        """() => {
          const panel = window.jupyterapp.shell.currentWidget;
          const kernel = panel && panel.sessionContext.session && panel.sessionContext.session.kernel;
          const code = panel ? panel.content.widgets.filter(c => c.model.type === 'code') : [];
          return !!kernel && kernel.status === 'idle' && code.length > 0
            && code.every(c => c.model.executionCount !== null);
        }""",
        timeout=timeout,
        polling=1000,
    )


def wait_stable(locator, frames: int = 5) -> None:
    """Wait until the element has stopped moving (its box unchanged for `frames` frames)."""
    locator.evaluate(_STABLE, frames)


def click_stable(locator, frames: int = 5, x: float = 40) -> None:
    """Wait for the layout to settle, then click the element `x` pixels from its left edge (where a
    user clicks a line of code: its middle may lie beyond the visible part of a long line)."""
    wait_stable(locator, frames)
    box = locator.bounding_box()
    locator.click(position={"x": min(x, box["width"] / 2), "y": box["height"] / 2})


# The point to click line n of an editor: 40 px into its text, at the height of its line number
# (lines are virtualized and re-rendered on scroll, so an element index would not stay valid).
# {missing} when the line is not rendered; {scrolled} when it was not fully in view (in its editor
# and in the window) and has been scrolled there.
_LINE_POINT = """(host, n) => {
  const g = Array.from(host.querySelectorAll('.cm-lineNumbers .cm-gutterElement'))
    .find(e => e.textContent.trim() === String(n));
  const content = host.querySelector('.cm-content');
  if (!g || !content) { return { missing: true }; }
  const gr = g.getBoundingClientRect(), cr = content.getBoundingClientRect();
  const sr = host.querySelector('.cm-scroller').getBoundingClientRect();
  const top = Math.max(sr.top, 0), bottom = Math.min(sr.bottom, window.innerHeight);
  if (gr.top < top + 2 || gr.bottom > bottom - 2) {
    g.scrollIntoView({ block: 'center', inline: 'nearest' });
    return { scrolled: true };
  }
  return { x: Math.max(cr.left, sr.left) + 40, y: gr.top + gr.height / 2 };
}"""


def editor_ready(viewer, pane: str) -> None:
    """The editor has its language (the highlighting arrives asynchronously and re-renders the lines:
    a click on a line being replaced is lost) and has stopped moving."""
    viewer.locator(f"{pane} .cm-editor[data-language]").wait_for(timeout=60_000)
    wait_stable(viewer.locator(f"{pane} .cm-content"))


def scroll_to_line(viewer, pane: str, n: int) -> None:
    host = viewer.locator(pane)
    height = host.locator(".cm-line").first.bounding_box()["height"]
    host.locator(".cm-scroller").evaluate("(e, y) => { e.scrollTop = y; }", max(0, (n - 6) * height))


def click_line(viewer, pane: str, n: int, what: str = "source") -> None:
    """A real mouse click on line n of an editor (`.tlx-source` or `.tlx-stage[data-stage=...]`):
    the pointer goes to the line, the viewer's hover says it is over line n (so the layout has settled
    and pointer -> line is right), then the button goes down and up there."""
    editor_ready(viewer, pane)
    host, page = viewer.locator(pane), viewer.page
    hovered = re.compile(rf"^{re.escape(what)} line {n} ")
    for _ in range(30):
        point = host.evaluate(_LINE_POINT, n)
        if "x" not in point:
            if point.get("missing"):
                scroll_to_line(viewer, pane, n)
            wait_stable(host.locator(".cm-content"))
            continue
        page.mouse.move(1, 1)  # off the editor first: a move to where the pointer already is fires no event
        page.mouse.move(point["x"], point["y"])
        try:
            expect_text(viewer.locator(".tlx-status"), hovered, timeout=2_000)
        except AssertionError:
            continue
        page.mouse.down()
        page.mouse.up()
        return
    raise AssertionError(f"the pointer never rested on line {n} of {pane}")


def pin_line(viewer, pane: str, n: int, what: str = "source") -> None:
    """Click line n until the viewer says it is pinned; a click that pins another line fails."""
    status = viewer.locator(".tlx-status")
    for _ in range(3):
        click_line(viewer, pane, n, what)
        try:
            expect_text(status, f"pinned {what} line {n} ", timeout=3_000)
            return
        except AssertionError:
            got = pinned_line(viewer)
            assert got is None, f"clicked {what} line {n}, the viewer pinned {got}"
    raise AssertionError(f"{what} line {n} was clicked three times and is not pinned")


def unpin_line(viewer, pane: str, n: int, what: str = "source") -> None:
    """Click the pinned line n again until the viewer says nothing is pinned."""
    for _ in range(3):
        click_line(viewer, pane, n, what)
        viewer.page.wait_for_timeout(300)
        got = pinned_line(viewer)
        if got is None:
            return
        assert got == (what, n), f"clicked {what} line {n}, the viewer pinned {got}"
    raise AssertionError(f"{what} line {n} stays pinned")


def expect_text(locator, text, timeout: float = 5_000) -> None:
    from playwright.sync_api import expect

    expect(locator).to_contain_text(text, timeout=timeout)


def source_line(viewer, text: str):
    return viewer.locator(".tlx-source .cm-line", has_text=text).first


def linked(viewer, stage: str) -> list[int]:
    raw = viewer.locator(f'.tlx-stage[data-stage="{stage}"]').get_attribute("data-linked") or ""
    return [int(x) for x in raw.split(",") if x]


def linked_source(viewer) -> list[int]:
    raw = viewer.get_attribute("data-linked-source") or ""
    return [int(x) for x in raw.split(",") if x]


def pinned_line(viewer) -> tuple[str, int] | None:
    """('source', 11) or ('ptx', 120) from the status line after a click."""
    m = re.search(r"pinned (\w+) line (\d+)", viewer.locator(".tlx-status").inner_text())
    return (m.group(1), int(m.group(2))) if m else None

