"""The tutorials as a GPU executed them (``bench/results/notebooks/<tutorial>-<h200|h100>-<date>*.ipynb``, the
newest of each), checked on a CPU: what each ``%%tlx`` cell asked for happened on the GPU.

Per cell, from its magic line and its Report: the launch ran on the GPU; with ``--check`` every check passed
(fresh inputs, NaN-poisoned outputs); with ``--bench`` the timing is ok and has a same-run reference when
``--bench-ref`` was given; with ``--timeline`` the per-role timeline was recorded; with ``--stalls`` Nsight
Compute's warp samples were read. The notebook has no error
output, every Report validates against the schema, and the notebook is within the 5 MB budget; a
``--compile-only`` cell did not run. A tutorial whose cells changed since it was recorded fails here: execute
it on a GPU again (``bench/gpu_session.sh tutorials``) and commit the returned notebook.
"""

from __future__ import annotations

import importlib.util
import json
import shlex
from pathlib import Path

import pytest

from workbench.report import MIME_TYPE, validate

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("bench_recordings", ROOT / "testbed" / "recordings.py")
recordings = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(recordings)
RECORDED = recordings.RECORDED
TUTORIALS = sorted((ROOT / "tutorials").glob("*.ipynb"))
MAX_NOTEBOOK_BYTES = 5 * 1024 * 1024
# Tutorials written in a session that had no GPU time: each waits for its first H200 run (bench/gpu_session.sh
# tutorials). Listed here, not skipped silently: the test fails once a recording exists and the name is still here.
NOT_YET_ON_A_GPU: dict[str, str] = {}


def newest_recording(tutorial: Path) -> Path | None:
    """The newest recording of ``tutorial`` under ``RECORDED`` (``testbed/recordings.py`` says how they are named)."""
    return recordings.newest_recording(tutorial.stem, RECORDED)


def magic_options(source: str) -> list[str]:
    first = source.splitlines()[0] if source else ""
    return shlex.split(first)[1:] if first.startswith("%%tlx") else []


def tlx_cells(nb: dict) -> list[tuple[list[str], dict | None]]:
    """(magic options, the cell's Report or None) of every ``%%tlx`` cell."""
    out = []
    for cell in nb["cells"]:
        src = "".join(cell.get("source", []))
        if cell["cell_type"] != "code" or not src.startswith("%%tlx"):
            continue
        reports = [o["data"][MIME_TYPE] for o in cell.get("outputs", []) if MIME_TYPE in o.get("data", {})]
        out.append((magic_options(src), reports[0] if reports else None))
    return out


@pytest.mark.parametrize("tutorial", TUTORIALS, ids=lambda p: p.stem)
def test_recorded_gpu_run_did_what_each_cell_asked(tutorial):
    path = newest_recording(tutorial)
    if tutorial.stem in NOT_YET_ON_A_GPU:
        assert path is None, f"{path.name} exists: take {tutorial.stem} off NOT_YET_ON_A_GPU"
        pytest.skip(f"no H200 recording yet: {NOT_YET_ON_A_GPU[tutorial.stem]}")
    assert path is not None, f"no H200 recording of {tutorial.name} under {RECORDED}"
    raw = path.read_bytes()
    assert len(raw) <= MAX_NOTEBOOK_BYTES, (path.name, len(raw))
    nb = json.loads(raw)
    errors = [o for c in nb["cells"] if c["cell_type"] == "code" for o in c.get("outputs", [])
              if o["output_type"] == "error"]
    assert not errors, (path.name, errors[0].get("evalue"))
    cells = tlx_cells(nb)
    assert cells, path.name
    for opts, report in cells:
        assert report is not None, (path.name, opts)
        validate(report)
        name = report["kernel"]["name"]
        if "--compile-only" in opts:  # compiled on purpose, not run (tutorial 04's deliberate bugs)
            assert not any(r["ran"] for r in report["runs"]), (path.name, name)
            continue
        assert any(r["mode"] == "gpu" and r["ran"] for r in report["runs"]), (path.name, name)
        if "--check" in opts:
            statuses = [c["status"] for r in report["runs"] for c in r.get("checks", [])]
            assert statuses and set(statuses) == {"passed"}, (path.name, name, statuses)
        if "--bench" in opts:
            bench = next(m for m in report["measurements"] if m["kind"] == "bench")
            assert bench["status"] == "ok", (path.name, name, bench.get("reason"))
            if "--bench-ref" in opts:
                assert bench.get("ratio"), (path.name, name)
        if "--timeline" in opts:
            assert (report.get("timeline") or {}).get("status") == "ok", (path.name, name)
            assert report["timeline"]["roles"], (path.name, name)
        if "--stalls" in opts:  # Nsight Compute's warp samples, placed on a role and a line
            stalls = next(m for m in report["measurements"] if m["kind"] == "stalls")
            assert stalls["status"] == "ok" and stalls["samples"] > 0, (path.name, name, stalls.get("reason"))


@pytest.mark.parametrize("tutorial", TUTORIALS, ids=lambda p: p.stem)
def test_recording_ran_the_tutorials_code_as_it_is_now(tutorial):
    """The recording's code cells are the tutorial's (the prose may have changed since; the library code the
    cells call is not compared)."""
    path = newest_recording(tutorial)
    if path is None:
        pytest.skip(f"no H200 recording of {tutorial.name}")
    code = lambda nb: ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]  # noqa: E731
    recorded, now = code(json.loads(path.read_bytes())), code(json.loads(tutorial.read_text()))
    changed = [i for i, (a, b) in enumerate(zip(recorded, now, strict=False)) if a != b]
    assert len(recorded) == len(now) and not changed, (
        f"{tutorial.name}: code cells {changed or 'count'} changed since {path.name}; execute it on a GPU again")
