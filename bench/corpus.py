"""Kernels nobody here wrote, through the workbench on a CPU: Liger-Kernel, FlagGems, flash-linear-attention and
Meta's TLX tutorials (the corpus is ``testbed/corpus_ops.py``, the per-kernel steps ``workbench.report.corpus``).

    python bench/corpus.py                          # the full corpus -> bench/results/corpus-cpu-<date>.json
    python bench/corpus.py --sample                 # the fixed CI sample only
    python bench/corpus.py --packages liger-kernel --ops rms_norm,swiglu --no-reproducer

Each op is called with CPU tensors inside the workbench's launch capture in compile mode (as a ``%%tlx`` cell on
a machine with no GPU); every kernel it launched gets one JSON row: compiled for sm_90 (and sm_100a), layouts
read, every stage's line map, static findings by severity, the Report, the per-role timeline build (TLX kernels),
the exported reproducer run by a plain ``python`` with no workbench importable, the TritonParse trace parsed;
each step's status and seconds. The packages are installed ``--no-deps`` into ``.corpus/`` (``--install``; never
into the venv). Compiles go to a fresh workbench cache and Triton cache (cold times) unless ``--warm``.
Prints one summary table per package and writes the rows, the summary, the date, versions and the command.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench"), str(ROOT / "testbed")]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--packages", default="liger-kernel,flag-gems,fla-core,meta-tlx")
    ap.add_argument("--ops", default=None, help="only these ops (comma-separated names)")
    ap.add_argument("--sample", action="store_true", help="the fixed CI sample (corpus_ops.SAMPLE) only")
    ap.add_argument("--no-reproducer", action="store_true", help="skip running the exported reproducers")
    ap.add_argument("--install", action="store_true", help="pip install the packages into .corpus/ first")
    ap.add_argument("--warm", action="store_true", help="keep the usual compile caches (default: fresh ones)")
    ap.add_argument("--json", default=None, help="results JSON (default bench/results/corpus-cpu-<date>.json)")
    ap.add_argument("--workdir", default=None, help="where reproducers and traces go (default: a temporary folder)")
    args = ap.parse_args()
    if not args.warm:
        os.environ["TLX_WORKBENCH_CACHE_DIR"] = tempfile.mkdtemp(prefix="wb-corpus-cache-")
        os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="wb-corpus-triton-")
    import corpus_ops as co

    if args.install:
        print("install:", co.install())
    missing = [p for p, ok in co.installed().items() if not ok]
    if missing:
        print(f"not installed in {co.CORPUS}: {missing} (run with --install)")
        return 2
    from workbench.report.corpus import FEATURES, run_op, summary, summary_table

    features = [f for f in FEATURES if not (args.no_reproducer and f == "reproducer")]
    wanted = {(p, o) for p, o in co.SAMPLE} if args.sample else None
    only = set(args.ops.split(",")) if args.ops else None
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="wb-corpus-"))
    rows: list[dict] = []
    t_all = time.perf_counter()
    with co.on_path():
        for pkg in args.packages.split(","):
            t0 = time.perf_counter()
            try:
                ops = co.ops(pkg)
            except Exception as e:  # the package does not import: one row says why
                rows.append({"package": pkg, "op": None, "kernel": None, "features": {}, "findings": {},
                             "op_call": {"status": "clear", "detail": f"import: {type(e).__name__}: {e}"[:600]}})
                print(f"{pkg}: import failed: {type(e).__name__}: {e}")
                continue
            ops = [o for o in ops if (wanted is None or (pkg, o.name) in wanted) and (only is None or o.name in only)]
            print(f"{pkg}: {len(ops)} ops (import and setup {time.perf_counter() - t0:.1f} s)", flush=True)
            for op in ops:
                t1 = time.perf_counter()
                got = run_op(op, workdir / pkg, features=features, reproducer_env=co.reproducer_env())
                rows.extend(got)
                bad = {r.get("kernel") or "-": [f for f, s in r["features"].items() if s["status"] not in
                                                ("ok", "skipped")] for r in got}
                call = got[0]["op_call"]
                print(f"  {op.name:36} {len(got):3} kernel(s) {time.perf_counter() - t1:6.1f} s  call "
                      f"{call['status']}" + (f" ({(call['detail'] or '')[:160]})" if call["status"] != "ok" else "")
                      + "".join(f"\n      {k}: {v}" for k, v in bad.items() if v), flush=True)
    seconds = time.perf_counter() - t_all
    print(summary_table(rows))
    now = dt.datetime.now(dt.UTC)
    out = Path(args.json) if args.json else ROOT / "bench" / "results" / f"corpus-cpu-{now:%Y-%m-%d}.json"
    import torch
    import triton

    from workbench.report.report import versions

    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({
        "date": now.isoformat(), "device": "CPU only (compile mode, no GPU)", "cores": os.cpu_count(),
        "python": platform.python_version(), "torch": torch.__version__, "triton": triton.__version__,
        "workbench_versions": versions(), "packages": co.versions(),
        "command": " ".join(["python", "bench/corpus.py", *sys.argv[1:]]), "cold_caches": not args.warm,
        "seconds": round(seconds, 1), "features": features, "summary": summary(rows), "rows": rows,
    }, indent=1, default=str))
    print(f"{len(rows)} rows in {seconds:.0f} s; wrote {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
