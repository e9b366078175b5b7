"""Shared by the export tests: run a reproducer script the way a user without the workbench would, and
execute a tutorial with ``--export`` added to each of its ``%%tlx`` cells."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# sys.path without any folder that holds workbench or tlx_kernels (the editable install puts the checkout and
# kernels/ there); the script then runs as __main__; afterwards neither may have been imported
WITHOUT_WORKBENCH = """
import os, runpy, sys
sys.path[:] = [p for p in sys.path
               if not any(os.path.isdir(os.path.join(p or '.', n)) for n in ('workbench', 'tlx_kernels'))]
script = sys.argv[1]
sys.argv = sys.argv[1:]
try:
    runpy.run_path(script, run_name='__main__')
finally:
    leaked = [m for m in ('workbench', 'tlx_kernels') if m in sys.modules]
    if leaked:
        print('IMPORTED', leaked)
        sys.exit(3)
"""


def run_script(script: Path, *flags: str, env: dict | None = None, timeout: float = 900) -> tuple[int, str, dict]:
    """(exit status, stdout + stderr, the --json result) of ``python script --json [flags]`` with no workbench
    importable, run in a fresh folder."""
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", WITHOUT_WORKBENCH, str(script), "--json", *flags],
                          capture_output=True, text=True, timeout=timeout, cwd=script.parent,
                          env={**os.environ, **(env or {})})
    out = proc.stdout + proc.stderr
    result = {}
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("{"):
            result = json.loads(line)
            break
    result["_seconds"] = time.perf_counter() - t0
    return proc.returncode, out, result


def with_exports(nb, folder: Path, stem: str) -> list[tuple[int, Path, str]]:
    """Add ``--export <folder>/<stem>-<cell>.py --export <folder>/traces/`` to every ``%%tlx`` cell of ``nb``
    (in place) and drop the cells after the last one; (cell index, script, the cell's magic line) of each."""
    out = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or not cell.source.startswith("%%tlx"):
            continue
        first, _, rest = cell.source.partition("\n")
        script = folder / f"{stem}-{i}.py"
        cell.source = f"{first} --export {script} --export {folder / 'traces'}/\n{rest}"
        out.append((i, script, first))
    if out:
        del nb.cells[out[-1][0] + 1:]
    return out


def execute(nb, path: Path, env: dict[str, str], timeout: int = 900) -> float:
    """Run ``nb`` in a fresh Jupyter kernel (``path``'s folder as its working directory) with ``env`` set."""
    import nbclient

    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        client = nbclient.NotebookClient(nb, timeout=timeout, kernel_name="python3", allow_errors=False,
                                         resources={"metadata": {"path": str(path.parent)}})
        t0 = time.perf_counter()
        client.execute()
        return time.perf_counter() - t0
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
