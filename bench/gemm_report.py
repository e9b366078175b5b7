"""The GEMM benchmark's rows, targets, sweep ranking and table, from its records (bench/gemm.py measures them).

A record is one measurement: {kind ("library": a public call's check, "meta", "sweep" configs), kernel, shape,
config, cfg, phase, ms, tflops, ...}. Rows are one per (kernel, baseline measured in the same run); from
interleaved rounds, ``ratio`` is the median of the per-round ratios.
"""

from __future__ import annotations

import math
import statistics
from typing import Any

from workbench.measure.compare import fastest, rank_configs, rounds_records, versus_rows

OURS = ("tma_pipelined", "ws_cooperative", "ws_pingpong")
# (against, ratio): the best of ours against Meta's best kernel of the run, or against cuBLAS (issue 24)
TARGETS = {(8192, 8192, 8192): ("meta", 1.00), (4096, 4096, 4096): ("meta", 1.00), (2048, 2048, 2048): ("cublas", 1.00),
           (1024, 1024, 1024): ("cublas", 1.00)}


def log(*a: Any) -> None:
    print(*a, flush=True)


def baseline_rows(records: list[dict], cub: dict, shapes, args) -> list[dict]:
    """One row per (timed kernel, baseline): cuBLAS for everything, tl.dot and each Meta kernel for ours."""
    rows = []
    for shape in shapes:
        at = [r for r in records if r["shape"] == list(shape)]
        best = {k: b for k in dict.fromkeys(r["kernel"] for r in at) if (b := fastest(at, kernel=k))}
        cublas = {"cublas": {"ms": ms}} if (ms := cub.get(tuple(shape), {}).get("ms")) else {}
        others = {k: v for k, v in best.items() if k == "triton_dot" or k.startswith("meta_")}
        for r in versus_rows(best, cublas) + versus_rows({k: v for k, v in best.items() if k in OURS}, others):
            rows.append(dict(r, shape=list(shape), dtype=args.dtype, causal=None,
                             method=f"prepared launches, {r['method']}"))
    return rows


def _configs(records: list[dict], shape) -> dict[str, str]:
    """Per kernel, the config its row names: the public call's tuned config, or the fastest timed config."""
    out: dict[str, str] = {}
    for r in sorted((r for r in records if r["shape"] == list(shape) and r["phase"] == "final"
                     and not r.get("error")), key=lambda r: -(r["ms"] or 0)):
        out[r["kernel"]] = r["config"]  # the fastest is written last
    return out


def rounds_rows(times: dict[tuple, dict[str, list[float]]], records: list[dict], args) -> list[dict]:
    """Rows from interleaved rounds: ``ms`` is the median over rounds, ``ratio`` the median of the per-round
    ratios ``baseline_ms / ms`` (each round's two timings were taken seconds apart, at the same clock)."""
    rows = []
    timing = getattr(args, "timing", None)
    for shape, per in times.items():
        recs = rounds_records(per, flops=2.0 * math.prod(shape))
        for kernel, config in _configs(records, shape).items():
            if kernel in recs:
                recs[kernel]["config"] = config
        cublas = {k: v for k, v in recs.items() if k == "cublas"}
        others = {k: v for k, v in recs.items() if k == "triton_dot" or k.startswith("meta_")}
        ours = {k: v for k, v in recs.items() if k in OURS}
        for r in versus_rows({k: v for k, v in recs.items() if k != "cublas"}, cublas) + versus_rows(ours, others):
            what = ("prepared launch" if r["kernel"].startswith("meta_") else "public call") + f", {timing}"
            rows.append(dict(r, shape=list(shape), dtype=args.dtype, causal=None,
                             method=f"{what}; {r['method']}" if timing else r["method"]))
    return rows


def summary(rows: list[dict], shapes) -> list[dict]:
    """Per shape: our best kernel against cuBLAS (the highest ratio) and against Meta's best kernel there (the Meta
    kernel with the highest ratio to cuBLAS), and whether the shape's target (:data:`TARGETS`) is met."""
    out = []
    for shape in shapes:
        here = [r for r in rows if r["shape"] == list(shape)]
        vs_cublas = [r for r in here if r["baseline"] == "cublas"]
        ours = [r for r in vs_cublas if r["kernel"] in OURS]
        metas = [r for r in vs_cublas if r["kernel"].startswith("meta_")]
        best = max(ours, key=lambda r: r["ratio"]) if ours else None
        meta = max(metas, key=lambda r: r["ratio"])["kernel"] if metas else None
        vs_meta = next((r["ratio"] for r in here if best and r["kernel"] == best["kernel"] and r["baseline"] == meta),
                       None)
        against, need = TARGETS.get(tuple(shape), (None, None))
        value = vs_meta if against == "meta" else best and best["ratio"]
        out.append(dict(shape=list(shape), best_kernel=best and best["kernel"], config=best and best["config"],
                        tflops=best and best["tflops"], vs_cublas=best and best["ratio"], meta_best=meta,
                        vs_meta=vs_meta, target=need, target_against=against,
                        met=(value >= need) if need and value is not None else None))
    return out


def ranking(records: list[dict], shapes) -> dict[str, list[dict]]:
    """Per kernel: configs timed at every shape, by the geometric mean of their speed relative to the
    kernel's best at each shape (``workbench.measure.compare.rank_configs``)."""
    return rank_configs(records, shapes, lambda s: 2.0 * math.prod(s))


def print_table(rows: list[dict], cub: dict, shapes, inter: dict | None = None) -> None:
    head = ("shape", "kernel", "TFLOP/s", "ms", "xcuBLAS", "xtl.dot", "xMeta")
    log("\n" + " ".join(f"{h:>{w}s}" for h, w in zip(head, (16, 15, 8, 8, 8, 8, 8))) + "  config")
    for shape in shapes:
        c = cub.get(tuple(shape), {})
        if c.get("ms"):
            log(f"{'x'.join(map(str, shape)):>16s} {'cublas':>15s} {2.0 * math.prod(shape) / c['ms'] / 1e9:8.1f} "
                f"{c['ms']:8.4f}   (before {c.get('before_ms')}, after {c.get('after_ms')} ms: the faster is used)")
        per = (inter or {}).get(tuple(shape), {}).get("cublas")
        if per:
            mid = statistics.median(per)
            log(f"{'':>16s} {'cublas rounds':>15s} {2.0 * math.prod(shape) / mid / 1e9:8.1f} {mid:8.4f}   "
                f"(interleaved rounds {min(per):.4f}..{max(per):.4f} ms; ratios below are medians of per-round ratios)")
        kernels = sorted({r["kernel"] for r in rows if r["shape"] == list(shape)}, key=lambda k: (k not in OURS, k))
        for k in kernels:
            mine = [r for r in rows if r["shape"] == list(shape) and r["kernel"] == k]
            ratio = {r["baseline"]: r["ratio"] for r in mine}
            meta = max((v for b, v in ratio.items() if b.startswith("meta_")), default=None)
            f = lambda v: f"{v:8.3f}" if v else f"{'-':>8s}"  # noqa: E731
            r = mine[0]
            log(f"{'x'.join(map(str, shape)):>16s} {k:>15s} {r['tflops']:8.1f} {r['ms']:8.4f} {f(ratio.get('cublas'))} "
                f"{f(ratio.get('triton_dot'))} {f(meta)}  {str(r['config'] or '-')[:60]}")
