"""GEMM benchmark of issue 8: our TLX kernels vs cuBLAS (torch.matmul) vs Triton's tl.dot, in one run.

    .venv/bin/python bench/gemm.py                 # all shapes, all kernels (~3-6 min on an H200)
    .venv/bin/python bench/gemm.py --quick         # 8192^3 and 4096^3 only
    .venv/bin/python bench/gemm.py --kernels ws_cooperative,ws_pingpong --shapes 8192x8192x8192
    .venv/bin/python bench/gemm.py --no-tune       # each kernel's default config only

For every shape: each kernel is tuned over its small config set (common.Tuner), checked against
torch.matmul on NaN-poisoned output (max rel err < 1e-2, else it is not timed), then timed with
CUDA-graph replay (``triton.testing.do_bench_cudagraph``; ``--no-graph``: ``do_bench``, where host time
counts: every library kernel, the tl.dot baseline included, launches through ``mod.launch`` and so
through the library's fast launch, ``tlx_kernels/gemm/fastlaunch.py``). Every kernel/shape is
wrapped in try/except and its error recorded. cuBLAS is timed after ``--warmup-s`` of cuBLAS (a cold
GPU boosts higher for a while) and again after our kernels; ratios use the faster of the two. Writes
``bench/results/gemm-<date>.json``: device, date, torch, triton, command, rows of
{M, N, K, dtype, kernel, tflops, cublas_tflops, triton_tflops, ...} and the issue's targets.
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
OURS = ("tma_pipelined", "ws_cooperative", "ws_pingpong")
ALL = OURS + ("triton_dot",)


def log(*a: Any) -> None:
    print(*a, flush=True)


class _Restricted:
    """A kernel module seen with only the configs that passed preflight."""

    def __init__(self, mod: Any, configs: list[dict[str, Any]]) -> None:
        self._mod, self.CONFIGS = mod, configs
        self.DEFAULT = mod.DEFAULT if mod.DEFAULT in configs else configs[0]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._mod, name)


def parse_shapes(text: str) -> list[tuple[int, int, int]]:
    out = []
    for part in text.split(","):
        m, n, k = (int(x) for x in part.lower().split("x"))
        out.append((m, n, k))
    return out


def bench_shape(M, N, K, dtype, args, kernels, modules, tuner, graph) -> list[dict[str, Any]]:
    """Rows of one shape: cuBLAS, then every kernel (tuned, checked, timed); errors are recorded."""
    import torch
    from tlx_kernels.gemm import common as C

    log(f"\n== {M}x{N}x{K} {args.dtype}")
    flops = C.gemm_flops(M, N, K)
    torch.manual_seed(0)
    a = torch.randn(M, K, device="cuda", dtype=dtype)
    b = torch.randn(K, N, device="cuda", dtype=dtype)
    ref = torch.matmul(a, b)
    # Warm the GPU to its working temperature and clock first: a cold H200 boosts higher for a while,
    # which would flatter whichever path is timed first (cuBLAS, on the first shape).
    t_end = time.perf_counter() + args.warmup_s
    while time.perf_counter() < t_end:
        for _ in range(8):
            torch.matmul(a, b)
        torch.cuda.synchronize()
    cublas_ms, cublas_method = C.bench_ms(lambda: torch.matmul(a, b), rep_ms=args.rep, graph=graph)
    cublas = flops / cublas_ms / 1e9
    log(f"  cublas          {cublas:7.1f} TFLOP/s  ({cublas_ms * 1e3:.1f} us, {cublas_method})")
    results: dict[str, dict[str, Any]] = {}
    scratch = C.empty_out(M, N, dtype, "cuda")  # tuning output: no allocation inside captured graphs
    for name in kernels:
        mod = modules[name]
        row: dict[str, Any] = dict(kernel=name, tflops=None, ms=None, config=None, rel_err=None, error=None)
        t0 = time.time()
        try:
            key = (name, M, N, K, args.dtype)
            if args.no_tune:
                cfg = dict(mod.DEFAULT)
            else:
                cfg = tuner.choose(key, mod.CONFIGS, lambda cfg, mod=mod: mod.launch(a, b, cfg, out=scratch))
            row["config"] = C.config_name(cfg)
            row["config_full"] = dict(cfg)
            if key in tuner.timings:
                row["tune_ms"] = {n: round(ms, 4) for n, ms in tuner.timings[key]}
            out = C.empty_out(M, N, dtype, "cuda", fill=float("nan"))
            mod.launch(a, b, cfg, out=out)
            torch.cuda.synchronize()
            err = C.rel_err(out, ref)
            row["rel_err"] = err if math.isfinite(err) else "inf/nan"
            if not err < 1e-2:
                raise AssertionError(f"wrong result: max rel err {err:.3g} >= 1e-2 vs torch.matmul")
            ms, method = C.bench_ms(
                lambda mod=mod, cfg=cfg, out=out: mod.launch(a, b, cfg, out=out), rep_ms=args.rep, graph=graph
            )
            row.update(ms=ms, tflops=flops / ms / 1e9, timing=method)
            log(
                f"  {name:15s} {row['tflops']:7.1f} TFLOP/s  {row['tflops'] / cublas:5.3f}x cuBLAS (first)  "
                f"cfg {row['config']}  err {err:.1e}  ({time.time() - t0:.1f} s)"
            )
        except Exception as e:
            row["error"] = f"{type(e).__name__}: {e}"[:2000]
            row["traceback"] = traceback.format_exc()[-4000:]
            log(f"  {name:15s} FAILED: {row['error'][:300]}")
            try:
                torch.cuda.synchronize()
            except Exception:  # a faulted context cannot recover; later rows will record that
                pass
        results[name] = row
    # cuBLAS again, after our kernels: the ratios use the faster of its two timings (never flattering us)
    after_ms, _ = C.bench_ms(lambda: torch.matmul(a, b), rep_ms=args.rep, graph=graph)
    cublas_before, cublas_after = cublas, flops / after_ms / 1e9
    cublas, cublas_ms = max(cublas_before, cublas_after), min(cublas_ms, after_ms)
    log(f"  cublas again    {cublas_after:7.1f} TFLOP/s  (ratios use {cublas:.1f})")
    tri = results.get("triton_dot", {}).get("tflops")
    rows = []
    for row in results.values():
        rows.append(
            dict(
                M=M,
                N=N,
                K=K,
                dtype=args.dtype,
                cublas_tflops=cublas,
                triton_tflops=tri,
                **row,
                ratio_cublas=(row["tflops"] / cublas) if row["tflops"] else None,
                ratio_triton=(row["tflops"] / tri) if row["tflops"] and tri else None,
            )
        )
    rows.append(
        dict(
            M=M,
            N=N,
            K=K,
            dtype=args.dtype,
            kernel="cublas",
            tflops=cublas,
            ms=cublas_ms,
            cublas_tflops=cublas,
            cublas_tflops_before=cublas_before,
            cublas_tflops_after=cublas_after,
            triton_tflops=tri,
            timing=cublas_method,
        )
    )
    return rows


PREFLIGHT_SHAPES = [(1000, 1500, 777), (2304, 2048, 512)]  # 1 and 2-3 tiles per CTA on 132 SMs


def preflight_child(name: str) -> int:
    """Run every config of one kernel on small shapes; print one JSON line {config: "ok" | error}."""
    import torch

    sys.path.insert(0, str(ROOT / "kernels"))
    from tlx_kernels import gemm as G
    from tlx_kernels.gemm import common as C

    mod = G.MODULES[name]
    res: dict[str, str] = {}
    for cfg in mod.CONFIGS:
        key = C.config_name(cfg)
        try:
            for M, N, K in PREFLIGHT_SHAPES:
                a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
                b = torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
                out = C.empty_out(M, N, torch.bfloat16, "cuda", fill=float("nan"))
                mod.launch(a, b, cfg, out=out)
                torch.cuda.synchronize()
                err = C.rel_err(out, torch.matmul(a, b))
                if not err < 1e-2:
                    raise AssertionError(f"{M}x{N}x{K}: max rel err {err:.3g}")
            res[key] = "ok"
        except Exception as e:
            res[key] = f"{type(e).__name__}: {str(e)[:300]}"
            if "illegal" in str(e).lower() or "launch failure" in str(e).lower():
                break  # the context is gone
        print(f"  preflight {name} {key}: {res[key]}", file=sys.stderr, flush=True)
    print("PREFLIGHT " + json.dumps(res), flush=True)
    return 0


def preflight(kernels: list[str], timeout_s: int) -> dict[str, dict[str, str] | str]:
    """Each kernel's configs in a child process with a timeout, so a hang or a fault cannot stop the run."""
    import subprocess

    out: dict[str, dict[str, str] | str] = {}
    for name in kernels:
        t0 = time.time()
        try:
            p = subprocess.run(
                [sys.executable, str(Path(__file__).resolve()), "--preflight-child", name],
                capture_output=True,
                text=True,
                timeout=timeout_s,
            )
            line = next((x for x in p.stdout.splitlines() if x.startswith("PREFLIGHT ")), None)
            out[name] = json.loads(line[10:]) if line else f"child exited {p.returncode}: {p.stderr[-800:]}"
        except subprocess.TimeoutExpired:
            out[name] = f"hung: no answer within {timeout_s} s (killed)"
        log(f"  preflight {name}: {out[name]} ({time.time() - t0:.0f} s)")
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="8192^3 and 4096^3 only")
    p.add_argument("--kernels", default=",".join(ALL), help=f"comma list from {','.join(ALL)}")
    p.add_argument("--shapes", default=None, help="MxNxK[,MxNxK...] (overrides --quick)")
    p.add_argument("--dtype", default="bf16", choices=["bf16", "fp16"])
    p.add_argument("--no-tune", action="store_true", help="use each kernel's default config")
    p.add_argument("--no-graph", action="store_true", help="time with do_bench instead of CUDA graphs")
    p.add_argument("--rep", type=int, default=100, help="timing repetition budget per measurement, ms")
    p.add_argument("--warmup-s", type=float, default=1.0, help="seconds of cuBLAS before timing each shape")
    p.add_argument("--out", default=None, help="output JSON (default bench/results/gemm-<date>.json)")
    p.add_argument("--no-preflight", action="store_true", help="skip the per-kernel child-process check")
    p.add_argument("--preflight-timeout", type=int, default=240, help="seconds per kernel preflight")
    p.add_argument("--preflight-child", default=None, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.preflight_child:
        return preflight_child(args.preflight_child)

    import torch
    import triton

    if not torch.cuda.is_available():
        log("bench/gemm.py needs a CUDA GPU (torch.cuda.is_available() is False); nothing timed.")
        return 2
    sys.path.insert(0, str(ROOT / "kernels"))
    from tlx_kernels import gemm as G
    from tlx_kernels.gemm import common as C

    kernels = [k.strip() for k in args.kernels.split(",") if k.strip()]
    bad = [k for k in kernels if k not in ALL]
    if bad:
        p.error(f"unknown kernels {bad}; choose from {ALL}")
    if "triton_dot" not in kernels:
        kernels.append("triton_dot")  # the triton_tflops column needs it
    shapes = parse_shapes(args.shapes) if args.shapes else (C.QUICK_SHAPES if args.quick else C.BENCH_SHAPES)
    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float16
    graph = not args.no_graph
    dev = torch.cuda.get_device_name(0)
    log(f"device {dev}, torch {torch.__version__}, triton {triton.__version__}, {C.num_sms()} SMs")
    log(f"kernels {kernels}, shapes {shapes}, dtype {args.dtype}, timing {'cudagraph' if graph else 'do_bench'}")
    tuner = C.Tuner(warmup_ms=10, rep_ms=max(20, args.rep // 3))
    modules = {name: G.MODULES[name] for name in kernels}
    pre: dict[str, Any] = {}
    if not args.no_preflight:
        log("preflight (each kernel's configs on small shapes, in a child process):")
        pre = preflight(kernels, args.preflight_timeout)
        for name in list(kernels):
            r = pre.get(name)
            if isinstance(r, str):
                log(f"  excluding {name}: {r[:200]}")
                kernels.remove(name)
                continue
            good = [c for c in G.MODULES[name].CONFIGS if r.get(C.config_name(c)) == "ok"]
            if not good:
                log(f"  excluding {name}: no config passed")
                kernels.remove(name)
                continue
            modules[name] = _Restricted(G.MODULES[name], good)
    t_start = time.time()
    rows: list[dict[str, Any]] = []

    for M, N, K in shapes:
        rows.extend(bench_shape(M, N, K, dtype, args, kernels, modules, tuner, graph))
        torch.cuda.empty_cache()

    # targets: best of ours >= 1.00x cuBLAS at 8192^3 and 4096^3; >= 1.00x Triton on every shape
    summary = []
    for M, N, K in shapes:
        ours = [r for r in rows if (r["M"], r["N"], r["K"]) == (M, N, K) and r["kernel"] in OURS and r["tflops"]]
        best = max(ours, key=lambda r: r["tflops"]) if ours else None
        cub = next(r["cublas_tflops"] for r in rows if (r["M"], r["N"], r["K"]) == (M, N, K))
        tri = next(r["triton_tflops"] for r in rows if (r["M"], r["N"], r["K"]) == (M, N, K))
        s = dict(
            M=M,
            N=N,
            K=K,
            best_kernel=best["kernel"] if best else None,
            best_tflops=best["tflops"] if best else None,
            cublas_tflops=cub,
            triton_tflops=tri,
        )
        s["vs_cublas"] = s["best_tflops"] / cub if best else None
        s["vs_triton"] = s["best_tflops"] / tri if best and tri else None
        s["cublas_target"] = (
            (s["vs_cublas"] is not None and s["vs_cublas"] >= 1.0)
            if (M, N, K) in ((8192, 8192, 8192), (4096, 4096, 4096))
            else None
        )
        s["triton_target"] = s["vs_triton"] is not None and s["vs_triton"] >= 1.0
        summary.append(s)

    log("\n== summary (best of ours)")
    log(f"{'shape':>20s} {'kernel':>15s} {'TFLOP/s':>8s} {'cuBLAS':>8s} {'Triton':>8s} {'xcuBLAS':>8s} {'xTriton':>8s}")
    for s in summary:
        fmt = lambda v: f"{v:8.1f}" if isinstance(v, float) else f"{'-':>8s}"
        fr = lambda v: f"{v:8.3f}" if isinstance(v, float) else f"{'-':>8s}"
        log(
            f"{s['M']:>6d}x{s['N']:>6d}x{s['K']:>6d} {str(s['best_kernel']):>15s} {fmt(s['best_tflops'])} "
            f"{fmt(s['cublas_tflops'])} {fmt(s['triton_tflops'])} {fr(s['vs_cublas'])} {fr(s['vs_triton'])}"
        )

    date = _dt.datetime.now().strftime("%Y-%m-%d")
    out_path = Path(args.out) if args.out else ROOT / "bench" / "results" / f"gemm-{date}.json"
    if out_path.exists() and not args.out:
        out_path = out_path.with_name(f"gemm-{date}-{_dt.datetime.now().strftime('%H%M%S')}.json")
    out_path.parent.mkdir(parents=True, exist_ok=True)
    doc = dict(
        device=dev,
        date=_dt.datetime.now().isoformat(timespec="seconds"),
        torch=torch.__version__,
        triton=triton.__version__,
        command=" ".join([os.path.relpath(sys.argv[0], ROOT) if sys.argv[0] else "bench/gemm.py"] + sys.argv[1:]),
        timing="triton.testing.do_bench_cudagraph (median)" if graph else "triton.testing.do_bench (median)",
        launch="fast launch (tlx_kernels.gemm.fastlaunch)"
        if not os.environ.get("TLX_KERNELS_NO_FASTLAUNCH")
        else "kernel[grid] every call",
        sms=C.num_sms(),
        wall_s=round(time.time() - t_start, 1),
        rows=rows,
        summary=summary,
        preflight=pre,
    )
    out_path.write_text(json.dumps(doc, indent=1, default=str))
    log(f"\nwrote {out_path} ({doc['wall_s']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
