"""GEMM benchmark: the library's public ``matmul`` vs cuBLAS, Triton's tl.dot and Meta's Hopper GEMM tutorials, one run.

    python3 bench/gemm.py                        # BENCH_SHAPES (cubes and rectangles), ~2.5 min on an H200
    python3 bench/gemm.py --quick                # 8192^3, 4096^3, 2048^3
    python3 bench/gemm.py --shapes 4096x4096x4096,16384x1024x4096 --kernels ws_cooperative --meta meta_ws
    python3 bench/gemm.py --timing flush         # kernel times (L2 flushed) instead of a user's back-to-back calls
    python3 bench/gemm.py --sweep --budget-s 200 # every candidate config of every kernel (prepared launches)
    python3 bench/gemm.py --from-sweep latest    # the bench, tuning over CONFIGS + the sweep's 3 best

Every GPU step (bench/gemm_jobs.py) runs in workbench.run's isolated worker (``workbench.run.jobs``), so that a
kernel that hangs or faults is recorded and the run goes on in a fresh worker. First a preflight: each config is
checked against torch.matmul on small shapes (NaN-poisoned output; several workers at once, which also compiles
everything). Then, one worker at a time, per shape: cuBLAS (after ``--warmup-s`` of it), each library kernel's
public call ``matmul(a, b)`` as a user makes it (tuned on its first call over the configs that passed the preflight,
a new output per call, repeats launched from the cached plan), checked against the fp32 product (``fp32_tolerance``:
5e-3 bf16, 1e-3 fp16; a wrong or failing kernel is a row with its error), Meta's tutorial kernels from the installed
triton-utlx wheel (imported unmodified, their own configs, our operands and output dtype; the best of
``--meta-configs`` by kernel time, then launched as prepared launches: descriptors built once, which favours them),
then cuBLAS (``torch.matmul(a, b)``), every public call and Meta's best in ``--rounds`` interleaved rounds (the
order rotates; a row's ``ms`` is the median over rounds and ``ratio`` the median of the per-round ratios, so the
H200's clock, which drops as it heats during a run, moves both sides of a ratio alike), cuBLAS again. How one call
is timed: ``--timing`` (``workbench.measure.timing.time_call``; default: back-to-back calls, as a user's loop sees
them). ``--sweep`` times every candidate (``candidates()`` of each module) at every shape within ``--budget-s``,
best candidates first, as prepared launches (kernel time), and prints the ranking to put into the modules' CONFIGS.

Writes ``bench/results/gemm-<date>.json`` (``gemm-sweep-<date>.json``): device, date, torch, triton, command,
rows of {kernel, shape, dtype, causal, config, ms, tflops, baseline, baseline_ms, ratio, method} (ratio =
baseline_ms / ms, one row per baseline measured in the run: cublas, triton_dot, meta_*), the check of every
public call, every measurement, the summary against the targets, and (sweep) the ranking.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

from workbench.measure.compare import fastest
from workbench.measure.timing import TIMINGS
from workbench.run.jobs import Answer, Jobs, in_parallel

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "kernels"))
sys.path[:0] = [str(ROOT / "bench"), str(ROOT / "testbed")]

from gemm_jobs import META_FILES  # noqa: E402
from gemm_report import OURS, baseline_rows, print_table, ranking, rounds_rows, summary  # noqa: E402
from recordings import write_result  # noqa: E402

LIBRARY = OURS + ("triton_dot",)
META_DEFAULT = ("meta_ws", "meta_coop")  # Meta's two fastest Hopper GEMMs in the 2026-12-03 run
SWEEP_SHAPES = [(8192, 8192, 8192), (4096, 4096, 4096), (2048, 2048, 2048)]
PREFLIGHT_SHAPES = [(2304, 2048, 512), (1000, 1500, 777)]  # 1-3 tiles per CTA on 132 SMs; an odd shape
TOL = 1e-2  # max rel err against torch.matmul (bf16 output: both sides rounded), preflight and Meta's kernels


def log(*a: Any) -> None:
    print(*a, flush=True)


def parse_shapes(text: str) -> list[tuple[int, int, int]]:
    return [tuple(int(x) for x in part.lower().split("x")) for part in text.split(",")]  # type: ignore[misc]


class GPU:
    """The bench's GPU jobs (bench/gemm_jobs.py) in one isolated worker (``workbench.run.jobs``): each job may take
    ``timeout_s`` per item; a hang or a crash costs that job alone, and the next one starts a fresh worker."""

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self.jobs = Jobs(paths=[str(ROOT / "bench"), str(ROOT / "kernels")], name="gemm")

    def run(self, job: dict, items: int = 1, extra_s: float = 0.0) -> Answer:
        return self.jobs.call("gemm_jobs:handle", job, timeout_s=self.timeout_s * items + extra_s)

    def each(self, job: dict, key: str, failed) -> list[dict]:
        """Rows of ``job`` run once per item of ``job[key]``: an item that hangs or crashes is ``failed(item, why)``
        and the rest go on in a fresh worker."""
        return self.jobs.each("gemm_jobs:handle", job, key, timeout_s=self.timeout_s, failed=failed)

    def close(self) -> None:
        self.jobs.close()


def run_configs(gpu: GPU, job: dict) -> list[dict]:
    """One row per config of a ``configs`` job, each config in a call of its own."""
    from tlx_kernels.gemm.common import config_name

    return gpu.each(job, "configs", lambda c, why: dict(config=config_name(c), cfg=c, ms=None, error=why))


def preflight(plan: dict[str, list[dict]], shapes: list, args) -> dict[str, dict[str, str]]:
    """{kernel: {config: "ok" | error}}: every config checked at ``shapes``, ``args.workers`` workers at once."""
    from tlx_kernels.gemm.common import config_name

    chunks = [(kernel, cfgs[i : i + 3]) for kernel, cfgs in plan.items() for i in range(0, len(cfgs), 3)]
    verdict: dict[str, dict[str, str]] = {k: {} for k in plan}
    lock = threading.Lock()

    def work(gpu: GPU, chunk: tuple[str, list[dict]]) -> None:
        kernel, cfgs = chunk
        for shape in shapes:
            base = dict(op="configs", kernel=kernel, shape=shape, dtype=args.dtype, tol=TOL, time=False)
            for r in run_configs(gpu, dict(base, configs=cfgs, rep_ms=1)):
                with lock:
                    if verdict[kernel].get(r["config"], "ok") == "ok":
                        verdict[kernel][r["config"]] = "ok" if not r.get("error") else f"{shape}: {r['error']}"
            cfgs = [c for c in cfgs if verdict[kernel].get(config_name(c)) == "ok"]

    in_parallel(chunks, args.workers, lambda: GPU(args.job_timeout), work)
    for kernel, v in verdict.items():
        bad = {c: e for c, e in v.items() if e != "ok"}
        log(f"  preflight {kernel}: {len(v) - len(bad)}/{len(v)} ok")
        for c, e in bad.items():
            log(f"    {c}: {e[:240]}")
    return verdict


def measure(kind: str, kernel: str, shape, rows: list[dict], args, phase: str) -> list[dict]:
    """Measurement records (one per row) with TFLOP/s."""
    M, N, K = shape
    out = []
    for r in rows:
        ms = r.get("ms")
        rec = dict(kind=kind, kernel=kernel, shape=list(shape), dtype=args.dtype, phase=phase, config=r["config"],
                   cfg=r.get("cfg"), ms=ms, tflops=2.0 * M * N * K / ms / 1e9 if ms else None,
                   rel_err=r.get("rel_err"), error=r.get("error"))
        out.append(rec)
    return out


def cublas(gpu: GPU, shape, args, warmup_s: float) -> float | None:
    a = gpu.run(dict(op="cublas", shape=shape, dtype=args.dtype, warmup_s=warmup_s, rep_ms=args.rep,
                     timing=args.timing), extra_s=warmup_s)
    if a.failure:
        log(f"  cublas FAILED: {a.failure}")
        return None
    return a.value["ms"]


def public_shape(gpu: GPU, passing: dict[str, list[dict]], shape, args) -> list[dict]:
    """Each kernel's public ``matmul(a, b)`` at ``shape``: tuned over its passing configs, checked against the fp32
    product; one record per kernel (phase "final", no time: the rounds time it). Each kernel is a job of its own:
    one that hangs or crashes gets an error record and the rest go on in a fresh worker."""
    import torch
    from tlx_kernels.gemm.common import fp32_tolerance

    tol = fp32_tolerance({"bf16": torch.bfloat16, "fp16": torch.float16}[args.dtype])
    job = dict(op="public", shape=shape, dtype=args.dtype, tol=tol, kernels=list(passing.items()))
    rows = gpu.each(job, "kernels", lambda item, why: dict(kernel=item[0], config=None, error=why))
    return [dict(kind="library", kernel=r["kernel"], shape=list(shape), dtype=args.dtype, phase="final",
                 config=r.get("config"), cfg=r.get("cfg"), ms=None, tflops=None, rel_err=r.get("rel_err"),
                 error=r.get("error"), tune=r.get("tune")) for r in rows]


def meta_shape(gpu: GPU, key: str, shape, args) -> list[dict]:
    job = dict(op="meta", kernel=key, shape=shape, dtype=args.dtype, tol=TOL, rep_ms=args.tune_rep,
               limit=args.meta_configs)
    a = gpu.run(job, items=args.meta_configs + 1)
    rows = a.reported("row")
    if a.failure:
        rows.append(dict(config=(a.reported("begin") or ["-"])[-1], ms=None, error=a.failure))
    return measure("meta", key, shape, rows, args, "final")


def rounds_shape(gpu: GPU, records: list[dict], shape, args) -> dict[str, list[float]] | None:
    """cuBLAS, every library kernel's public call that passed its check and Meta's best config of each of its kernels,
    timed at ``shape`` in ``args.rounds`` interleaved rounds."""
    items = [dict(label="cublas", kind="cublas")]
    here = [r for r in records if r["shape"] == list(shape) and r["phase"] == "final"]
    for k in sorted({r["kernel"] for r in here if r["kind"] == "library" and not r["error"]}):
        items.append(dict(label=k, kind="public", kernel=k))
    for k in sorted({r["kernel"] for r in here if r["kind"] == "meta"}):
        best = fastest(here, kernel=k)
        if best is not None:
            items.append(dict(label=k, kind="meta", kernel=k, cfg=best["config"]))
    job = dict(op="rounds", shape=shape, dtype=args.dtype, tol=TOL, items=items, rounds=args.rounds,
               rep_ms=args.round_rep, limit=args.meta_configs, timing=args.timing)
    a = gpu.run(job, items=args.rounds + 2)
    if a.failure:
        log(f"  interleaved rounds FAILED: {a.failure}")
        return None
    return a.value["times"]


def sweep(gpu: GPU, plan: dict[str, list[dict]], shapes, args, deadline: float,
          phase: str = "sweep") -> list[dict]:
    """Every passing candidate at every shape, best-ranked candidates of every kernel first, until the deadline."""
    records: list[dict] = []
    depth = max((len(c) for c in plan.values()), default=0)
    for rank in range(depth):
        for kernel, cfgs in plan.items():
            if rank >= len(cfgs):
                continue
            for shape in shapes:
                if time.time() > deadline:
                    skipped = dict(config=_name(cfgs[rank]), cfg=cfgs[rank], ms=None, error="skipped: budget")
                    records += measure("library", kernel, shape, [skipped], args, phase)
                    continue
                job = dict(op="configs", kernel=kernel, shape=shape, dtype=args.dtype, tol=TOL, rep_ms=args.rep,
                           configs=[cfgs[rank]])
                recs = measure("library", kernel, shape, run_configs(gpu, job), args, phase)
                records += recs
                r = recs[0]
                log(f"  {kernel:15s} {'x'.join(map(str, shape)):>15s} {r['config']:36s} "
                    + (f"{r['tflops']:7.1f} TFLOP/s" if r["tflops"] else f"FAILED {str(r['error'])[:120]}"))
    return records


def _name(cfg: dict) -> str:
    from tlx_kernels.gemm.common import config_name

    return config_name(cfg)


def with_swept(plan: dict[str, list[dict]], source: str) -> dict[str, list[dict]]:
    """``plan`` with the three best configs per kernel of a sweep result first (``latest``: the newest file)."""
    from tlx_kernels.gemm.common import config_name

    files = sorted((ROOT / "bench" / "results").glob("gemm-sweep-*.json"), key=lambda f: f.stat().st_mtime)
    path = (files[-1] if files else None) if source == "latest" else Path(source)
    if path is None or not path.exists():
        log(f"--from-sweep {source}: no sweep result found; CONFIGS only")
        return plan
    ranked = json.loads(path.read_text()).get("ranking", {})
    log(f"configs from {path.name}: " + ", ".join(f"{k} {len(v[:3])}" for k, v in ranked.items() if k in plan))
    out = {}
    for kernel, cfgs in plan.items():
        merged, seen = [], set()
        for cfg in [r["cfg"] for r in ranked.get(kernel, [])[:3]] + cfgs:
            if config_name(cfg) not in seen:
                seen.add(config_name(cfg))
                merged.append(cfg)
        out[kernel] = merged
    return out


def bench_shapes(gpu: GPU, passing: dict, kernels: list[str], shapes, args, cub: dict,
                 inter: dict) -> list[dict]:
    """Per shape: cuBLAS, the public calls (checked), Meta's kernels (tuned), the interleaved rounds, cuBLAS."""
    records: list[dict] = []
    metas = [] if args.no_meta else [m for m in args.meta.split(",") if m]
    for i, shape in enumerate(shapes):
        log(f"== {'x'.join(map(str, shape))}")
        cub[shape] = {"before_ms": cublas(gpu, shape, args, args.warmup_s if i == 0 else 0.0)}
        records += public_shape(gpu, {k: passing[k] for k in kernels}, shape, args)
        for key in metas:
            records += meta_shape(gpu, key, shape, args)
        here = [r for r in records if r["shape"] == list(shape)]
        for r in (r for r in here if r["kind"] == "library"):
            log(f"  {r['kernel']:15s} " + (f"FAILED {str(r['error'])[:200]}" if r["error"] else
                                           f"rel err {r['rel_err']:.2e} (fp32)  {str(r['config'])[:70]}"))
        for key in metas:
            b = fastest(here, kernel=key)
            log(f"  {key:15s} " + (f"{b['tflops']:7.1f} TFLOP/s kernel time  {b['config'][:60]}" if b else "FAILED"))
        log(f"  interleaved: cuBLAS, the public calls and Meta's best, {args.rounds} rounds")
        per = rounds_shape(gpu, records, shape, args)
        if per:
            inter[shape] = per
        cub[shape]["after_ms"] = cublas(gpu, shape, args, 0.0)
    return records


def sweep_shapes(gpu: GPU, passing: dict, shapes, args, t_start: float, cub: dict) -> list[dict]:
    """Every passing candidate at every shape within the budget, then the five best of each kernel once more."""
    for shape in shapes:
        cub[shape] = {"before_ms": cublas(gpu, shape, args, args.warmup_s)}
    records = sweep(gpu, passing, shapes, args, t_start + args.budget_s)
    top = {k: [r["cfg"] for r in v[:5]] for k, v in ranking(records, shapes).items()}
    if time.time() < t_start + args.budget_s - 20 and any(top.values()):
        log("confirming the top configs:")
        confirm = sweep(gpu, top, shapes, args, t_start + args.budget_s, "confirm")
        records += [r for r in confirm if r["ms"]]
    for shape in shapes:
        cub[shape]["after_ms"] = cublas(gpu, shape, args, 0.0)
    return records


def report(args, info: dict, shapes, records: list[dict], cub: dict, inter: dict, verdict: dict,
           t_start: float) -> dict:
    for c in cub.values():
        both = [v for v in c.values() if v]
        c["ms"] = min(both) if both else None
    timed = [r for r in records if r["phase"] in ("sweep", "confirm")]
    rows = baseline_rows(timed, cub, shapes, args) if args.sweep else rounds_rows(inter, records, args)
    summ = summary(rows, shapes)
    print_table(rows, cub, shapes, inter)
    log("\n== best library kernel vs cuBLAS and vs Meta's best (targets: >= Meta's best at 8192^3 and 4096^3, "
        ">= 1.00x cuBLAS at 2048^3 and 1024^3)")
    for s in summ:
        log(f"  {'x'.join(map(str, s['shape'])):>16s} {str(s['best_kernel']):>15s} "
            + (f"{s['tflops']:7.1f} TFLOP/s {s['vs_cublas']:.3f}x cuBLAS" if s["vs_cublas"] else "-")
            + (f", {s['vs_meta']:.3f}x Meta's best" if s.get("vs_meta") else "")
            + (f"  target: {'met' if s['met'] else 'MISSED'}" if s["met"] is not None else ""))
    method = TIMINGS["flush" if args.sweep else args.timing]
    doc: dict[str, Any] = dict(
        device=info["device"], date=dt.datetime.now().isoformat(timespec="seconds"), torch=info["torch"],
        triton=info["triton"], command=" ".join(["python3", "bench/gemm.py"] + sys.argv[1:]), sms=info["sms"],
        mode="sweep" if args.sweep else "bench",
        timing=("prepared launches (descriptors built once): " if args.sweep else
                "public calls (ours: matmul(a, b); cuBLAS: torch.matmul(a, b); Meta's: prepared launches): ") + method,
        shapes=[list(s) for s in shapes], rows=rows, summary=summ,
        checks=[{k: r.get(k) for k in ("kernel", "shape", "config", "rel_err", "error")} for r in records
                if r["kind"] == "library" and r["phase"] == "final"],
        cublas={"x".join(map(str, s)): v for s, v in cub.items()}, measurements=records, preflight=verdict,
        interleaved={"x".join(map(str, s)): v for s, v in inter.items()},
    )
    if args.sweep:
        doc["ranking"] = ranking(timed, shapes)
        log("\n== ranking (geometric mean of speed relative to each shape's best; put the top ones into CONFIGS)")
        for kernel, ranked in doc["ranking"].items():
            log(f"  {kernel}:")
            for r in ranked[:6]:
                log(f"    {r['score']:.3f} {r['tflops']}  {r['cfg']}")
    doc["wall_s"] = round(time.time() - t_start, 1)
    return doc


def parse_args(argv: list[str] | None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="8192^3, 4096^3 and 2048^3 only")
    p.add_argument("--sweep", action="store_true", help="time every candidate config (see module docstring)")
    p.add_argument("--budget-s", type=float, default=200.0, help="--sweep: wall-clock budget of the whole run, s")
    p.add_argument("--kernels", default=",".join(LIBRARY), help=f"comma list from {','.join(LIBRARY)}")
    p.add_argument("--shapes", default=None, help="MxNxK[,MxNxK...] (any list)")
    p.add_argument("--dtype", default="bf16", choices=["bf16", "fp16"], help="inputs and output")
    p.add_argument("--meta", default=",".join(META_DEFAULT), help=f"Meta's kernels, from {','.join(META_FILES)}")
    p.add_argument("--no-meta", action="store_true", help="leave out Meta's tutorial kernels")
    p.add_argument("--meta-configs", type=int, default=8, help="configs of each Meta kernel tried (theirs, pruned)")
    p.add_argument("--timing", default="calls", choices=sorted(TIMINGS), help="how one call is timed (bench)")
    p.add_argument("--rep", type=int, default=100, help="rep (ms) of a sweep timing and of cuBLAS before/after")
    p.add_argument("--tune-rep", type=int, default=30, help="rep (ms) of a timing of one of Meta's configs")
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
    args.rounds = max(1, args.rounds)
    kernels = [k.strip() for k in args.kernels.split(",") if k.strip()]
    unknown = [k for k in kernels if k not in LIBRARY] + [m for m in args.meta.split(",") if m and m not in META_FILES]
    if unknown:
        p.error(f"unknown kernels {unknown}; ours: {LIBRARY}, Meta's: {tuple(META_FILES)}")
    return args, kernels


def main(argv: list[str] | None = None) -> int:
    args, kernels = parse_args(argv)
    t_start = time.time()

    from tlx_kernels import gemm as G
    from tlx_kernels.gemm.common import BENCH_SHAPES, QUICK_SHAPES, config_name

    shapes = [tuple(s) for s in (parse_shapes(args.shapes) if args.shapes else
                                 SWEEP_SHAPES if args.sweep else QUICK_SHAPES if args.quick else BENCH_SHAPES)]
    gpu = GPU(args.job_timeout)
    answer = gpu.run({"op": "info"})
    if answer.failure:
        log(f"bench/gemm.py needs a CUDA GPU: {answer.failure}")
        gpu.close()
        return 2
    info = answer.value
    log(f"{info['device']} ({info['sms']} SMs), torch {info['torch']}, triton {info['triton']}; "
        f"{'sweep' if args.sweep else 'bench'} of {kernels} at {shapes}, {args.dtype}")

    plan = {k: (G.MODULES[k].candidates() if args.sweep else list(G.MODULES[k].CONFIGS)) for k in kernels}
    if args.from_sweep and not args.sweep:
        plan = with_swept(plan, args.from_sweep)
    log(f"preflight ({sum(map(len, plan.values()))} configs, {args.workers} workers):")
    verdict = preflight(plan, PREFLIGHT_SHAPES if args.odd or not args.sweep else PREFLIGHT_SHAPES[:1], args)
    passing = {k: [c for c in cfgs if verdict[k].get(config_name(c)) == "ok"] for k, cfgs in plan.items()}
    log(f"preflight done at {time.time() - t_start:.0f} s")

    cub: dict[tuple, dict] = {}
    inter: dict[tuple, dict[str, list[float]]] = {}
    if args.sweep:
        records = sweep_shapes(gpu, passing, shapes, args, t_start, cub)
    else:
        records = bench_shapes(gpu, passing, kernels, shapes, args, cub, inter)
    gpu.close()
    doc = report(args, info, shapes, records, cub, inter, verdict, t_start)
    path = write_result(doc, "gemm-sweep" if args.sweep else "gemm", args.out)
    log(f"\nwrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path} ({doc['wall_s']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
