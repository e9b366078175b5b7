"""Execute a notebook with nbclient and save the executed copy (used on the GPU machine).

    python bench/run_notebook.py tutorials/01-producer-consumer-gemm.ipynb OUT_DIR [--timeout 300]

Prints each code cell's index, first line and seconds as it finishes (a slow or stuck cell is named while
the run goes on). A cell that fails, times out or kills the kernel stops the run; the executed copy and the
summary are written either way, with every cell that ran and the error. ``cell_facts`` reads the same from
an executed notebook (the other notebook benches use it).
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
import time
from pathlib import Path
from typing import Any


class CellClock:
    """nbclient hooks that time each code cell and print it when it ends."""

    def __init__(self) -> None:
        self.t0 = time.time()
        self.started: dict[int, float] = {}
        self.cells: list[dict[str, Any]] = []

    def start(self, cell: Any, cell_index: int, **_: Any) -> None:
        if cell.get("cell_type") != "code":
            return
        self.started[cell_index] = time.time()
        print(f"[{time.time() - self.t0:7.1f}s] cell {cell_index} starts: {_first_line(cell)}", flush=True)

    def executed(self, cell: Any, cell_index: int, execute_reply: Any = None, **_: Any) -> None:
        seconds = time.time() - self.started.get(cell_index, time.time())
        status = ((execute_reply or {}).get("content") or {}).get("status", "?")
        self.cells.append({"index": cell_index, "first_line": _first_line(cell), "seconds": round(seconds, 3),
                           "status": status})
        print(f"[{time.time() - self.t0:7.1f}s] cell {cell_index} {status} in {seconds:.1f} s", flush=True)


def _first_line(cell: Any) -> str:
    return (str(cell.get("source", "")).strip().splitlines() or [""])[0][:100]


def _when(stamp: str | None) -> float | None:
    try:
        return dt.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() if stamp else None
    except ValueError:
        return None


def cell_facts(nb: Any) -> list[dict[str, Any]]:
    """Per code cell of an executed notebook (nbclient's execution metadata): index, name (metadata), first line,
    seconds, whether it ran, and its error ("ename: evalue")."""
    out = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        ex = cell.metadata.get("execution", {})
        start, end = _when(ex.get("iopub.execute_input")), _when(ex.get("shell.execute_reply"))
        errors = [o for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        out.append({"index": i, "name": cell.metadata.get("name"), "first_line": _first_line(cell),
                    "seconds": round(end - start, 3) if start and end else None, "ran": bool(ex),
                    "error": f"{errors[0].get('ename')}: {errors[0].get('evalue')}"[:3000] if errors else None})
    return out


def execute(path: Path, timeout: int) -> tuple[Any, CellClock, str | None]:
    """Run every cell; returns the notebook (as far as it ran), the per-cell times and the error, if any."""
    import nbclient
    import nbformat

    nb = nbformat.read(path, as_version=4)
    clock = CellClock()
    client = nbclient.NotebookClient(nb, timeout=timeout, kernel_name="python3",
                                     resources={"metadata": {"path": str(path.parent)}},
                                     on_cell_start=clock.start, on_cell_executed=clock.executed)
    error = None
    try:
        client.execute()
    except (nbclient.exceptions.CellExecutionError, nbclient.exceptions.CellTimeoutError,
            nbclient.exceptions.DeadKernelError) as e:
        error = f"{type(e).__name__}: {e}"[:4000]
        print(f"cell failed: {error}")
    return nb, clock, error


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("notebook")
    ap.add_argument("out_dir")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per cell")
    ap.add_argument("--summary", default=None, help="write the text outputs and run facts as JSON here")
    args = ap.parse_args()
    import nbformat

    path = Path(args.notebook)
    nb, clock, error = execute(path, args.timeout)
    out = Path(args.out_dir) / path.name
    out.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, out)
    print(f"executed {path} in {time.time() - clock.t0:.1f} s -> {out}")
    texts = []
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            text = o.get("text") or o.get("data", {}).get("text/plain", "")
            if text:
                texts.append(str(text)[:4000])
                print(str(text)[:600])
    if args.summary:
        import json
        import platform

        import torch
        import triton

        Path(args.summary).parent.mkdir(parents=True, exist_ok=True)
        Path(args.summary).write_text(json.dumps({
            "date": dt.datetime.now(dt.UTC).isoformat(),
            "device": torch.cuda.get_device_name() if torch.cuda.is_available() else "no GPU",
            "torch": torch.__version__, "triton": triton.__version__, "python": platform.python_version(),
            "command": "python " + " ".join(sys.argv), "notebook": str(path), "ok": error is None,
            "error": error, "seconds": time.time() - clock.t0, "cells": clock.cells, "text_outputs": texts,
        }, indent=1))
    return 0 if error is None else 1


if __name__ == "__main__":
    sys.exit(main())
