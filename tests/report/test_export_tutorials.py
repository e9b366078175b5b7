"""Every tutorial kernel exported as a reproducer and run with plain python, no workbench importable (CPU).

Each tutorial runs in a fresh Jupyter kernel (nbclient, compile-only: ``TLX_WORKBENCH_NO_GPU=1``) with
``--export <stem>-<cell>.py --export traces/`` added to each ``%%tlx`` cell. Then every script runs in a
subprocess whose ``sys.path`` holds neither ``workbench`` nor ``tlx_kernels``: with no GPU it must compile
its kernel for sm_90 to the same warps and shared memory the workbench compiled, say that nothing ran and
that each of the cell's checks was not run, and leave nothing of the cell unreproduced (every check and
reference expression rewritten into the script). The TritonParse traces of the same cells are parsed by
tritonparse in ``test_export_tritonparse.py``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
pytest.importorskip("nbclient")

from export_helpers import ROOT, execute, run_script, with_exports  # noqa: E402

NOTEBOOKS = sorted((ROOT / "tutorials").glob("*.ipynb"))

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """{tutorial: (executed notebook, [(cell, script, magic line)])}, each tutorial executed once."""
    done: dict[str, tuple] = {}

    def get(path: Path):
        if path.name not in done:
            folder = tmp_path_factory.mktemp(path.stem)
            nb = nbformat.read(path, as_version=4)
            cells = with_exports(nb, folder, path.stem[:2])
            execute(nb, path, {"TLX_WORKBENCH_NO_GPU": "1",
                               "TLX_WORKBENCH_CACHE_DIR": str(tmp_path_factory.mktemp("wb-cache"))})
            done[path.name] = (nb, cells)
        return done[path.name]

    return get


def _said(nb, cell: int) -> str:
    return json.dumps(nb.cells[cell].get("outputs", []))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_tutorial_kernel_reproduces_without_the_workbench(path, exported):
    nb, cells = exported(path)
    assert cells, f"{path.name} has no %%tlx cell"
    for cell, script, magic in cells:
        assert f"--export: wrote {script}" in _said(nb, cell), f"cell {cell} did not say it exported"
        rc, out, res = run_script(script)
        where = f"{path.name} cell {cell}: {script.name}\n{out[-3000:]}"
        assert rc == 0, where
        assert "IMPORTED" not in out, where
        assert res["mode"] == "compile-only" and "compile-only for sm_90, nothing runs" in out, where
        assert res["same_as_workbench"] is True, where
        assert res["compiled"]["num_warps"] == res["workbench"]["compiled"]["num_warps"], where
        assert {"ttir", "ttgir", "ptx", "cubin"} <= set(res["compiled"]["stages"]), where
        assert res["not_reproduced"] == [], where
        asked = magic.count("--check")
        assert len(res["checks"]) == asked, where
        for c in res["checks"]:
            assert c["status"] == "skipped" and f"check {c['expr']}: not run" in out, where
        assert "time: not measured" in out, where


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_tutorial_kernel_opens_in_tritonparse(path, exported, tmp_path):
    pytest.importorskip("tritonparse")
    import gzip

    from tritonparse.parse.utils import unified_parse

    nb, cells = exported(path)
    traces = cells[0][1].parent / "traces"
    assert len(list(traces.glob("dedicated_log_triton_trace_*.ndjson"))) == len(cells)
    unified_parse(source=str(traces), out=str(tmp_path), overwrite=True)
    events = [json.loads(line) for f in tmp_path.glob("*_mapped.ndjson.gz") for line in gzip.open(f, "rt")]
    compilations = [e for e in events if e["event_type"] == "compilation"]
    launches = [e for e in events if e["event_type"] == "launch"]
    assert len(compilations) == len({e["payload"]["metadata"]["hash"] for e in compilations}) >= 1
    for comp in compilations:
        maps = comp["payload"]["source_mappings"]
        assert maps["python"] and maps["ttgir"] and maps["ptx"], comp["payload"]["metadata"]["name"]
    hashes = {e["payload"]["metadata"]["hash"] for e in compilations}
    assert launches and all(e["compilation_metadata"]["hash"] in hashes for e in launches)
