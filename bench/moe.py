"""Grouped GEMM (mixture of experts) benchmark: tlx_kernels.moe's public calls vs torch._grouped_mm and a loop of
torch.matmul, in interleaved rounds (issue 27).

    python3 bench/moe.py                          # every BENCH_SHAPE (5 layers x 4k/16k/64k tokens x 2 routings), fwd
    python3 bench/moe.py --quick                  # 4 shapes
    python3 bench/moe.py --shapes 32x7168x4096x16384:skewed,8x4096x7168x65536 --kinds fwd,dx,dw
    python3 bench/moe.py --sweep --shapes 32x7168x4096x16384:skewed   # every config x GROUP_M, as launches
    python3 bench/moe.py --compile-only           # no GPU needed: every variant x product x config for sm_90

A shape is ``E x K x N x T[:routing]``: E local experts, x ``[T, K]`` (tokens sorted by expert, routed
``uniform`` or ``skewed``: tlx_kernels.moe.routing), w ``[E, K, N]``, bf16. Per shape and product (``fwd``:
x @ w[e]; ``dx``: dy @ w[e]^T; ``dw``: x_e^T @ dy_e), first a check of every timed call against a loop of
torch.matmul in fp32 into a NaN-poisoned output (``fp32_tolerance``: 5e-3 bf16; a wrong or failing call is a row
with its error and is not timed), then ``--rounds`` interleaved rounds (``workbench.measure.interleave``; the
order rotates, a row's ``ms`` is the median over rounds and ``ratio`` the median of the per-round ratios, so the
GPU clock, which drops as it heats, moves both sides alike) of:

- ``grouped_mm``: the library's public call as a user makes it (tuned over both variants and their configs on
  its first call of a problem size), and ``ws_cooperative`` / ``triton``: the same call held to one variant;
- baselines ``torch_grouped_mm`` (``torch._grouped_mm``, cuBLAS/CUTLASS grouped) and ``matmul_loop`` (one
  ``torch.matmul`` per non-empty expert, the token ranges known on the host beforehand).

Targets (issue 27): the best of ours >= 1.10x torch._grouped_mm on skewed routing, >= 1.00x on uniform (fwd).
``--sweep`` times, instead of the public calls, every candidate config of both variants and the TLX kernel's
``TRIALS``, each with GROUP_M 1, 8, 16 and 64 (``calls.sweep_candidates``: 36 compiles per product), as single
launches, checked the same way; written to ``bench/results/moe-sweep-<date>.json``.
How one call is timed: ``--timing`` (``workbench.measure.timing.time_call``; default: back-to-back calls).
Each shape and product runs in ``workbench.run.jobs``' isolated worker: a kernel that hangs (``--job-timeout``)
or faults is a failed row and the run goes on in a fresh worker.

``--compile-only`` compiles every variant x product x config for sm_90 on this machine (CPU tensors, at the first
shape) and reports per config the registers (per async task for TLX), spills, local memory, shared memory, the
static orchestration findings (``workbench.check``) and the compile time.

Writes ``bench/results/moe-<date>.json`` (``moe-compile-<date>.json``): device, date, versions, command, rows of
{kernel, kind, shape [E, K, N, T], routing, dtype, causal, config, ms, tflops, baseline, baseline_ms, ratio,
method}, the checks, every round's times and the summary against the targets.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "kernels"))
sys.path[:0] = [str(ROOT / "bench"), str(ROOT / "testbed")]

from recordings import versions, write_result  # noqa: E402
from tlx_kernels.moe import routing  # noqa: E402

from workbench.run.jobs import Jobs, in_parallel  # noqa: E402

KINDS = ("fwd", "dx", "dw")
OURS = ("grouped_mm", "ws_cooperative", "triton")
BASELINES = ("torch_grouped_mm", "matmul_loop")
TARGETS = {"skewed": 1.10, "uniform": 1.00}  # vs torch._grouped_mm, fwd


def log(*a: Any) -> None:
    print(*a, flush=True)


# ------------------------------------------------------------------------------------------------
# the calls of one shape and product
# ------------------------------------------------------------------------------------------------


def operands(s: routing.Shape, kind: str, seed: int = 0) -> dict[str, Any]:
    """Random bf16 operands of ``s`` on the GPU, the offsets, and each expert's token range (host side)."""
    import torch
    from tlx_kernels.moe.reference import bounds

    g = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randn(s.T, s.K, device="cuda", dtype=torch.bfloat16, generator=g)
    w = torch.randn(s.E, s.K, s.N, device="cuda", dtype=torch.bfloat16, generator=g) / s.K ** 0.5
    dy = torch.randn(s.T, s.N, device="cuda", dtype=torch.bfloat16, generator=g)
    offsets = routing.offsets_of(s.counts(seed), "cuda")
    a, b = {"fwd": (x, w), "dx": (dy, w), "dw": (x, dy)}[kind]
    return dict(a=a, b=b, offsets=offsets, bounds=bounds(offsets))


def calls_of(kind: str, op: dict[str, Any], sweep: bool = False) -> dict[str, Any]:
    """name -> fn(out) computing ``kind`` into ``out``: ours (public call, each variant; with ``sweep`` every
    candidate of ``calls.sweep_candidates`` as one launch instead) and the baselines."""
    import torch
    from tlx_kernels.moe import calls

    a, b, offsets, spans = op["a"], op["b"], op["offsets"], op["bounds"]
    runs: dict[str, Any] = {}
    if sweep:
        for c in calls.sweep_candidates():
            runs[calls.candidate_name(c)] = lambda out, c=c: calls.launch(kind, a, b, offsets, c["VARIANT"], c, out)
    else:
        public = {"fwd": calls.grouped_mm, "dx": calls.grouped_mm_dx, "dw": calls.grouped_mm_dw}[kind]
        runs["grouped_mm"] = lambda out: public(a, b, offsets, out=out)
        for variant in calls.VARIANTS:
            runs[variant] = lambda out, v=variant: public(a, b, offsets, variant=v, out=out)
    if kind == "fwd":
        runs["torch_grouped_mm"] = lambda out: out.copy_(torch._grouped_mm(a, b, offs=offsets))
    elif kind == "dx":
        runs["torch_grouped_mm"] = lambda out: out.copy_(torch._grouped_mm(a, b.transpose(1, 2), offs=offsets))
    else:
        runs["torch_grouped_mm"] = lambda out: out.copy_(torch._grouped_mm(a.t(), b, offs=offsets))
    runs["matmul_loop"] = lambda out: _loop(kind, a, b, spans, out)
    return runs


def _loop(kind: str, a, b, spans: list[tuple[int, int]], out):
    """One torch.matmul per expert with tokens (an empty expert's dw is zeroed)."""
    import torch

    for e, (s, t) in enumerate(spans):
        if kind == "dw" and t == s:
            out[e].zero_()
        elif kind == "dw":
            torch.matmul(a[s:t].T, b[s:t], out=out[e])
        elif t > s:
            torch.matmul(a[s:t], b[e] if kind == "fwd" else b[e].T, out=out[s:t])
    return out


def output(kind: str, op: dict[str, Any], fill: float | None = None):
    import torch

    a, b = op["a"], op["b"]
    shape = {"fwd": lambda: (a.shape[0], b.shape[2]), "dx": lambda: (a.shape[0], b.shape[1]),
             "dw": lambda: (op["offsets"].shape[0], a.shape[1], b.shape[1])}[kind]()
    return torch.full(shape, fill, device="cuda", dtype=a.dtype) if fill is not None else \
        torch.empty(shape, device="cuda", dtype=a.dtype)


def checked(kind: str, op: dict[str, Any], runs: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each call once into a NaN-poisoned output against the fp32 loop: {name: {rel_err, error}}."""
    import torch
    from tlx_kernels.accuracy import rel_err
    from tlx_kernels.gemm.common import fp32_tolerance
    from tlx_kernels.moe.reference import covered_rows, reference

    ref = reference(kind, op["a"], op["b"], op["offsets"])
    rows = None if kind == "dw" else covered_rows(op["offsets"])
    out: dict[str, dict[str, Any]] = {}
    for name, fn in runs.items():
        try:
            got = fn(output(kind, op, float("nan")))
            torch.cuda.synchronize()
            err = rel_err(got[:rows], ref[:rows])
            out[name] = dict(rel_err=err, error=None if err < fp32_tolerance(got.dtype) else
                             f"max rel err {err:.3g} against fp32 (tolerance {fp32_tolerance(got.dtype)})")
        except Exception as e:  # noqa: BLE001 - a failing call is a row with its error
            out[name] = dict(rel_err=None, error=f"{type(e).__name__}: {str(e).splitlines()[0][:300]}")
    return out


def measure_shape(s: routing.Shape, kind: str, args) -> tuple[list[dict], dict[str, Any]]:
    """Rows (ours against each baseline) and the shape's record (checks, round times, tuned configs)."""
    import torch
    from tlx_kernels.moe import calls

    from workbench.measure.compare import rounds_records, versus_rows
    from workbench.measure.interleave import timed_rounds

    op = operands(s, kind)
    sweep = args.sweep
    runs = calls_of(kind, op, sweep)
    ours = [k for k in runs if k not in BASELINES]
    checks = checked(kind, op, runs)
    good = {k: v for k, v in runs.items() if checks[k]["error"] is None}
    outs = {k: output(kind, op) for k in good}
    times = timed_rounds({k: (lambda fn=fn, o=outs[k]: fn(o)) for k, fn in good.items()}, args.rounds,
                         args.round_rep, args.timing)
    records = rounds_records(times, s.flops())
    for k in () if sweep else OURS:  # a sweep's names are their configs
        cfg = calls.tuned(kind, op["a"], op["b"], op["offsets"], None if k == "grouped_mm" else k)
        if k in records and cfg:
            records[k]["config"] = calls.candidate_name(cfg)
    rows = versus_rows({k: v for k, v in records.items() if k in ours},
                       {k: v for k, v in records.items() if k in BASELINES})
    for r in rows:
        r.update(kind=kind, shape=[s.E, s.K, s.N, s.T], routing=s.routing, layer=s.name, dtype="bf16", causal=None,
                 method=f"{r['method']}; {args.timing}")
    failed = [dict(kernel=k, kind=kind, shape=[s.E, s.K, s.N, s.T], routing=s.routing, error=c["error"])
              for k, c in checks.items() if c["error"]]
    del op, outs
    torch.cuda.empty_cache()
    return rows, dict(shape=s.label, kind=kind, checks=checks, times=times, failed=failed)


def shape_job(shape: dict[str, Any], kind: str, options: dict[str, Any]) -> dict[str, Any]:
    """In the isolated worker: :func:`measure_shape` of one shape and product (JSON in, JSON out)."""
    rows, rec = measure_shape(routing.Shape(**shape), kind, argparse.Namespace(**options))
    return dict(rows=rows, record=rec)


def jobs(name: str, gpu: bool = True) -> Jobs:
    """An isolated worker that imports this script's jobs (``moe:...``) and the kernel library."""
    return Jobs(paths=[str(ROOT / "bench"), str(ROOT / "kernels")], gpu=gpu, name=name)


def compile_job(shape: dict[str, Any], kind: str, cands: list[dict[str, Any]]) -> list[str]:
    """In a worker: compile (``warmup``, nothing launched) ``cands`` for one shape and product on this GPU, into
    Triton's cache on disk, which the measuring worker then reads; each candidate's error, or "ok"."""
    from tlx_kernels.moe import calls, problem

    op = operands(routing.Shape(**shape), kind)
    p = problem.problem(kind, op["a"], op["b"], op["offsets"])
    out = []
    for c in cands:
        try:
            kernel, args_, kwargs, grid = calls.prepare(p, c["VARIANT"], c)
            kernel.warmup(*args_, grid=grid, **kwargs)
            out.append("ok")
        except Exception as e:  # noqa: BLE001 - reported; the measuring worker meets it again as a failed row
            out.append(f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}")
    return out


def precompile(shapes: list[routing.Shape], kinds: list[str], args) -> None:
    """The sweep's compiles, ``args.workers`` isolated workers at once (a sweep is tens of compiles per product)."""
    from tlx_kernels.moe import calls

    cands = calls.sweep_candidates()
    chunks = [(s, kind, cands[i:i + 4]) for s in shapes for kind in kinds for i in range(0, len(cands), 4)]
    t0 = time.time()

    def work(jobs: Jobs, chunk: tuple[routing.Shape, str, list[dict]]) -> None:
        s, kind, part = chunk
        answer = jobs.call("moe:compile_job", dataclasses.asdict(s), kind, part, timeout_s=args.job_timeout)
        if answer.failure is not None:
            log(f"  compile {s.label} {kind}: {answer.failure[:200]}")
            return
        for c, said in zip(part, answer.value, strict=True):
            if said != "ok":
                log(f"  compile {s.label} {kind} {calls.candidate_name(c)}: {said}")

    in_parallel(chunks, args.workers, lambda: jobs("moe-compile"), work)
    log(f"compiled {len(cands)} candidates x {len(shapes)} shapes x {len(kinds)} products in "
        f"{time.time() - t0:.0f} s ({args.workers} workers)")


def measure_in_worker(jobs: Jobs, s: routing.Shape, kind: str, args) -> tuple[list[dict], dict[str, Any]]:
    """:func:`measure_shape` in ``workbench.run.jobs``' worker: a kernel that hangs or faults costs this shape and
    product alone (its row says why) and the next one starts in a fresh worker."""
    options = dict(rounds=args.rounds, round_rep=args.round_rep, timing=args.timing, sweep=args.sweep)
    answer = jobs.call("moe:shape_job", dataclasses.asdict(s), kind, options, timeout_s=args.job_timeout)
    if answer.failure is None:
        return answer.value["rows"], answer.value["record"]
    failed = [dict(kernel="*", kind=kind, shape=[s.E, s.K, s.N, s.T], routing=s.routing, error=answer.failure)]
    return [], dict(shape=s.label, kind=kind, checks={}, times={}, failed=failed)


def summary(rows: list[dict]) -> list[dict]:
    """Per shape and product: the best of ours against torch._grouped_mm, and the target (fwd only)."""
    out = []
    for key in sorted({(r["layer"], tuple(r["shape"]), r["routing"], r["kind"]) for r in rows}):
        layer, shape, rt, kind = key
        vs = [r for r in rows if (r["layer"], tuple(r["shape"]), r["routing"], r["kind"]) == key
              and r["baseline"] == "torch_grouped_mm"]
        best = max(vs, key=lambda r: r["ratio"]) if vs else None
        need = TARGETS[rt] if kind == "fwd" and rt in TARGETS else None
        out.append(dict(layer=layer, shape=list(shape), routing=rt, kind=kind, best=best and best["kernel"],
                        tflops=best and best["tflops"], vs_torch_grouped_mm=best and best["ratio"], target=need,
                        met=(best["ratio"] >= need) if best and need else None))
    return out


def print_table(rows: list[dict], summ: list[dict]) -> None:
    head = ("shape", "kind", "kernel", "TFLOP/s", "ms", "x_grouped", "x_loop")
    log("\n" + " ".join(f"{h:>{w}s}" for h, w in zip(head, (34, 4, 15, 8, 8, 9, 8))) + "  config")
    for s in summ:
        label = f"{s['layer']} {'x'.join(map(str, s['shape']))} {s['routing'][:4]}"
        here = [r for r in rows if (r["layer"], r["shape"], r["routing"], r["kind"])
                == (s["layer"], s["shape"], s["routing"], s["kind"])]
        for k in dict.fromkeys(r["kernel"] for r in here):  # ours: the public calls, or a sweep's configs
            ratios = {r["baseline"]: r["ratio"] for r in here if r["kernel"] == k}
            if not ratios:
                continue
            r = next(r for r in here if r["kernel"] == k)
            cols = "".join(f"{ratios[b]:9.3f}" if b in ratios else f"{'-':>9s}" for b in BASELINES)
            log(f"{label:>34s} {s['kind']:>4s} {k:>15s} {r['tflops']:8.1f} {r['ms']:8.4f} {cols}  "
                f"{r.get('config') or '-'}")
    log("\n== best of ours vs torch._grouped_mm (targets, fwd: >= 1.10x skewed, >= 1.00x uniform)")
    for s in summ:
        log(f"  {s['layer']:>13s} {'x'.join(map(str, s['shape'])):>22s} {s['routing']:>7s} {s['kind']:>3s} "
            + (f"{s['best']:>15s} {s['tflops']:7.1f} TFLOP/s {s['vs_torch_grouped_mm']:.3f}x" if s["best"] else "-")
            + (f"  target {s['target']:.2f}x: {'met' if s['met'] else 'MISSED'}" if s["target"] else ""))


# ------------------------------------------------------------------------------------------------
# compile-only
# ------------------------------------------------------------------------------------------------


def compile_only(s: routing.Shape, kinds: list[str]) -> list[dict]:
    """Every variant x product x config compiled for sm_90 from CPU tensors of shape ``s``: resources, findings."""
    import torch
    from tlx_kernels.gemm.common import config_name
    from tlx_kernels.moe import calls, problem

    import workbench
    from workbench.check import check_artifact

    x, dy = torch.empty(s.T, s.K, dtype=torch.bfloat16), torch.empty(s.T, s.N, dtype=torch.bfloat16)
    w = torch.empty(s.E, s.K, s.N, dtype=torch.bfloat16)
    offsets = routing.offsets_of(s.counts())
    out = []
    for variant, mod in calls.VARIANTS.items():
        for kind in kinds:
            a, b = {"fwd": (x, w), "dx": (dy, w), "dw": (x, dy)}[kind]
            for cfg in mod.CONFIGS:
                kernel, args_, kwargs, grid = calls.prepare(problem.problem(kind, a, b, offsets), variant, cfg)
                t0 = time.perf_counter()
                row: dict[str, Any] = dict(variant=variant, kind=kind, config=config_name(cfg), shape=s.label)
                try:
                    art = workbench.compile(kernel, *args_, target="sm_90", **kwargs)
                    findings = check_artifact(art, kernel, *args_, grid=tuple(grid), **kwargs)
                except Exception as e:  # noqa: BLE001 - a config that does not compile is a row with its error
                    row.update(error=f"{type(e).__name__}: {str(e).splitlines()[0][:300]}")
                    out.append(row)
                    continue
                m = art.metadata
                row.update(compile_s=round(time.perf_counter() - t0, 2), registers=m.registers,
                           task_registers=[t["registers"] for t in sorted(m.tasks, key=lambda t: t["start_warp"])],
                           spill_stores=m.spill_stores, spill_loads=m.spill_loads, local_bytes=m.local_bytes,
                           shared_bytes=m.shared_bytes, num_warps=m.num_warps, grid=list(grid),
                           findings=[str(f).splitlines()[0] for f in findings if f.severity != "info"],
                           info=len([f for f in findings if f.severity == "info"]))
                out.append(row)
                log(f"  {variant:>14s} {kind:>3s} {row['config']:>26s} regs {m.registers} {row['task_registers']} "
                    f"spills {m.spill_stores}/{m.spill_loads} smem {m.shared_bytes} findings {len(row['findings'])} "
                    f"({row['compile_s']} s)")
    return out


# ------------------------------------------------------------------------------------------------
# main
# ------------------------------------------------------------------------------------------------


def parse_args(argv: list[str] | None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help=f"{len(routing.QUICK_SHAPES)} shapes only")
    p.add_argument("--shapes", default=None, help="ExKxNxT[:uniform|skewed][,...] (any list)")
    p.add_argument("--kinds", default=None, help=f"comma list from {','.join(KINDS)} (default: fwd; "
                   "--compile-only: all)")
    p.add_argument("--compile-only", action="store_true", help="compile every variant x product x config for "
                   "sm_90 (no GPU needed) and report resources; at the first shape")
    p.add_argument("--sweep", action="store_true", help="time every config and trial of both variants with "
                   "GROUP_M 1, 8, 16 and 64 as launches (calls.sweep_candidates) instead of the public calls")
    p.add_argument("--timing", default="calls", choices=["calls", "flush"], help="how one call is timed")
    p.add_argument("--rounds", type=int, default=7, help="interleaved rounds per shape (at least 1)")
    p.add_argument("--round-rep", type=float, default=40.0, help="ms of timed calls per item and round")
    p.add_argument("--workers", type=int, default=min(6, max(1, (os.cpu_count() or 2) // 2)),
                   help="--sweep: workers compiling at once before the timing")
    p.add_argument("--job-timeout", type=float, default=300.0, help="s one shape and product may take in the "
                   "worker (tuning and compiling included) before it counts as hung")
    p.add_argument("--out", default=None, help="output JSON path")
    args = p.parse_args(argv)
    args.rounds = max(1, args.rounds)
    kinds = args.kinds or (",".join(KINDS) if args.compile_only else "fwd")
    args.kinds = [k.strip() for k in kinds.split(",") if k.strip()]
    if any(k not in KINDS for k in args.kinds):
        p.error(f"--kinds: choose from {KINDS}, got {args.kinds}")
    try:
        shapes = ([routing.parse_shape(t) for t in args.shapes.split(",") if t] if args.shapes else
                  routing.QUICK_SHAPES if args.quick else routing.BENCH_SHAPES)
        for s in shapes:
            if s.routing not in routing.ROUTINGS or s.K % 8 or s.N % 8:
                raise ValueError(f"{s.label}: routing uniform or skewed, K and N multiples of 8")
    except ValueError as e:
        p.error(f"--shapes: {e}")
    return args, shapes


def main(argv: list[str] | None = None) -> int:
    args, shapes = parse_args(argv)
    t_start = time.time()
    doc: dict[str, Any] = dict(date=dt.datetime.now().isoformat(timespec="seconds"), versions=versions(),
                               command=" ".join(["python3", "bench/moe.py", *(argv if argv is not None else
                                                                              sys.argv[1:])]))
    if args.compile_only:
        log(f"compile-only, sm_90, at {shapes[0].label}: every variant x {args.kinds} x config")
        doc.update(device="none (compiled for sm_90 on the CPU)", mode="compile-only",
                   configs=compile_only(shapes[0], args.kinds))
        doc["wall_s"] = round(time.time() - t_start, 1)
        path = write_result(doc, "moe-compile", args.out)
        log(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
        return 1 if any(r.get("error") or r.get("findings") or r.get("spill_stores") for r in doc["configs"]) else 0

    import torch

    if not torch.cuda.is_available():
        log("bench/moe.py needs a CUDA GPU to time anything, and torch sees none here (torch.cuda.is_available() is "
            f"False); nothing timed, nothing written. {len(shapes)} shapes x {args.kinds} were asked for. "
            "On this machine: python3 bench/moe.py --compile-only (compiles every variant for sm_90 and reports "
            "registers, spills and shared memory).")
        return 2
    log(f"{torch.cuda.get_device_name()}, torch {torch.__version__}; {len(shapes)} shapes x {args.kinds}, "
        f"{args.rounds} interleaved rounds, timing {args.timing}")
    if args.sweep:
        precompile(shapes, args.kinds, args)
    rows, per_shape = [], []
    with jobs("moe") as worker:
        for s in shapes:
            for kind in args.kinds:
                log(f"== {s.label} {kind}")
                r, rec = measure_in_worker(worker, s, kind, args)
                rows += r
                per_shape.append(rec)
                for f in rec["failed"]:
                    log(f"  {f['kernel']}: FAILED {f['error']}")
    summ = summary(rows)
    print_table(rows, summ)
    doc.update(device=torch.cuda.get_device_name(), mode="sweep" if args.sweep else "bench", timing=args.timing,
               rows=rows, summary=summ,
               shapes=per_shape, wall_s=round(time.time() - t_start, 1),
               medians={f"{p['shape']} {p['kind']}": {k: statistics.median(v) for k, v in p["times"].items()}
                        for p in per_shape})
    path = write_result(doc, "moe-sweep" if args.sweep else "moe", args.out)
    log(f"\nwrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path} ({doc['wall_s']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
