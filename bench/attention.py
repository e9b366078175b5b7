"""Attention forward benchmark: our public calls vs torch SDPA (each backend) and Meta's Hopper FA tutorials, one run.

    python3 bench/attention.py                          # BENCH_SHAPES (7) and S 8k and 32k, ~3-4 min on an H200
    python3 bench/attention.py --quick                  # the two B4 H32 S4096 D128 shapes, ~1 min
    python3 bench/attention.py --shapes 1x32x16384x128,4x32x4096x128c --variants ws_persistent
    python3 bench/attention.py --timing flush           # kernel times (L2 flushed) instead of back-to-back calls
    python3 bench/attention.py --sweep --budget-s 240   # every candidate config per variant, 4 main shapes, ~4.5 min
    python3 bench/attention.py --sweep --space trials --variants ws_pipelined   # default vs TRIALS
    python3 bench/attention.py --from-sweep latest      # the bench, each variant also tuning over its swept best

Every GPU step (bench/attention_jobs.py) runs in workbench.run's isolated worker (``workbench.run.jobs``), so a
kernel that hangs or faults is recorded and the run goes on in a fresh worker. First a preflight: each (variant,
config, head dim, causal) the public calls can tune over is compiled and checked against the fp32 reference at B2 H8
S1040 (tails; NaN-poisoned output), ``--workers`` at a time. Then one worker, per shape: torch SDPA with each
backend that runs (FLASH, CUDNN, EFFICIENT; the first shape after ``--warmup-s`` of GPU warm-up); our public calls
as a user makes them: each variant's ``attention(q, k, v, causal)`` (tuned over its CONFIGS on the first call) and
the library's top-level ``attention`` (tuned over the variants, checked against SDPA), each checked on two heads
against the fp32 reference (``tolerance``: 2e-2 bf16) in NaN-poisoned outputs through the cached launch; Meta's
tutorial kernels from the installed wheel (their own ``attention`` wrappers, unmodified, autotuned by their own
configs; non-causal only); SDPA again; then the SDPA backends, our public calls and Meta's in ``--rounds``
interleaved rounds (the order rotates each round; rows and targets use the median of the per-round ratios, so the
H200's clock, which drops as it heats, moves both sides alike). How one call is timed: ``--timing``
(``workbench.measure.timing.time_call``; default back-to-back calls, as a user's loop sees them). FLOPs = 4 B H S_q
S_kv D (/2 causal). ``--sweep`` times prepared launches of every candidate config (kernel time) to choose CONFIGS.

Writes ``bench/results/attention-<date>.json`` (sweep: ``attention-sweep-<date>.json``): device, date, torch,
triton, command, rows of {kernel, shape, dtype, causal, config, ms, tflops, baseline, baseline_ms, ratio, method}
(ratio = baseline_ms / ms, one row per baseline measured in the run), every measurement, the targets.
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

from workbench.measure.compare import fastest
from workbench.measure.timing import TIMINGS
from workbench.run.jobs import Jobs, in_parallel

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "kernels"))
sys.path[:0] = [str(ROOT / "bench"), str(ROOT / "testbed")]

from attention_jobs import BACKENDS, META, cname, item_name  # noqa: E402
from attention_report import baseline_rows, print_table, targets  # noqa: E402
from recordings import write_result  # noqa: E402

VARIANTS = ("triton_baseline", "ws", "ws_pipelined", "ws_pingpong", "ws_persistent")
TOP = "attention"  # the library's top-level attention(): its tuned pick among the variants
PREFLIGHT = (2, 8, 1040)  # B, H, S: 1040 = 8 x 128 + 16 (tails), ints specialised like the bench shapes
SWEEP_SHAPES = [(4, 32, 4096, 128, False), (4, 32, 4096, 128, True), (4, 32, 4096, 64, False),
                (4, 32, 4096, 64, True)]


def log(*a: Any) -> None:
    print(*a, flush=True)


class GPU:
    """The bench's GPU jobs (bench/attention_jobs.py) in workbench.run's isolated worker (``workbench.run.jobs``):
    one call per item, ``timeout_s`` each (the warm-up and the interleaved rounds: one call), so an item that hangs
    or crashes is its row's error and the rest go on in a fresh worker."""

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self.jobs = Jobs(paths=[str(ROOT / "bench"), str(ROOT / "kernels")], name="attention")

    def run(self, job: dict) -> list[dict]:
        op = job["op"]
        if op not in ("warm", "rounds"):
            failed = lambda it, why: {"item": item_name(op, it), "ms": None, "error": why}  # noqa: E731
            return self.jobs.each("attention_jobs:run_job", job, "items", timeout_s=self.timeout_s, failed=failed)
        limit = job.get("seconds", 0.0) + self.timeout_s * (job.get("rounds", 0) + 1)
        a = self.jobs.call("attention_jobs:run_job", job, timeout_s=limit)
        rows, current = a.reported("row"), (a.reported("begin") or [None])[-1]
        if a.failure and current is not None and current not in {r["item"] for r in rows}:
            rows.append({"item": current, "ms": None, "error": a.failure})
        return rows

    def close(self) -> None:
        self.jobs.close()


# ------------------------------------------------------------------------------------------------
# plans
# ------------------------------------------------------------------------------------------------


def sweep_space(variant: str, D: int, space: str = "grid") -> list[dict]:
    """Candidate configs of a variant for head dim ``D``, all that fit: its CONFIGS, then its TRIALS (configs not
    yet run on a GPU), then a grid (``space`` "grid"); or its default and its TRIALS (``space`` "trials"). The
    teaching steps (ws, ws_pipelined) have no grid; the persistent kernel's schedule knobs are runtime
    arguments, so its grid costs compiles only for the other knobs."""
    from tlx_kernels import attention as A
    from tlx_kernels.attention import common as C

    grid: list[dict] = []
    if variant == "triton_baseline":
        grid = [dict(BLOCK_M=128, BLOCK_N=bn, NUM_STAGES=s, num_warps=w)
                for bn, s, w in itertools.product((128, 64), (2, 3, 4), (8, 4))]
    elif variant in ("ws_pingpong", "ws_persistent"):
        main = [(64, 128, 2, nb, 240) for nb in (2, 3)] + [(64, 64, 2, 3, 240)]
        more = [(64, 128, 2, 4, 240), (64, 64, 2, 4, 240), (128, 64, 2, 3, 240), (128, 64, 2, 4, 240),
                (64, 64, 3, 3, 160), (64, 64, 3, 4, 160)]
        knobs = [(True, False), (False, False)]
        for (bm, bn, g, nb, regs), (pv, wr) in itertools.chain(itertools.product(main, knobs + [(True, True)]),
                                                               itertools.product(more, knobs)):
            grid.append(dict(BLOCK_M=bm, BLOCK_N=bn, NUM_GROUPS=g, NUM_BUFFERS=nb, CONSUMER_REGS=regs, PV_IN_TURN=pv,
                             WARP_RELEASE=wr))
        if variant == "ws_persistent":
            sched = [(8, True), (4, True), (16, True), (2, True), (8, False)]
            grid = [dict(c, GROUP_HEADS=gh, SNAKE=sn) for c in grid for gh, sn in sched]
    seen, out = set(), []
    mod = A.MODULES[variant]
    trials = list(getattr(mod, "TRIALS", []))
    listed = mod.CONFIGS[:1] + trials if space == "trials" else list(mod.CONFIGS) + trials
    for cfg in listed + (grid if space == "grid" else []):
        if C.fits(cfg, D) and cname(cfg) not in seen:
            seen.add(cname(cfg))
            out.append(dict(cfg))
    return out


def compile_key(cfg: dict) -> str:
    return cname({k: v for k, v in cfg.items() if k not in ("GROUP_HEADS", "SNAKE")})


def swept_best(source: str) -> dict:
    files = sorted((ROOT / "bench" / "results").glob("attention-sweep-*.json"), key=lambda f: f.stat().st_mtime)
    path = Path(source) if source != "latest" else (files[-1] if files else None)
    if path is None or not path.exists():
        log(f"--from-sweep: no sweep results ({source})")
        return {}
    log(f"--from-sweep: {path.name}")
    return json.loads(path.read_text()).get("best", {})


def plan_ours(shape, args, swept: dict) -> list[list]:
    """[variant, config] of every config a variant's public call tunes over at this head dim (its CONFIGS that fit,
    and the swept best of ``--from-sweep``): what the preflight compiles and checks."""
    from tlx_kernels import attention as A
    from tlx_kernels.attention import common as C

    D = shape[3]
    items = []
    for variant, extra in extras(shape, args, swept).items():
        cfgs = C.configs_for(A.MODULES[variant].CONFIGS, D)
        if extra and cname(extra) not in {cname(c) for c in cfgs}:
            cfgs.append(extra)
        items += [[variant, c] for c in cfgs]
    return items


def extras(shape, args, swept: dict) -> dict[str, dict | None]:
    """Per variant, the swept best config for this head dim and mask (``--from-sweep``), or None."""
    case = swept.get(f"d{shape[3]}-{'causal' if shape[4] else 'full'}", {})
    return {v: case.get(v) for v in args.variants}


def preflight(items_by_case: dict, args, meta_dims: tuple = ()) -> set[str]:
    """Compile and check every (case, item) in parallel workers; the set of '<case>|<item>' that passed. Meta's
    kernels are compiled too (non-causal, head dims ``meta_dims``), so that the timing phase finds them cached."""
    jobs = [dict(op="meta", shape=[4, 16, 1024, D, False], dtype=args.dtype, items=[name])  # Z, H as the bench
            for D in meta_dims for name in META]
    jobs += [dict(op="ours", shape=[*PREFLIGHT, D, causal], dtype=args.dtype, items=items[i:i + 2])
             for (D, causal), items in items_by_case.items() for i in range(0, len(items), 2)]
    ok, lock = set(), threading.Lock()

    def work(gpu: GPU, job: dict) -> None:
        for r in gpu.run(job):
            with lock:
                case = f"{job['shape'][3]}-{job['shape'][4]}"
                if r["error"] is None:
                    ok.add(f"{case}|{r['item']}")
                elif job["op"] == "meta":
                    log(f"  preflight D{job['shape'][3]} {r['item']} (Meta's, not ours): {r['error']}")
                else:
                    log(f"  preflight D{job['shape'][3]} causal={job['shape'][4]} {r['item']}: {r['error']}")

    in_parallel(jobs, args.workers, lambda: GPU(args.compile_timeout), work)
    ours = [k for k in ok if not k.split("|")[1].startswith("meta_")]
    log(f"  preflight: {len(ours)}/{sum(len(v) for v in items_by_case.values())} of ours ok")
    return ok


# ------------------------------------------------------------------------------------------------
# measurements, rows, output
# ------------------------------------------------------------------------------------------------

SDPA_NAMES = {"FLASH_ATTENTION": "sdpa_flash", "CUDNN_ATTENTION": "sdpa_cudnn", "EFFICIENT_ATTENTION": "sdpa_efficient"}


def records(kind: str, rows: list[dict], shape, args, phase: str, cfgs: dict | None = None) -> list[dict]:
    from tlx_kernels.attention.common import attention_flops

    B, H, S, D, causal = shape
    out = []
    for r in rows:
        kernel, _, config = r["item"].partition(":")
        kernel = SDPA_NAMES.get(kernel, kernel)
        ms = r.get("ms")
        out.append(dict(kind=kind, kernel=kernel,
                        config=r.get("config") or config or ("autotuned" if kind == "meta" else "-"),
                        cfg=(cfgs or {}).get(r["item"]), shape=[B, H, S, D], causal=bool(causal), dtype=args.dtype,
                        phase=phase, ms=ms, tflops=attention_flops(B, H, S, S, D, causal) / ms / 1e9 if ms else None,
                        rel_err=r.get("rel_err"), error=r.get("error"), times=r.get("times")))
    return out


def measure_shape(gpu: GPU, shape, args, warm_s: float, extra: dict, skip: dict) -> list[dict]:
    """SDPA, our public calls (tuned and checked), Meta's (non-causal), SDPA again, then all in interleaved rounds."""
    job = dict(shape=list(shape), dtype=args.dtype, timing=args.timing)
    if warm_s:
        gpu.run(dict(op="warm", seconds=warm_s))
    rep = args.round_rep
    recs = records("sdpa", gpu.run(dict(job, op="sdpa", items=list(BACKENDS), rep_ms=rep)), shape, args, "1")
    names = list(args.variants) + ([] if args.no_top else [TOP])
    recs += records("ours", gpu.run(dict(job, op="public", items=names, extra=extra, skip=skip)), shape, args,
                    "final")
    if not shape[4] and not args.no_meta:
        recs += records("meta", gpu.run(dict(job, op="meta", items=list(META), rep_ms=rep)), shape, args, "final")
    recs += records("sdpa", gpu.run(dict(job, op="sdpa", items=list(BACKENDS), rep_ms=rep)), shape, args, "2")
    for r in (r for r in recs if r["phase"] == "final"):
        log(f"  {r['kernel']:<26} " + (f"FAILED {r['error']}" if r["error"] else
                                       f"rel err {r['rel_err']:.2e} (fp32, 2 heads)  {r['config'][:50]}"))
    return recs + rounds(gpu, job, recs, shape, args)


def rounds(gpu: GPU, job: dict, recs: list[dict], shape, args) -> list[dict]:
    """The SDPA backends that ran, our public calls that passed their check and Meta's kernels that ran, timed again
    in interleaved rounds (phase "rounds"): the rows' ratios come from these."""
    ok = {r["kernel"] for r in recs if r["ms"] or (r["kind"] == "ours" and not r["error"])}
    configs = {r["kernel"]: r["config"] for r in recs if r["kind"] == "ours"}
    groups = {"sdpa": [b for b in BACKENDS if SDPA_NAMES.get(b, b) in ok],
              "public": [n for n in list(args.variants) + [TOP] if n in ok],
              "meta": [m for m in META if m in ok]}
    rows = gpu.run(dict(job, op="rounds", groups=groups, rounds=args.rounds, rep_ms=args.round_rep))
    kind = {**{b: "sdpa" for b in groups["sdpa"]}, **{m: "meta" for m in groups["meta"]}}
    out = []
    for r in rows:
        r.setdefault("config", configs.get(r["item"]))
        out += records(kind.get(r["item"], "ours"), [r], shape, args, "rounds")
    return out


def device_info() -> dict:
    import torch
    import triton

    p = torch.cuda.get_device_properties(0)
    return dict(device=p.name, sms=p.multi_processor_count, torch=torch.__version__, triton=triton.__version__)


# ------------------------------------------------------------------------------------------------
# modes
# ------------------------------------------------------------------------------------------------


def bench_main(args, info: dict) -> dict:
    from tlx_kernels.attention.common import BENCH_SHAPES, LONG_SHAPES, QUICK_SHAPES

    long = [s for s in LONG_SHAPES if s[2] in (8192, 32768)]
    shapes = args.shapes or (QUICK_SHAPES if args.quick else BENCH_SHAPES + long)
    swept = swept_best(args.from_sweep) if args.from_sweep else {}
    by_case: dict = {}
    for s in shapes:
        case = by_case.setdefault((s[3], bool(s[4])), [])
        case += [it for it in plan_ours(s, args, swept) if it not in case]
    log("preflight (compile + check at B2 H8 S1040):")
    meta_dims = () if args.no_meta else tuple(sorted({s[3] for s in shapes if not s[4]}))
    ok = preflight(by_case, args, meta_dims)
    gpu, recs = GPU(args.job_timeout), []
    for i, s in enumerate(shapes):
        case = (s[3], bool(s[4]))
        skip: dict[str, list[str]] = {}
        for it in by_case[case]:
            if f"{case[0]}-{case[1]}|{item_name('ours', it)}" not in ok:
                skip.setdefault(it[0], []).append(cname(it[1]))
        log(f"shape {i + 1}/{len(shapes)} {s}" + (f" (not tuned over, failed the preflight: {skip})" if skip else ""))
        extra = {v: c for v, c in extras(s, args, swept).items() if c}
        recs += measure_shape(gpu, s, args, args.warmup_s if i == 0 else 0.0, extra, skip)
    gpu.close()
    print_table(recs, shapes)
    rows, tg = baseline_rows(recs, shapes, args), targets(recs)
    for t in tg:
        ratio = t["ratio"] and round(t["ratio"], 3)
        log(f"target {t['shape']} causal={t['causal']} vs {t['against']} >= {t['need']}: "
            f"{'MET' if t['met'] else 'missed'} ({ratio}; {t['ours']} vs {t['baseline']})")
    return dict(info, timing="public calls (ours: attention(q, k, v, causal); SDPA; Meta's attention wrappers): "
                + TIMINGS[args.timing], rows=rows, targets=tg, measurements=recs)


def sweep_main(args, info: dict) -> dict:
    t0 = time.perf_counter()
    shapes = args.shapes or SWEEP_SHAPES
    spaces = {(v, s[3]): sweep_space(v, s[3], args.space) for v in args.variants for s in shapes}
    by_case: dict = {}
    for s in shapes:
        case = by_case.setdefault((s[3], bool(s[4])), [])
        for v in args.variants:
            reps = {}
            for c in spaces[(v, s[3])]:
                reps.setdefault(compile_key(c), c)  # one compile per compile key
            case += [[v, c] for c in reps.values() if [v, c] not in case]
    log(f"preflight: {sum(len(v) for v in by_case.values())} compiles, {args.workers} workers")
    ok = preflight(by_case, args)
    key_of = {item_name("ours", it): f"{it[0]}:{compile_key(it[1])}" for items in by_case.values() for it in items}
    compiled_ok = {(k.split("|")[0], key_of[k.split("|")[1]]) for k in ok}
    log(f"preflight done in {time.perf_counter() - t0:.0f} s")
    gpu, recs, skipped = GPU(args.job_timeout), [], 0
    gpu.run(dict(op="warm", seconds=args.warmup_s))
    for s in shapes:
        job = dict(shape=list(s), dtype=args.dtype, timing="flush")  # kernel times, as the configs
        recs += records("sdpa", gpu.run(dict(job, op="sdpa", items=list(BACKENDS), rep_ms=args.tune_rep)), s, args,
                        "sweep")
        for v in args.variants:
            items = [[v, c] for c in spaces[(v, s[3])]
                     if (f"{s[3]}-{bool(s[4])}", f"{v}:{compile_key(c)}") in compiled_ok]
            for i in range(0, len(items), 8):
                if time.perf_counter() - t0 > args.budget_s:
                    skipped += len(items) - i
                    break
                chunk = items[i:i + 8]
                recs += records("ours", gpu.run(dict(job, op="ours", items=chunk, rep_ms=args.tune_rep)), s, args,
                                "sweep", {item_name("ours", it): it[1] for it in chunk})
    gpu.close()
    ranking, best_cfg = sweep_ranking(recs, shapes, args)
    log(f"\nsweep: {len(recs)} measurements, {skipped} candidates skipped (budget), {time.perf_counter() - t0:.0f} s")
    return dict(info, budget_s=args.budget_s, skipped=skipped, ranking=ranking, best=best_cfg, measurements=recs)


def sweep_ranking(recs: list[dict], shapes, args) -> tuple[dict, dict]:
    ranking, best_cfg = {}, {}
    for s in shapes:
        case = f"d{s[3]}-{'causal' if s[4] else 'full'}"
        here = [r for r in recs if r["shape"] == list(s[:4]) and r["causal"] == bool(s[4])]
        sdpa = fastest(here, kind="sdpa")
        log(f"\n{s}: best SDPA {sdpa and sdpa['kernel']} {sdpa and round(sdpa['tflops'])} TFLOP/s")
        for v in args.variants:
            mine = sorted((r for r in here if r["kernel"] == v), key=lambda r: r["ms"] or 1e9)
            ranking[f"{case}-S{s[2]}-{v}"] = [dict(config=r["config"], cfg=r["cfg"], ms=r["ms"], tflops=r["tflops"],
                                                 error=r["error"]) for r in mine]
            if mine and mine[0]["ms"]:
                best_cfg.setdefault(case, {})[v] = mine[0]["cfg"]
            for r in mine[:3]:
                log(f"  {v:<16} {r['config'][:60]:<60} "
                    + (f"{r['tflops']:6.0f} TFLOP/s" if r["ms"] else f"FAILED {r['error']}"))
            bad = [r for r in mine if not r["ms"]]
            if bad:
                log(f"  {v:<16} {len(bad)} failed, e.g. {bad[0]['config']}: {bad[0]['error']}")
    return ranking, best_cfg


def parse_shape(text: str) -> tuple:
    """'4x32x4096x128' or '4x32x4096x128c' (causal)."""
    causal = text.endswith("c")
    B, H, S, D = (int(x) for x in text.rstrip("c").split("x"))
    return (B, H, S, D, causal)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="the two B4 H32 S4096 D128 shapes")
    ap.add_argument("--sweep", action="store_true", help="time every candidate config (see --budget-s)")
    ap.add_argument("--budget-s", type=float, default=240.0, help="sweep: stop starting candidates after this")
    ap.add_argument("--space", choices=("grid", "configs", "trials"), default="grid",
                    help="sweep: CONFIGS + TRIALS + a grid; CONFIGS + TRIALS; or the default + TRIALS")
    ap.add_argument("--from-sweep", default=None, help="'latest' or a sweep JSON: also try its best configs")
    ap.add_argument("--shapes", type=lambda t: [parse_shape(x) for x in t.split(",")], default=None,
                    help="e.g. 4x32x4096x128,4x32x4096x128c")
    ap.add_argument("--variants", type=lambda t: t.split(","), default=list(VARIANTS))
    ap.add_argument("--no-top", action="store_true", help="leave out the top-level attention() (its tuning)")
    ap.add_argument("--timing", default="calls", choices=sorted(TIMINGS), help="how one call is timed (bench)")
    ap.add_argument("--dtype", choices=("bf16", "fp16"), default="bf16")
    ap.add_argument("--no-meta", action="store_true")
    ap.add_argument("--tune-rep", type=int, default=25, help="rep (ms) of a timing while tuning/sweeping")
    ap.add_argument("--warmup-s", type=float, default=5.0, help="GPU warm-up before the first timing")
    ap.add_argument("--workers", type=int, default=max(1, min(12, (os.cpu_count() or 2) - 2)))
    ap.add_argument("--compile-timeout", type=float, default=60.0, help="preflight: seconds per item (compile + check)")
    ap.add_argument("--job-timeout", type=float, default=45.0, help="timing: seconds per item (a round)")
    ap.add_argument("--rounds", type=int, default=7, help="interleaved rounds of the rows' timings (at least 1)")
    ap.add_argument("--round-rep", type=int, default=40, help="rep (ms) of one timing (SDPA, Meta's, a round)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    args.rounds = max(1, args.rounds)
    import torch

    if not torch.cuda.is_available():
        log("bench/attention.py needs a CUDA GPU (compile-only checks: tests/kernels/test_attention_compile.py)")
        return 2
    info = device_info()
    info.update(date=dt.datetime.now().isoformat(timespec="seconds"),
                command="python3 bench/attention.py " + " ".join(argv if argv is not None else sys.argv[1:]))
    log(f"{info['device']} ({info['sms']} SMs), torch {info['torch']}, triton {info['triton']}")
    t0 = time.perf_counter()
    doc = sweep_main(args, info) if args.sweep else bench_main(args, info)
    doc["wall_s"] = round(time.perf_counter() - t0, 1)
    path = write_result(doc, "attention-sweep" if args.sweep else "attention", args.out)
    log(f"\nwrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
