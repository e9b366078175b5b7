"""Host time per launch of the GEMM library's kernels (where small problems are launch-bound).

    python3 bench/launch_overhead.py [--size 1024] [--calls 1000] [--rounds 5] [--json PATH] [--profile]

Needs a CUDA GPU. For each path it calls the kernel ``--calls`` times back to back on a problem small
enough (default 1024^3 bf16, a few microseconds of GPU time) that the host is the bottleneck, and reports
the host time per call (the loop's wall time before the final synchronize) and the wall time per call
(after it), the median of ``--rounds`` interleaved rounds. ``bare`` rows launch a prepared kernel
(descriptors built once); ``matmul`` rows go through the library wrapper (operand checks, descriptors,
output allocation) as a user would, with the GEMM library's fast launch (tlx_kernels/gemm/fastlaunch.py)
on and off. ``--profile`` prints the top functions of a cProfile of the TLX wrapper. Writes JSON (default
bench/results/launch-overhead-DATE.json).
"""

from __future__ import annotations

import argparse
import cProfile
import datetime as dt
import io
import json
import os
import platform
import pstats
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "kernels"))


def per_call(fn, calls: int) -> tuple[float, float]:
    """(host us per call, wall us per call) of ``calls`` back-to-back calls of ``fn``."""
    import torch

    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    t1 = time.perf_counter()
    torch.cuda.synchronize()
    t2 = time.perf_counter()
    return (t1 - t0) / calls * 1e6, (t2 - t0) / calls * 1e6


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", default=None)
    ap.add_argument("--profile", action="store_true")
    args = ap.parse_args(argv)

    import torch
    import triton
    from tlx_kernels.gemm import tma_pipelined, triton_dot, ws_cooperative

    from workbench.tlx.kernel import convert_args

    if not torch.cuda.is_available():
        print("needs a CUDA GPU")
        return 2
    n = args.size
    torch.manual_seed(0)
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    out = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)

    # (name, fn, note, fast launch off?): measured in --rounds interleaved rounds, median reported, so
    # that a burst of host noise (other processes, clock changes) moves one round, not one row.
    cases: list[tuple[str, object, str, bool]] = [
        ("torch.matmul (cuBLAS)", lambda: torch.matmul(a, b, out=out), "", False)
    ]
    for mod in (triton_dot, tma_pipelined, ws_cooperative):
        name = mod.__name__.rsplit(".", 1)[1]
        cfg = dict(mod.DEFAULT)
        call = lambda mod=mod, cfg=cfg: mod.matmul(a, b, config=cfg, out=out)  # noqa: E731
        cases.append((f"{name}.matmul(config=DEFAULT)", call, "fast launch", False))
        cases.append((f"{name}.matmul, fast launch off", call, "kernel[grid] every call", True))
        prep = mod.prepare(a, b, cfg, out)
        if mod is triton_dot:
            kernel, kargs, kw, grid, _ = prep
        else:
            kargs, kw, grid, _ = prep
            kernel = getattr(mod, f"{name}_kernel")
        bare = lambda kernel=kernel, kargs=kargs, kw=kw, grid=grid: kernel[grid](*kargs, **kw)  # noqa: E731
        cases.append((f"{name} bare launch", bare, "kernel[grid], descriptors built once", False))
        if mod is not triton_dot:
            prep_only = lambda mod=mod, cfg=cfg: mod.prepare(a, b, cfg, out)  # noqa: E731
            cases.append((f"{name} prepare() only (CPU)", prep_only, "", False))
            conv = lambda kargs=kargs, kw=kw: convert_args(kargs, kw)  # noqa: E731
            cases.append((f"{name} convert_args only (CPU)", conv, "", False))

    samples: dict[str, list[tuple[float, float]]] = {name: [] for name, *_ in cases}
    for r in range(args.rounds):
        for name, fn, _note, fast_off in cases:
            if fast_off:
                os.environ["TLX_KERNELS_NO_FASTLAUNCH"] = "1"
            try:
                samples[name].append(per_call(fn, args.calls))
            finally:
                os.environ.pop("TLX_KERNELS_NO_FASTLAUNCH", None)
        print(f"round {r + 1}/{args.rounds} done", flush=True)
    rows = []
    for name, _fn, note, _ in cases:
        hosts = [h for h, _ in samples[name]]
        walls = [w for _, w in samples[name]]
        host, wall = statistics.median(hosts), statistics.median(walls)
        rows.append(dict(path=name, host_us=host, wall_us=wall, host_us_rounds=hosts, note=note))
        spread = f"[{min(hosts):.1f}-{max(hosts):.1f}]"
        print(f"{name:38} host {host:8.1f} us/call {spread:>15}  wall {wall:8.1f} us/call  {note}", flush=True)

    if args.profile:
        pr = cProfile.Profile()
        cfg = dict(ws_cooperative.DEFAULT)
        pr.enable()
        for _ in range(300):
            ws_cooperative.matmul(a, b, config=cfg, out=out)
        pr.disable()
        torch.cuda.synchronize()
        s = io.StringIO()
        pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(30)
        print(s.getvalue())

    now = dt.datetime.now(dt.UTC)
    path = args.json or os.path.join(ROOT, "bench", "results", f"launch-overhead-{now:%Y-%m-%d}.json")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(
            dict(
                date=now.isoformat(),
                device=torch.cuda.get_device_name(),
                torch=torch.__version__,
                triton=triton.__version__,
                python=platform.python_version(),
                command="python3 " + " ".join(sys.argv),
                problem=f"{n}x{n}x{n} bf16",
                calls=args.calls,
                rounds=args.rounds,
                rows=rows,
            ),
            f,
            indent=2,
        )
    print(f"wrote {os.path.relpath(path, ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
