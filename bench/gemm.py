"""GEMM benchmark: the library's public ``matmul`` vs cuBLAS, Triton's tl.dot and Meta's Hopper GEMM tutorials, one run.

    python3 bench/gemm.py                        # BENCH_SHAPES (cubes and rectangles), ~2.5 min on an H200
    python3 bench/gemm.py --quick                # 8192^3, 4096^3, 2048^3
    python3 bench/gemm.py --shapes 4096x4096x4096,16384x1024x4096 --kernels ws_cooperative --meta meta_ws
    python3 bench/gemm.py --timing flush         # kernel times (L2 flushed) instead of a user's back-to-back calls
    python3 bench/gemm.py --sweep --budget-s 200 # every candidate config of every kernel (prepared launches)
    python3 bench/gemm.py --from-sweep latest    # the bench, tuning over CONFIGS + the sweep's 3 best

A thin script: the family (shapes, operands, the fp32 reference and its tolerance, our configs and public calls,
the baselines) is ``tlx_kernels.gemm.family``; the runner (a preflight of every config in NaN-poisoned outputs,
each public call tuned and checked as a user makes it, each baseline checked, then all timed in interleaved
rounds; or the sweep of every candidate's prepared launch) is ``workbench.measure.family``, every GPU step in an
isolated worker. Baselines: cuBLAS (``torch.matmul``), Triton's ``tl.dot`` GEMM (its public call, tuned over its
CONFIGS) and Meta's tutorial kernels from the installed triton-utlx wheel (unmodified, the fastest of
``--meta-configs`` of their autotune configs by kernel time, launched as prepared launches: which favours them).

Writes ``bench/results/gemm-<date>.json`` (``gemm-sweep-<date>.json``): device, versions, date, command, rows of
{kernel, shape, dtype, config, ms, tflops, baseline, baseline_ms, ratio, method} (ratio = baseline_ms / ms, the
median of the per-round ratios), the summary against the targets (>= Meta's best at 8192^3 and 4096^3, >= cuBLAS
at 2048^3 and 1024^3), every check, the preflight, the rounds' times; a sweep: its measurements and ranking.
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
from tlx_kernels.gemm.family import GEMM, META  # noqa: E402


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="8192^3, 4096^3 and 2048^3 only")
    p.add_argument("--sweep", action="store_true", help="time every candidate config (see module docstring)")
    p.add_argument("--budget-s", type=float, default=200.0, help="--sweep: wall-clock budget of the whole run, s")
    p.add_argument("--kernels", default=None, help=f"comma list of ours, from {','.join(GEMM.sweepable)}")
    p.add_argument("--shapes", default=None, help="MxNxK[,MxNxK...] (any list)")
    p.add_argument("--dtype", default="bf16", choices=["bf16", "fp16"], help="inputs and output")
    p.add_argument("--meta", default="meta_ws,meta_coop", help=f"Meta's kernels, from {','.join(META)}")
    p.add_argument("--no-meta", action="store_true", help="leave out Meta's tutorial kernels")
    p.add_argument("--meta-configs", type=int, default=8, help="configs of each Meta kernel tried (theirs, pruned)")
    p.add_argument("--timing", default="calls", choices=sorted(TIMINGS), help="how one call is timed (bench)")
    p.add_argument("--tune-rep", type=int, default=30, help="rep (ms) of a timing of a config or of Meta's")
    p.add_argument("--warmup-s", type=float, default=2.0, help="seconds of cuBLAS before the first timing")
    p.add_argument("--workers", type=int, default=min(6, max(1, (os.cpu_count() or 2) // 2)), help="preflight workers")
    p.add_argument("--odd", action="store_true", help="--sweep: preflight also checks the odd shape 1000x1500x777")
    p.add_argument("--job-timeout", type=float, default=240.0,
                   help="s per item of a GPU job (a config, a kernel, a round) before its worker is killed")
    p.add_argument("--from-sweep", default=None, metavar="PATH|latest",
                   help="also tune over the 3 best configs per kernel of a --sweep result (latest: the newest)")
    p.add_argument("--rounds", type=int, default=7, help="interleaved rounds per shape (at least 1)")
    p.add_argument("--round-rep", type=int, default=40, help="rep (ms) of one timing in a round")
    p.add_argument("--out", default=None, help="output JSON path")
    args = p.parse_args(argv)
    ours = GEMM.sweepable if args.sweep else GEMM.kernels
    args.kernels = [k for k in (args.kernels.split(",") if args.kernels else ours) if k]
    args.metas = [] if args.no_meta else [m for m in args.meta.split(",") if m]
    unknown = [k for k in args.kernels if k not in ours] + [m for m in args.metas if m not in META]
    if unknown:
        p.error(f"unknown kernels {unknown}; ours: {ours}, Meta's: {tuple(META)}")
    return args


def swept(source: str) -> dict:
    """The ranking of a ``--sweep`` result (``latest``: the newest ``gemm-sweep-*.json``)."""
    ranking = (sweep_result("gemm", source) or {}).get("ranking", {})
    return ranking.get("all", ranking)  # a sweep before the family runner ranked per kernel alone


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    t_start = time.time()
    s = F.Settings(dtype=args.dtype, rounds=args.rounds, rep_ms=args.round_rep, tune_rep_ms=args.tune_rep,
                   timing=args.timing, warmup_s=args.warmup_s, workers=args.workers, job_timeout_s=args.job_timeout,
                   candidates=args.meta_configs, paths=[str(ROOT / "kernels")])
    shapes = F.chosen_shapes(GEMM, args.shapes, "sweep" if args.sweep else "quick" if args.quick else "bench")
    info = F.on_gpu(GEMM, s, "bench/gemm.py", shapes)
    if info is None:
        return 2
    ranked = swept(args.from_sweep) if args.from_sweep and not args.sweep else {}

    def plan(shape: tuple) -> dict:
        mine = {k: GEMM.configs(k, "candidates" if args.sweep else "configs", shape) for k in args.kernels}
        return F.with_ranked(GEMM, mine, ranked) if ranked else mine

    GEMM.odd = args.odd or not args.sweep
    if args.sweep:
        part = F.sweep(GEMM, shapes, plan, s, args.budget_s)
    else:
        part = F.bench(GEMM, shapes, plan, s, baselines=["cublas", "triton_dot", *args.metas])
    command = " ".join(["python3", "bench/gemm.py", *(sys.argv[1:] if argv is None else argv)])
    doc = F.document(GEMM, dict(info, versions=versions()), part, shapes, s, command, t_start)
    path = write_result(doc, "gemm-sweep" if args.sweep else "gemm", args.out)
    print(f"\nwrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path} ({doc['wall_s']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
