"""GPU correctness of the four TLX example kernels against torch (bf16, fresh random inputs, NaN-poisoned outputs).

Usage (on a machine with a CUDA GPU, from the repository root):

    .venv/bin/python bench/tlx_correctness.py [--shapes 1000,1500,777 1024,1024,1024] [--seed 0]

Prints a table and writes ``bench/results/tlx-correctness-<date>.json``. One kernel failing (wrong
result, compile error, crash) is recorded and the others still run. Exit status 1 if any check failed.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests", "tlx"))

REL_TOL = 1e-2


def rel_error(out, ref) -> float:
    import torch

    out = out.float()
    ref = ref.float()
    if not torch.isfinite(out).all():
        return float("inf")
    return float((out - ref).norm() / ref.norm().clamp_min(1e-12))


def run_one(name: str, shape: tuple[int, int, int], seed: int) -> dict:
    import tlx_examples as E
    import torch

    ex = E.EXAMPLES[name]
    M, N, K = shape
    torch.manual_seed(seed)
    dev = "cuda"
    rec: dict = {"kernel": name, "M": M, "N": N, "K": K, "dtype": "bfloat16"}
    t0 = time.perf_counter()
    if ex["kind"] == "elementwise":
        x = torch.randn(M * N, device=dev, dtype=torch.bfloat16)
        y = torch.full_like(x, float("nan"))
        out = ex["run"](x, 2.0, y=y)
        ref = ex["reference"](x, 2.0)
        rec["n_elements"] = M * N
    else:
        a = torch.randn(M, K, device=dev, dtype=torch.bfloat16)
        b = torch.randn(K, N, device=dev, dtype=torch.bfloat16)
        if name == "ws_gemm":
            c = E.empty_tma(M, N, torch.bfloat16, dev, fill=float("nan"))
        else:
            c = torch.full((M, N), float("nan"), device=dev, dtype=torch.bfloat16)
        out = ex["run"](a, b, c=c)
        ref = ex["reference"](a, b)
    torch.cuda.synchronize()
    rec["seconds"] = round(time.perf_counter() - t0, 3)
    err = rel_error(out, ref)
    rec["rel_error"] = err
    rec["nan_count"] = int(torch.isnan(out.float()).sum().item())
    rec["ok"] = bool(err < REL_TOL and rec["nan_count"] == 0)
    return rec


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", nargs="*", default=["1000,1500,777", "1024,1024,1024"])
    ap.add_argument("--kernels", nargs="*", default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None, help="JSON path (default bench/results/tlx-correctness-<date>.json)")
    args = ap.parse_args(argv)

    import torch
    import triton

    if not torch.cuda.is_available():
        print("no CUDA GPU: this script needs one (compile-only checks are in tests/tlx)")
        return 2
    import tlx_examples as E

    names = args.kernels or list(E.EXAMPLES)
    shapes = [tuple(int(v) for v in s.split(",")) for s in args.shapes]
    results = []
    for shape in shapes:
        for name in names:
            print(f"[tlx-correctness] {name} M,N,K={shape} ...", flush=True)
            try:
                rec = run_one(name, shape, args.seed)
            except Exception as e:  # record and go on with the next kernel
                rec = {
                    "kernel": name,
                    "M": shape[0],
                    "N": shape[1],
                    "K": shape[2],
                    "ok": False,
                    "error": f"{type(e).__name__}: {e}"[:4000],
                    "traceback": traceback.format_exc()[-4000:],
                }
                try:
                    torch.cuda.synchronize()
                except Exception as sync_err:  # a faulting kernel poisons the context: note it
                    rec["context_error"] = str(sync_err)[:500]
            print(
                f"    -> {'ok' if rec.get('ok') else 'FAIL'} rel_error={rec.get('rel_error')} "
                f"{rec.get('error', '')[:200]}",
                flush=True,
            )
            results.append(rec)

    print()
    print(f"{'kernel':<14} {'M':>6} {'N':>6} {'K':>6} {'rel_error':>12} {'nan':>6}  result")
    for r in results:
        err = r.get("rel_error")
        err_s = f"{err:.3e}" if isinstance(err, float) else "-"
        print(
            f"{r['kernel']:<14} {r['M']:>6} {r['N']:>6} {r['K']:>6} {err_s:>12} {r.get('nan_count', '-'):>6}  "
            f"{'ok' if r.get('ok') else 'FAIL ' + r.get('error', '')[:60]}"
        )

    now = _dt.datetime.now(_dt.UTC)
    payload = {
        "date": now.isoformat(timespec="seconds"),
        "device": torch.cuda.get_device_name(0),
        "capability": list(torch.cuda.get_device_capability(0)),
        "torch": torch.__version__,
        "triton": triton.__version__,
        "cuda": torch.version.cuda,
        "python": platform.python_version(),
        "command": " ".join([os.path.relpath(sys.argv[0], ROOT)] + (argv if argv is not None else sys.argv[1:])),
        "tolerance": {"rel_error_below": REL_TOL},
        "seed": args.seed,
        "results": results,
        "all_ok": all(r.get("ok") for r in results),
    }
    out = args.out or os.path.join(HERE, "results", f"tlx-correctness-{now.strftime('%Y-%m-%d')}.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump(payload, f, indent=2)
    print(f"\nwrote {out}")
    return 0 if payload["all_ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
