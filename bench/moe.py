"""Grouped GEMM (mixture of experts) benchmark: tlx_kernels.moe's public calls vs torch._grouped_mm and a loop of
torch.matmul, in interleaved rounds (issue 27).

    python3 bench/moe.py                          # every BENCH_SHAPE (5 layers x 4k/16k/64k tokens x 2 routings), fwd
    python3 bench/moe.py --quick                  # 4 shapes
    python3 bench/moe.py --shapes 32x7168x4096x16384:skewed,8x4096x7168x65536 --kinds fwd,dx,dw
    python3 bench/moe.py --sweep --shapes 32x7168x4096x16384:skewed   # every config x GROUP_M, as launches
    python3 bench/moe.py --compile-only           # no GPU needed: every variant x product x config for sm_90

A thin script: the family (shapes ``E x K x N x T[:routing]`` crossed with the products ``--kinds``, the operands,
the fp32 loop as reference and its tolerance, the public calls, the baselines ``torch._grouped_mm`` and a loop of
``torch.matmul``) is ``tlx_kernels.moe.family``; the runner is ``workbench.measure.family``: each public call
(``grouped_mm``, tuned over both variants on its first call, and the same call held to each variant) and each
baseline checked against the reference in NaN-poisoned outputs, then all timed in ``--rounds`` interleaved rounds
(the ratio is the median of the per-round ratios), every GPU step in an isolated worker. Targets (issue 27): the
best of ours >= 1.10x torch._grouped_mm on skewed routing, >= 1.00x on uniform (fwd). ``--sweep`` times every
candidate config of both variants and the TLX kernel's ``TRIALS`` with GROUP_M 1, 8, 16 and 64
(``calls.sweep_candidates``) as single launches, checked first in parallel workers, and ranks them.
``--compile-only`` compiles every variant x product x config for sm_90 here (CPU tensors, at the first shape) and
reports per config the registers (per async task for TLX), spills, local and shared memory, the static
orchestration findings and the compile time.

Writes ``bench/results/moe-<date>.json`` (``moe-sweep-``, ``moe-compile-``): device, versions, date, command, rows
of {kernel, shape [E, K, N, T, routing, kind, layer], dtype, config, ms, tflops, baseline, baseline_ms, ratio,
method}, the checks, every round's times and the summary against the targets.
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

from recordings import versions, write_result  # noqa: E402
from tlx_kernels.moe import routing  # noqa: E402
from tlx_kernels.moe.family import KINDS, MOE, SWEPT  # noqa: E402


def parse_args(argv: list[str] | None) -> tuple[argparse.Namespace, list[tuple]]:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help=f"{len(routing.QUICK_SHAPES)} shapes only")
    p.add_argument("--shapes", default=None, help="ExKxNxT[:uniform|skewed][,...] (any list)")
    p.add_argument("--kinds", default=None, help=f"comma list from {','.join(KINDS)} (default: fwd; "
                   "--compile-only: all)")
    p.add_argument("--compile-only", action="store_true", help="compile every variant x product x config for "
                   "sm_90 (no GPU needed) and report resources; at the first shape")
    p.add_argument("--sweep", action="store_true", help="time every config and trial of both variants with "
                   "GROUP_M 1, 8, 16 and 64 as launches (calls.sweep_candidates) instead of the public calls")
    p.add_argument("--budget-s", type=float, default=400.0, help="--sweep: wall-clock budget of the whole run, s")
    p.add_argument("--timing", default="calls", choices=sorted(TIMINGS), help="how one call is timed")
    p.add_argument("--rounds", type=int, default=7, help="interleaved rounds per shape (at least 1)")
    p.add_argument("--round-rep", type=float, default=40.0, help="ms of timed calls per item and round")
    p.add_argument("--workers", type=int, default=min(6, max(1, (os.cpu_count() or 2) // 2)),
                   help="--sweep: workers compiling and checking at once before the timing")
    p.add_argument("--job-timeout", type=float, default=300.0, help="s one item may take in the worker (tuning and "
                   "compiling included) before it counts as hung")
    p.add_argument("--out", default=None, help="output JSON path")
    args = p.parse_args(argv)
    kinds = args.kinds or (",".join(KINDS) if args.compile_only else "fwd")
    args.kinds = [k.strip() for k in kinds.split(",") if k.strip()]
    if any(k not in KINDS for k in args.kinds):
        p.error(f"--kinds: choose from {KINDS}, got {args.kinds}")
    try:
        base = [MOE.parse_shape(t) for t in args.shapes.split(",") if t] if args.shapes else \
            MOE.shapes["quick" if args.quick else "bench"]
    except ValueError as e:
        p.error(f"--shapes: {e}")
    shapes = [(*s[:5], kind, s[6]) for s in base for kind in args.kinds]
    return args, shapes


def main(argv: list[str] | None = None) -> int:
    args, shapes = parse_args(argv)
    t_start = time.time()
    command = " ".join(["python3", "bench/moe.py", *(sys.argv[1:] if argv is None else argv)])
    s = F.Settings(dtype="bf16", rounds=args.rounds, rep_ms=args.round_rep, timing=args.timing,
                   workers=args.workers, job_timeout_s=args.job_timeout, paths=[str(ROOT / "kernels")])
    if args.compile_only:
        first = [x for x in shapes if x[:5] == shapes[0][:5]]
        print(f"compile-only, sm_90, at {MOE.shape_name(shapes[0])}: every variant x {args.kinds} x config")
        rows = [r for x in first for r in F.compile_only(MOE, x, MOE.variants())]
        doc = F.document(MOE, dict(device="none (compiled for sm_90 on the CPU)", versions=versions()),
                         dict(mode="compile-only", configs=rows), first, s, command, t_start)
        path = write_result(doc, "moe-compile", args.out)
        print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
        return 1 if any(r.get("error") or r.get("findings") or r.get("spill_stores") for r in rows) else 0
    info = F.on_gpu(MOE, s, "bench/moe.py", shapes)
    if info is None:
        print("(on this machine: python3 bench/moe.py --compile-only compiles every variant for sm_90 and reports "
              "registers, spills and shared memory)")
        return 2
    if args.sweep:
        part = F.sweep(MOE, shapes, lambda x: {SWEPT: MOE.configs(SWEPT, "candidates", x)}, s, args.budget_s)
    else:
        part = F.bench(MOE, shapes, lambda x: {k: None for k in MOE.kernels}, s)
    doc = F.document(MOE, dict(info, versions=versions()), part, shapes, s, command, t_start)
    path = write_result(doc, "moe-sweep" if args.sweep else "moe", args.out)
    print(f"\nwrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path} ({doc['wall_s']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
