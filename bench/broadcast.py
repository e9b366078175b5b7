"""Broadcast-fusion benchmark (issue 18): the fused TLX kernel vs the materialized and the decomposed torch paths.

    python3 bench/broadcast.py                         # every BENCH_SHAPE (~1.5-3 min on an H200)
    python3 bench/broadcast.py --shapes main           # by name (tlx_kernels.broadcast.BENCH_SHAPES)
    python3 bench/broadcast.py --sweep --budget-s 300  # try many configs per shape, record all, keep the best
    python3 bench/broadcast.py --configs-from bench/results/broadcast-sweep-DATE.json   # time the sweep's picks

Op: ``Y[b, c] = act(concat(U[b], X[b, c]) @ W + bias)`` (see ``tlx_kernels/broadcast/__init__.py``).
Baselines, measured in the same run: ``materialized`` (repeat_interleave + cat + one cuBLAS GEMM, end
to end including the repeat) and ``decomposed`` (``U @ W_u`` once per user, ``X @ W_x``, a broadcast
add: nothing repeated, not fused). First every config is run on small odd shapes in workbench.run's isolated
worker with a time limit (a hang or a fault there excludes the config and cannot stop the run). Per shape: the
GPU is warmed for ``--warmup-s`` with the materialized path, our kernel is tuned over the configs that
passed (or the sweep's pick), the public call ``broadcast_linear(..., config=that, out=out)`` (its repeats
launch from the cached plan) is checked against the fp32 reference in a NaN-poisoned output (max rel err < 1e-2,
else it is not timed), then all three are timed with ``workbench.measure.timing.time_call`` (median, L2 flushed
between runs). TFLOP/s everywhere use the op's own FLOPs
(``2*N*(B*C*D_x + B*D_u)``, the user part once per user), so they compare times, not hardware rates.
Writes ``bench/results/broadcast-<date>.json`` (``--sweep``: ``broadcast-sweep-<date>.json``).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "kernels"))
sys.path[:0] = [str(ROOT / "bench"), str(ROOT / "testbed")]

from recordings import write_result  # noqa: E402

TOL = 1e-2


def log(*a: Any) -> None:
    print(*a, flush=True)


# ------------------------------------------------------------------------------------------------
# the check of each config on small odd shapes, in workbench.run's isolated worker (a hang or fault stays there)
# ------------------------------------------------------------------------------------------------


def check_config(cfg: dict[str, Any]) -> str:
    """(In the worker) "ok", or what is wrong with ``cfg`` on the odd and realistic test shapes."""
    import torch
    from tlx_kernels import broadcast as BC

    try:
        for s in [s for s in BC.TEST_SHAPES if s.name in ("odd", "realistic")]:
            U, X, W, b = BC.make_inputs(s.B, s.C, s.DU, s.DX, s.N, bias=s.bias, seed=s.C)
            out = BC.empty_out(s.B, s.C, s.N, U.dtype, "cuda", fill=float("nan"))
            BC.launch(U, X, W, b, s.act, cfg, out)
            torch.cuda.synchronize()
            err = BC.rel_err(out, BC.reference(U, X, W, b, s.act))
            if not err < TOL:
                raise AssertionError(f"{s.name}: max rel err {err:.3g}")
    except Exception as e:  # noqa: BLE001 - recorded; a lost CUDA context also ends the worker, which is replaced
        return f"{type(e).__name__}: {str(e)[:300]}"
    return "ok"


def check_configs(configs: list[dict[str, Any]], timeout_s: float, per_config_s: float = 90) -> dict[str, str]:
    """{config name: "ok" | error}, each config checked in the isolated worker within ``per_config_s``; one that
    hangs is stopped there and recorded, and the rest go on in a fresh worker."""
    from tlx_kernels import broadcast as BC

    from workbench.run.jobs import Jobs

    results: dict[str, str] = {}
    deadline = time.time() + timeout_s
    with Jobs(paths=[str(ROOT / "bench"), str(ROOT / "kernels")], name="broadcast-check") as jobs:
        for cfg in configs:
            if time.time() >= deadline:
                break
            a = jobs.call("broadcast:check_config", cfg, timeout_s=min(per_config_s, deadline - time.time()))
            name = BC.config_name(cfg)
            results[name] = a.value if a.returned else a.failure
            log(f"  check {name}: {results[name]}")
    for cfg in configs:
        results.setdefault(BC.config_name(cfg), "not checked (time budget)")
    return results


# ------------------------------------------------------------------------------------------------
# one shape
# ------------------------------------------------------------------------------------------------


def bench_ms(fn, rep: int) -> float:
    """The kernel's median ms, L2 flushed before each call (``workbench.measure.timing.time_call``)."""
    from workbench.measure.timing import time_call

    return time_call(fn, rep, "flush", warmup_ms=10)


def setup_shape(s, warmup_s: float) -> dict[str, Any]:
    """Inputs, the fp32 reference and a warmed GPU for shape ``s``."""
    import torch
    from tlx_kernels import broadcast as BC

    U, X, W, b = BC.make_inputs(s.B, s.C, s.DU, s.DX, s.N, bias=s.bias, seed=1)
    ref = BC.reference(U, X, W, b, s.act)
    t_end = time.perf_counter() + warmup_s
    while time.perf_counter() < t_end:  # a cold GPU boosts higher for a while: warm it before timing
        for _ in range(4):
            BC.materialized(U, X, W, b, s.act)
        torch.cuda.synchronize()
    return dict(U=U, X=X, W=W, b=b, ref=ref)


def checked_ours(s, env, cfg, rep: int) -> tuple[float, float]:
    """(ms, rel err) of our public call with ``cfg`` at ``s``; raises if the result is wrong."""
    import torch
    from tlx_kernels import broadcast as BC

    def call(out):  # the public call with this config: repeats launch from the cached plan
        return BC.broadcast_linear(env["U"], env["X"], env["W"], env["b"], s.act, config=cfg, out=out)

    out = BC.empty_out(s.B, s.C, s.N, env["U"].dtype, "cuda", fill=float("nan"))
    call(out)
    out.fill_(float("nan"))
    call(out)  # the plan's launch, into a poisoned output
    torch.cuda.synchronize()
    err = BC.rel_err(out, env["ref"])
    if not err < TOL:
        raise AssertionError(f"wrong result: max rel err {err:.3g} >= {TOL} vs the fp32 reference")
    return bench_ms(lambda: call(out), rep), err


def baselines(s, env, rep: int) -> dict[str, dict[str, Any]]:
    from tlx_kernels import broadcast as BC

    out = {}
    for name, fn in (("materialized", BC.materialized), ("decomposed", BC.decomposed)):
        row: dict[str, Any] = dict(ms=None, rel_err=None, error=None)
        try:
            err = BC.rel_err(fn(env["U"], env["X"], env["W"], env["b"], s.act), env["ref"])
            row["rel_err"] = err if math.isfinite(err) else "inf/nan"
            row["ms"] = bench_ms(lambda fn=fn: fn(env["U"], env["X"], env["W"], env["b"], s.act), rep)
        except Exception as e:  # noqa: BLE001
            row["error"] = f"{type(e).__name__}: {e}"[:500]
        out[name] = row
    return out


def shape_rows(s, env, cfg, rep: int, tuned: dict | None) -> list[dict[str, Any]]:
    """One row per baseline for our kernel at ``s`` (ratio = baseline_ms / ms)."""
    from tlx_kernels import broadcast as BC

    flops = BC.op_flops(s)
    base = baselines(s, env, rep)
    ours: dict[str, Any] = dict(ms=None, rel_err=None, error=None)
    try:
        ours["ms"], ours["rel_err"] = checked_ours(s, env, cfg, rep)
    except Exception as e:  # noqa: BLE001
        ours["error"] = f"{type(e).__name__}: {e}"[:1000]
        ours["traceback"] = traceback.format_exc()[-3000:]
    rows = []
    for bname, brow in base.items():
        ms, bms = ours["ms"], brow["ms"]
        rows.append(
            dict(
                kernel="tlx_broadcast",
                shape=s.as_dict(),
                dtype="bf16",
                ms=ms,
                tflops=flops / ms / 1e9 if ms else None,
                baseline=bname,
                baseline_ms=bms,
                baseline_tflops=flops / bms / 1e9 if bms else None,
                ratio=bms / ms if ms and bms else None,
                config=BC.config_name(cfg),
                config_full=cfg,
                rel_err=ours["rel_err"],
                baseline_rel_err=brow["rel_err"],
                error=ours["error"] or brow["error"],
                traceback=ours.get("traceback"),
                tune_ms=tuned,
            )
        )
    return rows


# ------------------------------------------------------------------------------------------------
# modes
# ------------------------------------------------------------------------------------------------


def default_shape(args, s, good: list[dict[str, Any]], picks: dict[str, dict], tuner) -> list[dict[str, Any]]:
    """Rows of one shape in the default mode: our kernel (the sweep's pick, else tuned) vs both baselines."""
    from tlx_kernels import broadcast as BC

    env = setup_shape(s, args.warmup_s)
    tuned = None
    if s.name in picks:
        cfg = picks[s.name]
    else:
        scratch = BC.empty_out(s.B, s.C, s.N, env["U"].dtype, "cuda")

        def run(c):
            return BC.launch(env["U"], env["X"], env["W"], env["b"], s.act, c, scratch)

        try:
            cfg = tuner.choose((s.name,), good, run, BC.config_name)
        except RuntimeError:
            cfg = good[0]
        tuned = {n: round(ms, 4) for n, ms in tuner.timings.get((s.name,), [])}
    return shape_rows(s, env, cfg, args.rep, tuned)


def run_default(args, shapes, good: list[dict[str, Any]], picks: dict[str, dict]) -> list[dict[str, Any]]:
    import torch
    from tlx_kernels.broadcast.tuning import Tuner

    tuner = Tuner(warmup_ms=5, rep_ms=25)
    rows = []
    fmt = lambda v: f"{v:8.4f}" if isinstance(v, float) else f"{'-':>8s}"  # noqa: E731
    fr = lambda v: f"{v:6.2f}x" if isinstance(v, float) else f"{'-':>7s}"  # noqa: E731
    for s in shapes:
        t0 = time.time()
        new = default_shape(args, s, good, picks, tuner)
        rows.extend(new)
        m, d = new[0], new[1]
        log(
            f"{s.name:>15s} ours {fmt(m['ms'])}  materialized {fmt(m['baseline_ms'])} {fr(m['ratio'])}  "
            f"decomposed {fmt(d['baseline_ms'])} {fr(d['ratio'])}  {m['config']}  ({time.time() - t0:.0f} s)"
            + (f"  ERROR {m['error'][:200]}" if m["error"] else "")
        )
        torch.cuda.empty_cache()
    return rows


def run_sweep(args, shapes, good: list[dict[str, Any]], t_start: float) -> tuple[list[dict], dict[str, Any]]:
    """Time every passing config per shape (each checked first) until the budget is spent."""
    import torch
    from tlx_kernels import broadcast as BC

    rows, best = [], {}
    for s in shapes:
        if time.time() - t_start > args.budget_s:
            log(f"budget spent before {s.name}")
            break
        env = setup_shape(s, args.warmup_s)
        base = baselines(s, env, args.rep)
        timed = []
        for cfg in good:
            if time.time() - t_start > args.budget_s:
                break
            row = dict(shape=s.name, config=BC.config_name(cfg), config_full=cfg, ms=None, error=None)
            try:
                row["ms"], row["rel_err"] = checked_ours(s, env, cfg, max(20, args.rep // 3))
                timed.append((row["ms"], cfg))
            except Exception as e:  # noqa: BLE001 - broken configs are recorded, not fatal
                row["error"] = f"{type(e).__name__}: {e}"[:500]
            rows.append(row)
        if timed:
            ms, cfg = min(timed, key=lambda t: t[0])
            bm = base["materialized"]["ms"]
            best[s.name] = dict(
                config=BC.config_name(cfg),
                config_full=cfg,
                ms=ms,
                materialized_ms=bm,
                decomposed_ms=base["decomposed"]["ms"],
                ratio=bm / ms if bm else None,
            )
            log(
                f"{s.name:>15s} best {BC.config_name(cfg):>22s} {ms:.4f} ms  materialized {bm:.4f} ms "
                f"({bm / ms:.2f}x)  [{len(timed)} configs timed]"
                if bm
                else f"{s.name:>15s} best {ms:.4f} ms"
            )
        torch.cuda.empty_cache()
    return rows, best


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--shapes", default=None, help="comma list of BENCH_SHAPES names (default: all)")
    p.add_argument("--sweep", action="store_true", help="time many configs per shape (see --budget-s)")
    p.add_argument("--budget-s", type=float, default=300, help="sweep: total seconds to spend")
    p.add_argument("--configs-from", default=None, help="a sweep JSON: use its best config per shape")
    p.add_argument("--rep", type=int, default=100, help="timing budget per measurement, ms")
    p.add_argument("--warmup-s", type=float, default=1.0, help="seconds of warm-up before each shape")
    p.add_argument("--out", default=None, help="output JSON path")
    args = p.parse_args(argv)

    import torch
    import triton

    if not torch.cuda.is_available():
        log("bench/broadcast.py needs a CUDA GPU (torch.cuda.is_available() is False); nothing timed.")
        return 2
    from tlx_kernels import broadcast as BC

    t_start = time.time()
    names = [n.strip() for n in args.shapes.split(",")] if args.shapes else [s.name for s in BC.BENCH_SHAPES]
    shapes = [s for s in BC.BENCH_SHAPES if s.name in names]
    if len(shapes) != len(names):
        p.error(f"unknown shapes in {names}; choose from {[s.name for s in BC.BENCH_SHAPES]}")
    picks = {}
    if args.configs_from:
        picks = {k: v["config_full"] for k, v in json.loads(Path(args.configs_from).read_text())["best"].items()}
    candidates = BC.sweep_configs() if args.sweep else BC.CONFIGS
    candidates = candidates + [c for c in picks.values() if c not in candidates]
    dev = torch.cuda.get_device_name(0)
    log(
        f"device {dev}, torch {torch.__version__}, triton {triton.__version__}, {BC.num_sms('cuda')} SMs; "
        f"{len(candidates)} configs, shapes {[s.name for s in shapes]}"
    )
    log("checking configs on small odd shapes in the isolated worker:")
    budget = args.budget_s * 0.5 if args.sweep else 300
    checks = check_configs(candidates, budget)
    good = [c for c in candidates if checks.get(BC.config_name(c)) == "ok"]
    doc = dict(
        device=dev,
        date=_dt.datetime.now().isoformat(timespec="seconds"),
        torch=torch.__version__,
        triton=triton.__version__,
        command=" ".join([os.path.relpath(sys.argv[0], ROOT) if sys.argv[0] else "bench/broadcast.py"] + sys.argv[1:]),
        timing="workbench.measure.timing.time_call (median, L2 flushed)",
        sms=BC.num_sms("cuda"),
        flops="2*N*(B*C*D_x + B*D_u) (the op's FLOPs, user part once per user)",
        checks=checks,
    )
    if not good:
        log("no config passed the check; nothing timed")
        doc.update(rows=[], wall_s=round(time.time() - t_start, 1))
        log(f"wrote {write_result(doc, 'broadcast-sweep' if args.sweep else 'broadcast', args.out)}")
        return 1
    if args.sweep:
        rows, best = run_sweep(args, shapes, good, t_start)
        doc.update(rows=rows, best=best, budget_s=args.budget_s)
    else:
        picks = {k: v for k, v in picks.items() if v in good}
        rows = run_default(args, shapes, good, picks)
        main_rows = [r for r in rows if r["shape"]["name"] == BC.MAIN.name and r["baseline"] == "materialized"]
        ratio = main_rows[0]["ratio"] if main_rows else None
        doc.update(
            rows=rows,
            target=dict(
                shape=BC.MAIN.name, baseline="materialized", need=2.0, ratio=ratio, met=bool(ratio and ratio >= 2.0)
            ),
        )
        log(f"main shape vs materialized: {ratio if ratio is None else round(ratio, 3)}x (target >= 2x)")
    doc["wall_s"] = round(time.time() - t_start, 1)
    log(f"wrote {write_result(doc, 'broadcast-sweep' if args.sweep else 'broadcast', args.out)} ({doc['wall_s']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
