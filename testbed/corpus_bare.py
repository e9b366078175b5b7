"""A candidate of a cases module called in a plain Python process, without the workbench: does a fault or a hang
that ``workbench.evaluate`` reported happen there too?

``bench/corpus_evaluate.py`` asks this of every candidate whose evaluation ended in a fault or a hang: when the
package's own call, on the same inputs and shapes, ends a plain process the same way, the failure is the
package's (a documented limitation of the corpus), not the workbench's. The child process imports nothing of the
workbench (its folders are taken off ``sys.path``; an import of it fails the probe), enables ``faulthandler`` so a
segmentation fault prints the Python stack where it happened, and prints one line per shape it finished.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

_CHILD = """
import faulthandler, importlib.util, os, sys
faulthandler.enable()
sys.path[:] = [p for p in sys.path
               if not any(os.path.isdir(os.path.join(p or '.', n)) for n in ('workbench', 'tlx_kernels'))]
cases, candidate, make, device = sys.argv[1:5]
spec = importlib.util.spec_from_file_location('cases', cases)
m = importlib.util.module_from_spec(spec)
spec.loader.exec_module(m)
import torch
for shape in eval(sys.argv[5]):
    for seed in range(int(sys.argv[6])):  # a package's second call of a shape may take another path (a cache)
        out = getattr(m, candidate)(*getattr(m, make)(shape, seed, device))
        if device == 'cuda':
            torch.cuda.synchronize()
    print('finished', shape, flush=True)
leaked = [n for n in ('workbench', 'tlx_kernels') if n in sys.modules]
if leaked:
    print('IMPORTED', leaked)
    sys.exit(3)
"""


def bare_run(cases: Path, candidate: str, make: str, shapes: list, device: str, env: dict[str, str],
             timeout_s: float = 120.0, calls: int = 3) -> dict[str, Any]:
    """Call ``candidate(*make(shape, seed, device))`` for each shape, ``calls`` times (seeds 0, 1, ...: as the
    evaluation calls it more than once, and a package may launch a cached kernel from its second call on) in a
    fresh process without the workbench: {exit (None: killed at the limit), finished (shapes done), tail (its last
    output)}."""
    try:
        p = subprocess.run([sys.executable, "-c", _CHILD, str(cases), candidate, make, device, repr(list(shapes)),
                            str(calls)],
                           capture_output=True, text=True, timeout=timeout_s, env={**os.environ, **env})
        code, out = p.returncode, p.stdout + p.stderr
    except subprocess.TimeoutExpired as e:
        code = None
        out = "".join(x.decode(errors="replace") if isinstance(x, bytes) else (x or "") for x in (e.stdout, e.stderr))
    finished = [ln.split(" ", 1)[1] for ln in out.splitlines() if ln.startswith("finished ")]
    return {"exit": code, "finished": finished, "tail": out[-1500:]}


def judged(row: dict[str, Any], bare: dict[str, Any]) -> dict[str, Any]:
    """The row with its bare run, and a fault or hang that a plain process shows too turned into a limitation."""
    row = {**row, "bare": bare}
    # a fault is the same when a signal ends the plain process too (a Python exception there is another failure)
    same = (row["status"] == "fault" and (bare["exit"] or 0) < 0) or (row["status"] == "hang" and bare["exit"] is None)
    if same:
        how = f"exit code {bare['exit']}" if bare["exit"] is not None else "still running at the limit"
        row |= {"workbench_status": row["status"], "status": "limitation",
                "reasons": [*row["reasons"], f"the package's own call ends a plain Python process without the "
                            f"workbench the same way ({how}, after {len(bare['finished'])} shape(s)): not the "
                            f"workbench's"]}
    return row
