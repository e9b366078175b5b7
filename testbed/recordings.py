"""Where the benches' results are kept: ``write_result`` writes a run's JSON as ``bench/results/<stem>-<date>.json``,
``versions`` and ``source_tree`` say what it ran on; the GPU runs of the tutorials are
``bench/results/notebooks/<stem>-<gpu>-<date>[-runN].ipynb`` (``<gpu>`` h200 or h100: the card that ran it; the
executed notebooks ``bench/gpu_session.sh tutorials`` returns, as plain notebooks JupyterLab opens), and
``newest_recording`` says which one is the newest."""

from __future__ import annotations

import datetime as dt
import json
import os
import platform
import re
import subprocess
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parents[1] / "bench" / "results"
RECORDED = RESULTS / "notebooks"


def write_result(doc: dict[str, Any], stem: str, explicit: str | None = None) -> Path:
    """Write ``doc`` as JSON to ``explicit``, else to ``bench/results/<stem>-<date>.json`` (a second run that day
    adds the time rather than overwrite the first); returns the path."""
    now = dt.datetime.now()
    path = Path(explicit) if explicit else RESULTS / f"{stem}-{now:%Y-%m-%d}.json"
    if path.exists() and not explicit:
        path = path.with_name(f"{stem}-{now:%Y-%m-%d-%H%M%S}.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1, default=str))
    return path
_NAME = re.compile(r"(?P<stem>.+)-(?P<gpu>h200|h100)-(\d{4}-\d{2}-\d{2})(?:-run(\d+))?\.ipynb")


def source_tree(explicit: str | None = None) -> str | None:
    """The commit measured: ``explicit``, else ``$WB_TREE`` (the device machine's copy of .git can be stale), else
    ``git rev-parse --short HEAD`` of this checkout."""
    if explicit or os.environ.get("WB_TREE"):
        return explicit or os.environ["WB_TREE"]
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=RESULTS.parents[1], capture_output=True,
                             text=True, check=False)
    except OSError:
        return None
    return out.stdout.strip() or None


def versions() -> dict[str, str | None]:
    """Python, torch, triton and triton-utlx versions, and the source tree."""
    out: dict[str, str | None] = {"python": platform.python_version()}
    for pkg in ("torch", "triton", "triton-utlx"):
        try:
            out[pkg.replace("-", "_")] = version(pkg)
        except PackageNotFoundError:
            out[pkg.replace("-", "_")] = None
    out["tree"] = source_tree()
    return out


def sweep_result(stem: str, source: str) -> dict[str, Any] | None:
    """A ``--sweep`` run's JSON for ``--from-sweep``: ``source`` a path, or ``latest`` (the newest
    ``bench/results/<stem>-sweep-*.json``); None, said, when there is none."""
    files = sorted(RESULTS.glob(f"{stem}-sweep-*.json"), key=lambda f: f.stat().st_mtime)
    path = (files[-1] if files else None) if source == "latest" else Path(source)
    if path is None or not path.exists():
        print(f"--from-sweep {source}: no {stem} sweep result found; the configs alone", flush=True)
        return None
    print(f"--from-sweep: {path.name}", flush=True)
    return json.loads(path.read_text())


def newest_recording(stem: str, folder: Path = RECORDED) -> Path | None:
    """The recording of tutorial ``stem`` with the latest date, then the highest run (none = run 1)."""
    found = sorted((m.group(3), int(m.group(4) or 1), p) for p in folder.glob(f"{stem}-*.ipynb")
                   if (m := _NAME.fullmatch(p.name)) and m["stem"] == stem)
    return found[-1][2] if found else None


def recorded_on(recording: Path) -> str:
    """The card a recording's name says ran it, as the device name starts: ``NVIDIA H200``, ``NVIDIA H100``."""
    return "NVIDIA " + _NAME.fullmatch(recording.name)["gpu"].upper()
