"""Host time per launch of the GEMM library's kernels on Triton 3.8 (where small problems are launch-bound).

    python3 bench/launch_overhead.py [--size 1024] [--calls 1000] [--rounds 7] [--json PATH]

Needs a CUDA GPU; ~30 s. For each path it calls a launch ``--calls`` times back to back on a problem small
enough (default 1024^3 bf16, a few microseconds of GPU time) that the host is the bottleneck, and reports
the host time per call (the loop's wall time before the final synchronize) and the wall time per call
(after it), medians of ``--rounds`` interleaved rounds (a burst of host noise moves one round, not a row).

Paths: ``torch.matmul`` (cuBLAS); for each library kernel the bare ``kernel[grid](*args, **kwargs)`` with
the descriptors built once (Triton's JIT dispatch: binding, specialization key, cache lookup) and
``matmul(a, b, config=DEFAULT, out=out)`` (operand checks, descriptors, dispatch); for two kernels also
``CompiledKernel[grid](*args)`` from ``kernel.warmup(...)`` (Triton's public launch of a compiled kernel,
skipping the JIT's dispatch: what a fast-launch path could save; the library has none on 3.8). Writes
JSON (default bench/results/launch-overhead-<date>.json).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
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


def compiled_launch(kernel, args, kwargs, grid):
    """``CompiledKernel[grid](*values)`` for a prepared launch: every parameter's value in order."""
    compiled = kernel.warmup(*args, grid=grid, **kwargs)
    params = kernel.params
    values = list(args) + [kwargs[p.name] if p.name in kwargs else p.default for p in params[len(args) :]]
    runner = compiled[(*grid, 1, 1)[:3]]
    return lambda: runner(*values)


def cases(a, b, out) -> list[tuple[str, object, str]]:
    import torch
    from tlx_kernels.gemm import MODULES, triton_dot

    rows: list[tuple[str, object, str]] = [("torch.matmul (cuBLAS)", lambda: torch.matmul(a, b, out=out), "")]
    for name, mod in MODULES.items():
        cfg = dict(mod.DEFAULT)
        if mod is triton_dot:
            triton_dot._ensure_allocator()
            kernel, args, kwargs, grid, _ = mod.prepare(a, b, cfg, out)
        else:
            kernel, (args, kwargs, grid, _) = mod.kernel, mod.prepare(a, b, cfg, out)
        bare = lambda kernel=kernel, args=args, kwargs=kwargs, grid=grid: kernel[grid](*args, **kwargs)  # noqa: E731
        rows.append((f"{name} kernel[grid]", bare, "descriptors built once"))
        call = lambda mod=mod, cfg=cfg: mod.matmul(a, b, config=cfg, out=out)  # noqa: E731
        rows.append((f"{name}.matmul(config=DEFAULT)", call, "checks + descriptors + kernel[grid]"))
        if name in ("ws_cooperative", "triton_dot"):
            rows.append((f"{name} CompiledKernel[grid]", compiled_launch(kernel, args, kwargs, grid),
                         "no JIT dispatch (not used by the library)"))
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)

    import torch
    import triton

    if not torch.cuda.is_available():
        print("needs a CUDA GPU")
        return 2
    n = args.size
    torch.manual_seed(0)
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    out = torch.empty(n, n, device="cuda", dtype=torch.bfloat16)
    ref = torch.matmul(a, b)
    todo = cases(a, b, out)
    for name, fn, _ in todo:  # compile, and check each path computes the product
        out.fill_(float("nan"))
        fn()
        torch.cuda.synchronize()
        err = ((out.float() - ref.float()).abs().max() / ref.float().abs().max()).item()
        assert err < 1e-2, f"{name}: max rel err {err}"

    samples: dict[str, list[tuple[float, float]]] = {name: [] for name, *_ in todo}
    for r in range(args.rounds):
        for name, fn, _ in todo:
            samples[name].append(per_call(fn, args.calls))
        print(f"round {r + 1}/{args.rounds} done", flush=True)
    rows = []
    for name, _fn, note in todo:
        hosts = [h for h, _ in samples[name]]
        walls = [w for _, w in samples[name]]
        host, wall = statistics.median(hosts), statistics.median(walls)
        rows.append(dict(path=name, host_us=host, wall_us=wall, host_us_rounds=hosts, note=note))
        spread = f"[{min(hosts):.1f}-{max(hosts):.1f}]"
        print(f"{name:44} host {host:7.1f} us/call {spread:>15}  wall {wall:7.1f} us/call  {note}", flush=True)

    now = dt.datetime.now(dt.UTC)
    path = args.json or os.path.join(ROOT, "bench", "results", f"launch-overhead-{now:%Y-%m-%d}.json")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(
            dict(
                date=now.isoformat(timespec="seconds"),
                device=torch.cuda.get_device_name(),
                torch=torch.__version__,
                triton=triton.__version__,
                python=platform.python_version(),
                command="python3 " + " ".join(["bench/launch_overhead.py"] + sys.argv[1:]),
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
