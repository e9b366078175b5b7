"""Broadcast-fusion benchmark (issue 18): the fused TLX kernel vs the materialized and the decomposed torch paths.

    python3 bench/broadcast.py                         # every BENCH_SHAPE (~1.5-3 min on an H200)
    python3 bench/broadcast.py --shapes main           # by name (tlx_kernels.broadcast.BENCH_SHAPES)
    python3 bench/broadcast.py --sweep --budget-s 300  # every candidate config at every shape, ranked
    python3 bench/broadcast.py --from-sweep latest     # the bench, also tuning over the sweep's 3 best

A thin script: the family (shapes, inputs, the fp32 reference and its tolerance, the kernel's configs and public
call ``broadcast_linear``, the baselines ``materialized``: repeat_interleave + cat + one cuBLAS GEMM, and
``decomposed``: the user part once per user, the candidate part, a broadcast add) is
``tlx_kernels.broadcast.family``; the runner is ``workbench.measure.family``: every config checked first on the
odd and the realistic test shapes in NaN-poisoned outputs (isolated workers: a hang or a fault excludes the
config), per shape the public call tuned over the configs that passed and checked, both baselines checked, then
all timed in ``--rounds`` interleaved rounds (the ratio is the median of the per-round ratios). Target: >= 2x the
materialized path at the main shape. TFLOP/s use the op's own FLOPs (``2*N*(B*C*D_x + B*D_u)``).

Writes ``bench/results/broadcast-<date>.json`` (``--sweep``: ``broadcast-sweep-<date>.json``).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from workbench.measure import family as F
from workbench.measure.timing import TIMINGS

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "kernels"), str(ROOT / "testbed")]

from recordings import sweep_result, versions, write_result  # noqa: E402
from tlx_kernels.broadcast.family import BROADCAST, OURS  # noqa: E402


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shapes", default=None, help="comma list of BENCH_SHAPES names (default: all)")
    p.add_argument("--sweep", action="store_true", help="time every candidate config at every shape (--budget-s)")
    p.add_argument("--budget-s", type=float, default=300, help="sweep: total seconds to spend")
    p.add_argument("--from-sweep", default=None, metavar="PATH|latest", help="also tune over a sweep's 3 best")
    p.add_argument("--timing", default="calls", choices=sorted(TIMINGS), help="how one call is timed")
    p.add_argument("--rounds", type=int, default=7, help="interleaved rounds per shape (at least 1)")
    p.add_argument("--round-rep", type=float, default=40.0, help="ms of timed calls per item and round")
    p.add_argument("--warmup-s", type=float, default=1.0, help="seconds of warm-up before the first shape")
    p.add_argument("--workers", type=int, default=min(6, max(1, (os.cpu_count() or 2) // 2)), help="config checks")
    p.add_argument("--job-timeout", type=float, default=90.0, help="s per item of a GPU job before its worker dies")
    p.add_argument("--out", default=None, help="output JSON path")
    args = p.parse_args(argv)
    try:
        args.shape_list = F.chosen_shapes(BROADCAST, args.shapes, "sweep" if args.sweep else "bench")
    except ValueError as e:
        p.error(f"--shapes: {e}")
    return args


def swept(source: str) -> dict:
    """The ranking of a ``--sweep`` result (``latest``: the newest ``broadcast-sweep-*.json``); an older sweep
    (its best config per shape, no ranking) gives none."""
    ranking = (sweep_result("broadcast", source) or {}).get("ranking", {}).get("all", {})
    if not ranking:
        print("--from-sweep: that sweep has no ranking; CONFIGS only", flush=True)
    return ranking


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    t_start = time.time()
    shapes = args.shape_list
    s = F.Settings(dtype="bf16", rounds=args.rounds, rep_ms=args.round_rep, timing=args.timing,
                   warmup_s=args.warmup_s, workers=args.workers, job_timeout_s=args.job_timeout,
                   paths=[str(ROOT / "kernels")])
    info = F.on_gpu(BROADCAST, s, "bench/broadcast.py", shapes)
    if info is None:
        return 2
    ranked = swept(args.from_sweep) if args.from_sweep and not args.sweep else {}

    def plan(shape: tuple) -> dict:
        mine = {OURS: BROADCAST.configs(OURS, "candidates" if args.sweep else "configs", shape)}
        return F.with_ranked(BROADCAST, mine, ranked) if ranked else mine

    if args.sweep:
        part = F.sweep(BROADCAST, shapes, plan, s, args.budget_s)
    else:
        part = F.bench(BROADCAST, shapes, plan, s)
    command = " ".join(["python3", "bench/broadcast.py", *(sys.argv[1:] if argv is None else argv)])
    doc = F.document(BROADCAST, dict(info, versions=versions()), part, shapes, s, command, t_start)
    path = write_result(doc, "broadcast-sweep" if args.sweep else "broadcast", args.out)
    print(f"\nwrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path} ({doc['wall_s']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
