"""``workbench.evaluate`` of 32 candidates x 3 shapes x 5 trials on one GPU, against a bare do_bench loop of the same
candidates (what a kernel agent's loop does without a judge).

    python3 bench/evaluate.py [--trials 5] [--json PATH]

The candidates are the 32 configs of ``testbed/judge_cases.py``'s fp16 GEMM + bias + GELU (``CONFIG_NAMES``). Each
side runs in a fresh process with an empty Triton cache of its own, so compiles count for both: the bare loop
calls each candidate once per shape and times it with ``triton.testing.do_bench`` (its defaults); the evaluation
compiles and checks them in parallel, judges each on ``trials`` fresh seeds per shape with every guard, and times
them interleaved with torch's reference. Writes JSON (default bench/results/evaluate-<date>.json): both wall
times, their ratio (target <= 2x), the per-candidate overhead, and whether both pick the same fastest config.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench"), str(ROOT / "testbed")]

from recordings import versions, write_result  # noqa: E402

CASES = ROOT / "testbed" / "judge_cases.py"
SHAPES = [("float16", 4096, 4096, 4096), ("float16", 2048, 2048, 2048), ("float16", 1000, 1000, 999)]


def bare_loop() -> dict:
    import judge_cases as J
    import triton.testing

    t0 = time.perf_counter()
    out = {}
    for name in J.CONFIG_NAMES:
        cand = getattr(J, name)
        for shape in SHAPES:
            args = J.gemm_inputs(shape, 0, "cuda")
            out.setdefault(name, []).append(triton.testing.do_bench(lambda c=cand, a=args: c(*a)))
    return {"wall_s": time.perf_counter() - t0, "ms": out}


def evaluation(trials: int) -> dict:
    import judge_cases as J

    from workbench import evaluate

    t0 = time.perf_counter()
    res = evaluate([f"{CASES}:{n}" for n in J.CONFIG_NAMES], reference=f"{CASES}:gemm_gelu_reference",
                   inputs=f"{CASES}:gemm_inputs", shapes=SHAPES, trials=trials, rounds=3, timeout_s=600)
    wall = time.perf_counter() - t0
    return {"wall_s": wall, "info": res.info, "rows": res.rows}


def _in_fresh_process(what: str, trials: int) -> dict:
    cache = tempfile.mkdtemp(prefix="triton-cache-")
    env = {**os.environ, "TRITON_CACHE_DIR": cache, "TLX_WORKBENCH_CACHE_DIR": cache + "-wb"}
    t0 = time.perf_counter()
    p = subprocess.run([sys.executable, __file__, "--child", what, "--trials", str(trials)], env=env,
                       capture_output=True, text=True, timeout=1500)
    if p.returncode != 0:
        raise RuntimeError(f"{what} failed:\n{p.stderr[-4000:]}")
    doc = json.loads(p.stdout.strip().splitlines()[-1])
    doc["process_s"] = time.perf_counter() - t0
    sys.stderr.write(p.stderr[-3000:])
    return doc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--json")
    ap.add_argument("--child", choices=["bare", "evaluate"])
    args = ap.parse_args()
    if args.child:
        doc = bare_loop() if args.child == "bare" else evaluation(args.trials)
        print(json.dumps(doc, default=str))
        return
    import torch

    bare = _in_fresh_process("bare", args.trials)
    ev = _in_fresh_process("evaluate", args.trials)
    passed = [r for r in ev["rows"] if r["status"] == "passed"]
    best_eval = max(passed, key=lambda r: r.get("geomean_speedup") or 0)["candidate"].split(":")[1] if passed else None
    geo = {n: sum(v) for n, v in bare["ms"].items()}
    best_bare = min(geo, key=geo.get)
    summary = {"candidates": len(ev["rows"]), "shapes": len(SHAPES), "trials": args.trials,
               "evaluate_wall_s": round(ev["wall_s"], 2), "evaluate_process_s": round(ev["process_s"], 2),
               "bare_wall_s": round(bare["wall_s"], 2), "bare_process_s": round(bare["process_s"], 2),
               "ratio": round(ev["process_s"] / bare["process_s"], 3),
               "overhead_per_candidate_s": round((ev["process_s"] - bare["process_s"]) / len(ev["rows"]), 3),
               "summed_s": {k: round(sum(sh.get(k) or 0 for r in ev["rows"] for sh in r["shapes"]), 2)
                            for k in ("judge_s", "timing_s")},  # where the evaluation's time went, summed
               "judge_parts_s": {k: round(sum((sh.get("judge_parts_s") or {}).get(k) or 0 for r in ev["rows"]
                                              for sh in r["shapes"]), 2)
                                 for k in ("first_call_s", "trials_s", "refill_s")},
               "compile_s_summed": round(sum(r.get("compile_s") or 0 for r in ev["rows"]), 2),
               "run_s_summed": round(sum(r.get("run_s") or 0 for r in ev["rows"]), 2),  # the GPU worker's calls
               "phases": {k: ev["info"].get(k) for k in ("connect_s", "compiled_by_s")},
               "passed": len(passed), "statuses": sorted({r["status"] for r in ev["rows"]}),
               "fastest_by_evaluate": best_eval, "fastest_by_bare_loop": best_bare}
    print(json.dumps(summary, indent=1))
    doc = {"date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "device": torch.cuda.get_device_name(),
           "versions": versions(), "command": " ".join(["python3", "bench/evaluate.py", *sys.argv[1:]]),
           "summary": summary, "bare_ms": bare["ms"], "rows": ev["rows"], "info": ev["info"]}
    print(write_result(doc, "evaluate", args.json))


if __name__ == "__main__":
    main()
