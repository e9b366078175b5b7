"""Kernels nobody here wrote, judged and timed: ``workbench.evaluate`` on 21 ops of Liger-Kernel, FlagGems and
flash-linear-attention against their PyTorch reference (``testbed/corpus_eval_cases.py``).

    python3 bench/corpus_evaluate.py [--ops rms_norm,softmax,...] [--trials 3] [--cpu] [--json PATH]

On an H100/H200 (default) at the ops' GPU shapes (real sizes and an odd one); ``--cpu``: the CPU shapes in Triton's
interpreter. The packages come from ``.corpus/`` (``bench/corpus.py --install``), put on the path of the
evaluation's workers, never into the venv. Prints one line per candidate and writes JSON after every op (default
bench/results/corpus-evaluate-<date>.json): per candidate its status (passed, failed, rejected, compile-error, ...),
reasons, flags, geomean speed-up over the reference and the error per shape; the summary counts them by package.
A compile error the corpus documents is a ``limitation``; a fault or a hang is tried again in a plain process
without the workbench (``testbed/corpus_bare.py``): when it ends the same way there, it is the package's own
(``limitation``, the workbench's status kept in ``workbench_status``, the plain run in ``bare``).
"""

from __future__ import annotations

import collections
import datetime as dt
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench"), str(ROOT / "testbed")]

import corpus_bare  # noqa: E402
import corpus_eval_cases as C  # noqa: E402
import corpus_ops as co  # noqa: E402
from judge import evaluate_op, op_arguments  # noqa: E402
from recordings import versions, write_result  # noqa: E402

CASES = ROOT / "testbed" / "corpus_eval_cases.py"


def _summary(rows: list[dict], finished: bool, t0: float) -> dict:
    by = collections.defaultdict(collections.Counter)
    for r in rows:
        by[r["candidate"].split("__", 1)[1]][r["status"]] += 1
    return {"finished": finished, "ops": sorted({r["op"] for r in rows}), "candidates": len(rows),
            "by_package": {k: dict(v) for k, v in by.items()},
            "passed": sum(r["status"] == "passed" for r in rows), "wall_s": round(time.perf_counter() - t0, 1)}


def main() -> int:
    args = op_arguments(__doc__, C.OPS)
    missing = [p for p, ok in co.installed().items() if not ok and p != "meta-tlx"]
    if missing:
        print(f"not installed in {co.CORPUS}: {missing} (run bench/corpus.py --install)")
        return 2
    # the evaluation's Ray workers inherit this environment: the corpus packages on their path, not in the venv
    env = co.reproducer_env()
    corpus = [p for p in env.pop("PYTHONPATH").split(os.pathsep) if p]
    os.environ.update(env, PYTHONPATH=os.pathsep.join(corpus + [p for p in os.environ.get("PYTHONPATH", "").split(
        os.pathsep) if p]))
    sys.path[:0] = [p for p in corpus if p not in sys.path]
    import torch

    gpu = torch.cuda.is_available() and not args.cpu
    t0 = time.perf_counter()
    path = Path(args.json) if args.json else write_result({}, "corpus-evaluate")
    rows: list[dict] = []
    for op in args.ops.split(","):
        t = time.perf_counter()
        rows += [_classified(r, gpu, env) for r in evaluate_op(CASES, C, op, gpu, args.trials)]
        print(f"--- {op}: {time.perf_counter() - t:.1f} s", flush=True)
        write_result(_doc(rows, gpu, _summary(rows, False, t0)), "corpus-evaluate", str(path))
    for r in rows:
        ulps = [s.get("max_ulps") for s in r.get("shapes", [])]
        print(f"{r['op']:14s} {r['candidate']:34s} {r['status']:13s} x{r.get('geomean_speedup') or 0:5.2f} "
              f"max ulps {[round(u, 2) if u is not None else None for u in ulps]} {'; '.join(r['reasons'])[:100]}")
    summary = _summary(rows, True, t0)
    write_result(_doc(rows, gpu, summary), "corpus-evaluate", str(path))
    print(summary)
    print(path)
    return 0


def _classified(row: dict, gpu: bool, env: dict[str, str]) -> dict:
    """A compile error the corpus documents becomes a ``limitation`` (workbench.report.corpus.LIMITATIONS); a fault or
    a hang is tried again in a plain process without the workbench (corpus_bare): the same end there makes it the
    package's."""
    from workbench.report.corpus import limitation

    if row["status"] == "compile-error" and (meaning := limitation(" ".join(row["reasons"]))):
        return row | {"workbench_status": row["status"], "status": "limitation", "reasons": [meaning, *row["reasons"]]}
    if row["status"] not in ("fault", "hang"):
        return row
    _, make, cpu_shapes, gpu_shapes = C.OPS[row["op"]]
    bare = corpus_bare.bare_run(CASES, row["candidate"], make, gpu_shapes if gpu else cpu_shapes,
                                "cuda" if gpu else "cpu", env)
    print(f"    {row['candidate']} without the workbench: exit {bare['exit']}, {len(bare['finished'])} shape(s) "
          f"finished\n      " + bare["tail"][-600:].replace("\n", "\n      "), flush=True)
    return corpus_bare.judged(row, bare)


def _doc(rows: list[dict], gpu: bool, summary: dict) -> dict:
    import torch

    return {"date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "device": torch.cuda.get_device_name() if gpu else "cpu (Triton's interpreter)", "versions": versions(),
            "packages": {p: v for p, (v, _) in co.PACKAGES.items()},
            "command": " ".join(["python3", "bench/corpus_evaluate.py", *sys.argv[1:]]), "summary": summary,
            "rows": rows}


if __name__ == "__main__":
    sys.exit(main())
