"""Host time per launch of the GEMM library's kernels (where small problems are launch-bound).

    python3 bench/launch_overhead.py [--size 1024] [--calls 1000] [--json PATH] [--profile]

Needs a CUDA GPU. For each path it calls the kernel ``--calls`` times back to back on a problem small
enough (default 1024^3 bf16, a few microseconds of GPU time) that the host is the bottleneck, and reports
the host time per call (the loop's wall time before the final synchronize) and the wall time per call
(after it). ``bare`` rows launch a prepared kernel (descriptors built once); ``matmul`` rows go through
the library wrapper (operand checks, descriptors, output allocation) as a user would, with the
GEMM library's fast launch (tlx_kernels/gemm/fastlaunch.py) on and off. ``--profile``
prints the top functions of a cProfile of the TLX wrapper. Writes JSON (default
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

    rows = []

    def row(name, fn, note=""):
        host, wall = per_call(fn, args.calls)
        rows.append(dict(path=name, host_us=host, wall_us=wall, note=note))
        print(f"{name:38} host {host:8.1f} us/call   wall {wall:8.1f} us/call  {note}", flush=True)

    row("torch.matmul (cuBLAS)", lambda: torch.matmul(a, b, out=out))
    for mod in (triton_dot, tma_pipelined, ws_cooperative):
        name = mod.__name__.rsplit(".", 1)[1]
        cfg = dict(mod.DEFAULT)
        call = lambda mod=mod, cfg=cfg: mod.matmul(a, b, config=cfg, out=out)  # noqa: E731
        row(f"{name}.matmul(config=DEFAULT)", call, "fast launch")
        os.environ["TLX_KERNELS_NO_FASTLAUNCH"] = "1"
        row(f"{name}.matmul, fast launch off", call, "kernel[grid] every call")
        del os.environ["TLX_KERNELS_NO_FASTLAUNCH"]
        prep = mod.prepare(a, b, cfg, out)
        if mod is triton_dot:
            kernel, kargs, kw, grid, _ = prep
        else:
            kargs, kw, grid, _ = prep
            kernel = getattr(mod, f"{name}_kernel")
        row(f"{name} bare launch", lambda kernel=kernel, kargs=kargs, kw=kw, grid=grid: kernel[grid](*kargs, **kw))
        if mod is not triton_dot:
            row(f"{name} prepare() only (CPU)", lambda mod=mod, cfg=cfg: mod.prepare(a, b, cfg, out))
            row(f"{name} convert_args only (CPU)", lambda kargs=kargs, kw=kw: convert_args(kargs, kw))

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
                rows=rows,
            ),
            f,
            indent=2,
        )
    print(f"wrote {os.path.relpath(path, ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
