"""Attention forward benchmark: our public calls vs torch SDPA (each backend) and Meta's Hopper FA tutorials, one run.

    python3 bench/attention.py                          # BENCH_SHAPES (7) and S 8k and 32k, ~3-4 min on an H200
    python3 bench/attention.py --quick                  # the two B4 H32 S4096 D128 shapes, ~1 min
    python3 bench/attention.py --shapes 1x32x16384x128,4x32x4096x128c --variants ws_persistent
    python3 bench/attention.py --timing flush           # kernel times (L2 flushed) instead of back-to-back calls
    python3 bench/attention.py --sweep --budget-s 240   # every candidate config per variant, 4 main shapes
    python3 bench/attention.py --sweep --space trials --variants ws_pipelined   # default vs TRIALS
    python3 bench/attention.py --from-sweep latest      # the bench, each variant also tuning over its swept best

A thin script: the family (shapes, inputs, the fp32 reference on two heads and its tolerance, each variant's
configs per head dim, the public calls, the baselines: torch SDPA with each backend, Meta's tutorial kernels from
the installed wheel, non-causal) is ``tlx_kernels.attention.family``; the runner (a preflight of every config at
B2 H8 S1040 per head dim and mask in NaN-poisoned outputs, each public call tuned and checked as a user makes it,
the library's top-level ``attention`` too, each baseline checked, then all timed in interleaved rounds; or the
sweep of every candidate's prepared launch) is ``workbench.measure.family``, every GPU step in an isolated worker.
FLOPs = 4 B H S^2 D (/2 causal).

Writes ``bench/results/attention-<date>.json`` (sweep: ``attention-sweep-<date>.json``): device, versions, date,
command, rows of {kernel, shape (B, H, S, D, causal), dtype, config, ms, tflops, baseline, baseline_ms, ratio,
method} (ratio = baseline_ms / ms, the median of the per-round ratios), the summary against the targets, every
check, the preflight; a sweep: its measurements and its ranking per head dim and mask.
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
from tlx_kernels.attention.family import ATTENTION, META, TOP  # noqa: E402

VARIANTS = tuple(k for k in ATTENTION.kernels if k != TOP)
SPACES = {"grid": "candidates", "configs": "listed", "trials": "trials"}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="the two B4 H32 S4096 D128 shapes")
    ap.add_argument("--sweep", action="store_true", help="time every candidate config (see --budget-s)")
    ap.add_argument("--budget-s", type=float, default=240.0, help="sweep: stop starting candidates after this")
    ap.add_argument("--space", choices=tuple(SPACES), default="grid",
                    help="sweep: CONFIGS + TRIALS + a grid; CONFIGS + TRIALS; or the default + TRIALS")
    ap.add_argument("--from-sweep", default=None, help="'latest' or a sweep JSON: also try its best configs")
    ap.add_argument("--shapes", default=None, help="e.g. 4x32x4096x128,4x32x4096x128c")
    ap.add_argument("--variants", default=",".join(VARIANTS), help=f"comma list from {','.join(VARIANTS)}")
    ap.add_argument("--no-top", action="store_true", help="leave out the top-level attention() (its tuning)")
    ap.add_argument("--timing", default="calls", choices=sorted(TIMINGS), help="how one call is timed (bench)")
    ap.add_argument("--dtype", choices=("bf16", "fp16"), default="bf16")
    ap.add_argument("--no-meta", action="store_true", help="leave out Meta's tutorial kernels")
    ap.add_argument("--tune-rep", type=int, default=25, help="rep (ms) of a timing of a config (sweep)")
    ap.add_argument("--warmup-s", type=float, default=5.0, help="GPU warm-up (SDPA) before the first timing")
    ap.add_argument("--workers", type=int, default=max(1, min(12, (os.cpu_count() or 2) - 2)), help="preflight")
    ap.add_argument("--job-timeout", type=float, default=120.0,
                    help="s per item of a GPU job (a config's compile and check, a call, a round)")
    ap.add_argument("--rounds", type=int, default=7, help="interleaved rounds of the rows' timings (at least 1)")
    ap.add_argument("--round-rep", type=int, default=40, help="rep (ms) of one timing in a round")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    args.variants = [v for v in args.variants.split(",") if v]
    unknown = [v for v in args.variants if v not in VARIANTS]
    if unknown:
        ap.error(f"unknown variants {unknown}; from {VARIANTS}")
    return args


def swept(source: str) -> dict[str, dict]:
    """Per case, the ranking of a ``--sweep`` result (``latest``: the newest); an older sweep's ``best``
    (one config per variant) reads as a ranking of one."""
    doc = sweep_result("attention", source) or {}
    if "best" in doc:
        return {case: {v: [{"cfg": cfg}] for v, cfg in best.items()} for case, best in doc["best"].items()}
    return doc.get("ranking", {})


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    t_start = time.time()
    s = F.Settings(dtype=args.dtype, rounds=args.rounds, rep_ms=args.round_rep, tune_rep_ms=args.tune_rep,
                   timing=args.timing, warmup_s=args.warmup_s, workers=args.workers, job_timeout_s=args.job_timeout,
                   paths=[str(ROOT / "kernels")])
    shapes = F.chosen_shapes(ATTENTION, args.shapes, "sweep" if args.sweep else "quick" if args.quick else "bench")
    info = F.on_gpu(ATTENTION, s, "bench/attention.py", shapes)
    if info is None:
        return 2
    ranked = swept(args.from_sweep) if args.from_sweep and not args.sweep else {}
    ours = args.variants + ([] if args.sweep or args.no_top else [TOP])

    def plan(shape: tuple) -> dict:
        space = SPACES[args.space] if args.sweep else "configs"
        mine = {k: ATTENTION.configs(k, space, shape) for k in ours}
        return F.with_ranked(ATTENTION, mine, ranked.get(ATTENTION.case(shape), {}), n=1)

    if args.sweep:
        part = F.sweep(ATTENTION, shapes, plan, s, args.budget_s)
    else:
        metas = [] if args.no_meta else list(META)
        part = F.bench(ATTENTION, shapes, plan, s, baselines=[b for b in ATTENTION.baselines if b not in META] + metas)
    command = " ".join(["python3", "bench/attention.py", *(sys.argv[1:] if argv is None else argv)])
    doc = F.document(ATTENTION, dict(info, versions=versions()), part, shapes, s, command, t_start)
    path = write_result(doc, "attention-sweep" if args.sweep else "attention", args.out)
    print(f"\nwrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path} ({doc['wall_s']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
