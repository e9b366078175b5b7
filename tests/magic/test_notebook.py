"""%%tlx through a real ipykernel (nbclient), and nbconvert's HTML export of the result."""

from __future__ import annotations

import re

import jsonschema
import nbformat
import pytest
from cells import ADD, COMPILE_ERROR, COMPILE_ERROR_LINE, SYNTAX_ERROR, SYNTAX_ERROR_LINE, WRONG
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from workbench.report import MIME_TYPE, load_schema

pytestmark = pytest.mark.slow

ANSI = re.compile(r"\x1b\[[0-9;]*m")

CELLS = {
    "load": "%load_ext workbench",
    "add": '%%tlx -o rep --stages ttgir,ptx --check "out: x + y"\n' + ADD,
    "rerun": '%%tlx -o rep --stages ttgir,ptx --check "out: x + y"\n' + ADD,
    "cache": "print('cache_hit', rep.kernel['cache_hit'])",
    "syntax": "%%tlx\n" + SYNTAX_ERROR,
    "compile": "%%tlx\n" + COMPILE_ERROR,
    "diff": "%%tlx --diff\n" + WRONG,  # against the last vector_add run ("rerun")
    "wrong": '%%tlx --check "out: x + y"\n' + WRONG,
}


def _execute(cells: dict[str, str], tmp_path, allow_errors: bool = True):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src, metadata={"name": k}) for k, src in cells.items()]
    client = NotebookClient(
        nb,
        timeout=600,
        kernel_name="python3",
        allow_errors=allow_errors,
        resources={"metadata": {"path": str(tmp_path)}},
    )
    client.execute()
    return nb


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    nb = _execute(CELLS, tmp_path_factory.mktemp("nb"))
    return nb, {c.metadata["name"]: c for c in nb.cells}


def _bundles(cell) -> list[dict]:
    return [
        o["data"]
        for o in cell.outputs
        if o.get("output_type") in ("display_data", "execute_result") and MIME_TYPE in o.get("data", {})
    ]


def _error(cell) -> dict:
    errs = [o for o in cell.outputs if o["output_type"] == "error"]
    assert errs, cell.outputs
    return errs[0]


def test_bundle_has_three_mime_types_and_validates(executed):
    _, cells = executed
    [b] = _bundles(cells["add"])
    assert set(b) >= {MIME_TYPE, "text/html", "text/plain"}
    jsonschema.validate(b[MIME_TYPE], load_schema())
    d = b[MIME_TYPE]
    assert d["kernel"]["name"] == "vector_add"
    assert d["runs"][-1]["checks"][0]["status"] == "passed"
    assert "<summary>TTGIR" in b["text/html"] and "<summary>PTX" in b["text/html"]


def test_rerun_hits_the_compile_cache(executed):
    _, cells = executed
    [b] = _bundles(cells["rerun"])
    assert b[MIME_TYPE]["kernel"]["cache_hit"]
    assert "cache_hit True" in "".join(o.get("text", "") for o in cells["cache"].outputs)


@pytest.mark.parametrize(
    "name,line,snippet", [("syntax", SYNTAX_ERROR_LINE, "mask = offs < n)"), ("compile", COMPILE_ERROR_LINE, "x + zz")]
)
def test_error_cells_fail_with_the_right_line(executed, name, line, snippet):
    _, cells = executed
    err = _error(cells[name])
    tb = ANSI.sub("", "\n".join(err["traceback"]))
    assert f"Cell line {line}" in tb, tb
    lines = tb.splitlines()
    i = next(i for i, ln in enumerate(lines) if snippet in ln)
    assert lines[i + 1].strip() == "^"
    assert len(lines) < 12 and "site-packages" not in tb


def test_check_catches_the_wrong_kernel(executed):
    _, cells = executed
    err = _error(cells["wrong"])
    assert err["ename"] == "CheckError"
    tb = ANSI.sub("", "\n".join(err["traceback"]))
    assert "Cell line 1" in tb and "differ" in tb
    [b] = _bundles(cells["wrong"])
    assert b[MIME_TYPE]["runs"][-1]["checks"][0]["status"] == "failed"


def test_diff_shows_the_change(executed):
    _, cells = executed
    [b] = _bundles(cells["diff"])
    p = b[MIME_TYPE]["previous"]
    assert p is not None and "x - y" in p["source_diff"]
    assert any(s["status"] == "changed" for s in p["stages"])
    assert p["label"].startswith("In [") and f"Diff against {p['label']}" in b["text/html"]  # not a hex id


def test_nbconvert_html_shows_the_fallback_with_stages(executed):
    from nbconvert import HTMLExporter

    nb, _ = executed
    body, _ = HTMLExporter().from_notebook_node(nb)
    assert 'class="tlxr"' in body
    for stage in ("TTIR", "TTGIR", "LLIR", "PTX", "SASS"):
        assert f"<summary>{stage} ·" in body
    assert "tlxr-" in body and "-src-L" in body  # line anchors survived


def test_run_all_stops_at_a_failing_cell(tmp_path):
    cells = {"load": "%load_ext workbench", "bad": "%%tlx\n" + SYNTAX_ERROR, "after": "print('ran after')"}
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in cells.values()]
    client = NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}})
    with pytest.raises(CellExecutionError) as ei:
        client.execute()
    assert f"Cell line {SYNTAX_ERROR_LINE}" in ANSI.sub("", str(ei.value))
    assert not nb.cells[2].outputs
