"""Meta's Hopper TLX tutorials, unmodified, launched through ``%%tlx`` cells of an executed notebook.

    python bench/meta_tutorials.py                   # execute bench/notebooks/meta_tutorials.ipynb
    python bench/meta_tutorials.py --write-notebook  # regenerate that notebook from the table below

On an H100/H200 each ``%%tlx`` cell calls a tutorial's own host function (from the installed triton-utlx
wheel, via ``tlx_kernels.meta_tutorials``) on the issue's shapes (GEMM 4096^3 and 8192^3 in fp16, flash
attention B4 H32 S4096 D128 in bf16), checks it against an fp32 torch result (``--check``) and times it
(``--bench``, with cuBLAS or torch SDPA as ``--bench-ref`` in the same cell); a plain cell times cuBLAS
and each torch SDPA backend with ``workbench.measure.bench`` first. Without a Hopper GPU the same cells
compile each tutorial's kernel from CPU arguments instead (so CI can execute the notebook).

Writes ``bench/results/meta-tutorials-<device>-<date>.json`` (device, date, versions, command, one row
per cell and baseline, per-cell seconds and errors, the executed notebook's size) and the executed
notebook (``--executed``, default ``$WB_OUT/meta_tutorials.ipynb`` or a temporary directory); prints a table.
On an H200 the run should take 2-3 minutes (each cell is limited by ``--cell-timeout``, default 120 s; a cell
that fails records its error and the next runs; a cell past the limit stops the run, the rows so far are kept).

Python packages the GPU run needs beyond torch, triton (+ triton-utlx) and numpy: ipykernel, ipython,
nbclient, nbformat, jupyter_client, jupyter_core, pyzmq, tornado, traitlets, jsonschema (+ referencing,
rpds-py, jsonschema-specifications), plotly (+ narwhals), pygments, platformdirs, and pytest (two of
Meta's tutorials import it at module level).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import re
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench"), str(ROOT / "testbed")]

from meta_notebook import ATTENTION, GEMM_SHAPES, GEMMS, NOTEBOOK, build_notebook, execute  # noqa: E402
from recordings import versions  # noqa: E402
from run_notebook import cell_facts  # noqa: E402


def add_ratios(rows: list[dict]) -> None:
    """Each tutorial's speed against the baseline cell's cuBLAS / torch SDPA (default backend) of its shape."""
    base = {("gemm", tuple(r["shape"])): r for r in rows if r["tutorial"] == "cuBLAS"}
    base |= {("attention", tuple(r["shape"])): r for r in rows if r["tutorial"] == "torch SDPA"}
    for r in rows:
        b = base.get((r["kind"], tuple(r["shape"])))
        if b and b.get("median_ms") and r.get("median_ms"):
            r["baseline"] = b["tutorial"]
            r["ratio_vs_baseline"] = round(b["median_ms"] / r["median_ms"], 4)


def device_slug(device: str) -> str:
    for name in ("H200", "H100", "B200", "GB200"):
        if name in device:
            return name.lower()
    return "cpu" if "no GPU" in device else re.sub(r"\W+", "-", device.lower()).strip("-")[:24] or "unknown"


def _num(row: dict, key: str, fmt: str) -> str:
    v = row.get(key)
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return format(v, fmt)
    return "-".rjust(int(fmt.split(".")[0]))


def print_table(rows: list[dict]) -> None:
    print(f"{'tutorial / baseline':44} {'shape':16} {'status':14} {'ms':>9} {'TFLOP/s':>8} {'vs ref':>7} "
          f"{'vs base':>7}")
    for r in rows:
        print(f"{r['tutorial']:44} {'x'.join(map(str, r['shape'])):16} {r['status']:14} "
              f"{_num(r, 'median_ms', '9.3f')} {_num(r, 'tflops', '8.1f')} {_num(r, 'ratio_vs_ref', '7.3f')} "
              f"{_num(r, 'ratio_vs_baseline', '7.3f')}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--write-notebook", action="store_true", help=f"regenerate {NOTEBOOK.relative_to(ROOT)}")
    ap.add_argument("--cell-timeout", type=int, default=120, help="seconds per cell (default 120)")
    ap.add_argument("--executed", default=None, help="where to save the executed notebook")
    ap.add_argument("--tlx-flags", default=None,
                    help="more options on every %%%%tlx line, e.g. --tlx-flags=--no-isolate (launch in the notebook's "
                         "process instead of the isolated worker)")
    ap.add_argument("--json", default=None,
                    help="results JSON (default bench/results/meta-tutorials-<device>-<date>.json)")
    args = ap.parse_args()
    if args.write_notebook:
        import nbformat

        NOTEBOOK.parent.mkdir(parents=True, exist_ok=True)
        nbformat.write(build_notebook(), NOTEBOOK)
        print(f"wrote {NOTEBOOK.relative_to(ROOT)}")
        return 0
    import nbformat

    if args.tlx_flags:
        os.environ["META_TUTORIALS_TLX_FLAGS"] = args.tlx_flags
    rows_path = Path(tempfile.mkdtemp(prefix="meta-tutorials-")) / "rows.json"
    nb, seconds, stopped = execute(NOTEBOOK, args.cell_timeout, rows_path)
    out_dir = Path(os.environ.get("WB_OUT") or tempfile.mkdtemp(prefix="meta-tutorials-nb-"))
    executed = Path(args.executed) if args.executed else out_dir / "meta_tutorials.ipynb"
    executed.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, executed)
    data = json.loads(rows_path.read_text()) if rows_path.exists() else {"env": {}, "rows": []}
    rows, env = data["rows"], data["env"]
    add_ratios(rows)
    cells = cell_facts(nb)
    tutorial_rows = [r for r in rows if not r["kind"].startswith("baseline")]
    ok = stopped is None and len(tutorial_rows) == len(GEMMS) * len(GEMM_SHAPES) + len(ATTENTION) and all(
        r["status"] == "ok" for r in tutorial_rows)
    now = dt.datetime.now(dt.UTC)
    device = env.get("device", "unknown")
    out = Path(args.json) if args.json else (
        ROOT / "bench" / "results" / f"meta-tutorials-{device_slug(device)}-{now:%Y-%m-%d}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({
        "device": device, "gpu_run": env.get("gpu_run"), "date": now.isoformat(),
        **versions(), **{k: env[k] for k in ("torch", "triton", "triton_utlx", "python") if env.get(k)},
        "command": " ".join(["python", "bench/meta_tutorials.py", *sys.argv[1:]]),
        "notebook": str(NOTEBOOK.relative_to(ROOT)), "executed_notebook": str(executed),
        "executed_notebook_bytes": executed.stat().st_size, "seconds": round(seconds, 1), "ok": ok,
        "stopped": stopped, "tlx_flags": os.environ.get("META_TUTORIALS_TLX_FLAGS", ""),
        "tutorials": env.get("tutorials"), "cells": cells, "rows": rows,
    }, indent=1, default=str))
    print_table(rows)
    print(f"{'OK' if ok else 'NOT OK'}: {len(tutorial_rows)} tutorial cells, {seconds:.0f} s; executed notebook "
          f"{executed} ({executed.stat().st_size / 1e6:.1f} MB)" + (f"; stopped: {stopped}" if stopped else ""))
    failed = [c for c in cells if c["error"]]
    for c in failed:
        print(f"  cell {c['name']!r}: {c['error']}")
    print(f"wrote {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
