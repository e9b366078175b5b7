"""Where the GPU runs of the tutorials are kept: ``bench/results/notebooks/<stem>-h200-<date>[-runN].ipynb``
(the executed notebooks ``bench/gpu_session.sh tutorials`` returns, as plain notebooks JupyterLab opens), and
which one is the newest."""

from __future__ import annotations

import re
from pathlib import Path

RECORDED = Path(__file__).resolve().parent / "results" / "notebooks"
_NAME = re.compile(r"(\d{4}-\d{2}-\d{2})(?:-run(\d+))?\.ipynb")


def newest_recording(stem: str, folder: Path = RECORDED) -> Path | None:
    """The recording of tutorial ``stem`` with the latest date, then the highest run (none = run 1)."""
    def when(p: Path) -> tuple[str, int]:
        m = _NAME.fullmatch(p.name.split("-h200-")[1])
        return (m.group(1), int(m.group(2) or 1)) if m else ("", 0)

    found = sorted(folder.glob(f"{stem}-h200-*.ipynb"), key=when)
    return found[-1] if found else None
