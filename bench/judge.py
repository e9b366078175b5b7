"""The judge's defaults on real sizes: false rejects, bugs caught and adversarial candidates caught.

    python3 bench/judge.py [--ops gemm,attention,...] [--trials 3] [--cpu] [--json PATH]

On an H100/H200 (default): every op of ``testbed/judge_cases.py`` at its H200 shapes through ``workbench.evaluate``
(the correct kernels, the library's TLX GEMM and attention among them, and the planted bugs), then the adversarial
candidates of ``tests/evaluate/candidates.py`` (a side stream and a freed-memory output among them) at 2^22
elements. ``--cpu``: the same at the CPU shapes in Triton's interpreter (GPU-only cases left out). Prints a table
and writes JSON (default bench/results/judge-<date>.json): per candidate its status, reasons and error per shape;
the counts: correct kernels rejected (target 0), bugs caught (target >= 95%), adversarial caught (target all).
"""

from __future__ import annotations

import argparse
import datetime as dt
import inspect
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench"), str(ROOT / "testbed")]

import judge_cases as J  # noqa: E402
from recordings import versions, write_result  # noqa: E402

CASES = ROOT / "testbed" / "judge_cases.py"
ADVERSARIAL = ROOT / "tests" / "evaluate" / "candidates.py"
ADVERSARIAL_CPU_ONLY_OK = {"correct"}


_SHAPE_KEYS = ("shape", "passed", "error", "trials", "max_ulps", "p99_ulps", "norm_rel_err", "rule", "ms", "ref_ms",
               "speedup")


def evaluate_op(cases: Path, module: Any, op: str, gpu: bool, trials: int, skip: set[str] = frozenset()) -> list[dict]:
    """``workbench.evaluate`` of one op of a cases module (``OPS[op]``: reference, input maker, CPU shapes, GPU
    shapes; ``candidates(op)``): one row per candidate with its status, reasons, flags, speed-up and error per
    shape. ``skip``: candidates left out."""
    from workbench import evaluate

    ref, make, cpu_shapes, gpu_shapes = module.OPS[op]
    names = [c for c in module.candidates(op) if c not in skip]
    shapes = gpu_shapes if gpu else cpu_shapes
    if not shapes or not names:
        return []
    res = evaluate([f"{cases}:{c}" for c in names], reference=f"{cases}:{ref}", inputs=f"{cases}:{make}",
                   shapes=shapes, trials=trials, rounds=2, progress=True, timeout_s=600)
    return [{"op": op, "candidate": r["candidate"].split(":")[1],
             **{k: r.get(k) for k in ("status", "reasons", "flags", "geomean_speedup")},
             "shapes": [{k: s.get(k) for k in _SHAPE_KEYS} for s in r["shapes"]]}
            for r in res.rows]


def _op_rows(op: str, gpu: bool, trials: int) -> list[dict]:
    rows = evaluate_op(CASES, J, op, gpu, trials, skip=set() if gpu else J.GPU_ONLY)
    return [{**r, "bug": J.is_bug(r["candidate"]), "planted": getattr(J, r["candidate"]).__doc__} for r in rows]


def _adversarial(gpu: bool, trials: int) -> list[dict]:
    from workbench import evaluate

    sys.path.insert(0, str(ADVERSARIAL.parent))
    import candidates as C  # noqa: PLC0415 - the adversarial set, as data

    names = [n for n, v in vars(C).items() if inspect.isfunction(v) and not n.startswith("_")
             and v.__module__ == C.__name__
             and n not in ("make_inputs", "reference") and (gpu or n not in ("side_stream", "returns_freed_memory"))]
    res = evaluate([f"{ADVERSARIAL}:{n}" for n in names], reference=f"{ADVERSARIAL}:reference",
                   inputs=f"{ADVERSARIAL}:make_inputs", shapes=[(1 << 22,), (1000,)] if gpu else [(1000,)],
                   trials=trials, rounds=2, progress=True)
    return [{"candidate": r["candidate"].split(":")[1], "adversarial": r["candidate"].split(":")[1] != "correct",
             **{k: r.get(k) for k in ("status", "reasons", "flags", "geomean_speedup")}} for r in res.rows]


def op_arguments(doc: str, ops: Any) -> argparse.Namespace:
    """The command line of a script over a cases module's ops: --ops, --trials, --cpu, --json."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--ops", default=",".join(ops))
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--cpu", action="store_true", help="CPU shapes in Triton's interpreter")
    ap.add_argument("--json")
    return ap.parse_args()


def main() -> None:
    args = op_arguments(__doc__, J.OPS)
    import torch

    gpu = torch.cuda.is_available() and not args.cpu
    t0 = time.perf_counter()
    # one path for the whole run, written after every op: a run stopped by a time limit keeps the ops it finished
    path = Path(args.json) if args.json else write_result({}, "judge")
    rows: list[dict] = []
    adv = _adversarial(gpu, args.trials)  # first: quick, and every one of them must be caught
    _write(path, rows, adv, gpu, t0, finished=False)
    for op in args.ops.split(","):
        t = time.perf_counter()
        rows += _op_rows(op, gpu, args.trials)
        print(f"--- {op}: {time.perf_counter() - t:.1f} s", flush=True)
        _write(path, rows, adv, gpu, t0, finished=False)
    for r in rows + adv:
        ulps = [s.get("max_ulps") for s in r.get("shapes", [])]
        print(f"{r.get('op', 'adversarial'):10s} {r['candidate']:34s} {r['status']:9s} "
              f"max ulps {[round(u, 2) if u is not None else None for u in ulps]} {'; '.join(r['reasons'])[:110]}")
    print(_write(path, rows, adv, gpu, t0, finished=True)["summary"])
    print(path)


def _write(path: Path, rows: list[dict], adv: list[dict], gpu: bool, t0: float, finished: bool) -> dict:
    import torch

    correct = [r for r in rows if not r["bug"]]
    bugs = [r for r in rows if r["bug"]]
    caught = [r for r in bugs if r["status"] in ("failed", "rejected")]
    false_rejects = [r for r in correct if r["status"] != "passed"]
    adv_caught = [r for r in adv if r["adversarial"] and r["status"] in ("failed", "rejected")]
    summary = {"finished": finished, "ops": sorted({r["op"] for r in rows}), "correct": len(correct),
               "false_rejects": len(false_rejects),
               "false_reject_names": [r["candidate"] for r in false_rejects], "bugs": len(bugs),
               "bugs_caught": len(caught), "bugs_missed": [r["candidate"] for r in bugs if r not in caught],
               "adversarial": sum(r["adversarial"] for r in adv), "adversarial_caught": len(adv_caught),
               "adversarial_correct_passed": all(r["status"] == "passed" for r in adv if not r["adversarial"]),
               "wall_s": round(time.perf_counter() - t0, 1)}
    doc = {"date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
           "device": torch.cuda.get_device_name() if gpu else "cpu (Triton's interpreter)", "versions": versions(),
           "command": " ".join(["python3", "bench/judge.py", *sys.argv[1:]]), "summary": summary, "rows": rows,
           "adversarial": adv}
    write_result(doc, "judge", str(path))
    return doc


if __name__ == "__main__":
    main()
