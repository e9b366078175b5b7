"""Host time per call of the library's public calls, against torch, ``kernel[grid]`` and the cached launch path.

    python3 bench/launch_overhead.py [--gemm 1024,2048] [--calls 1000] [--rounds 7] [--ops gemm,attention,broadcast]

Needs a CUDA GPU; ~1-2 min (the first public call of each problem tunes, as a user's does). Problems are small
enough that the host can be the bottleneck: GEMM ``--gemm`` cubes (bf16), attention B1 H16 S512 D128 (causal and
not), broadcast fusion's "small" shape. Each path is called ``--calls`` times back to back; the host time per
call is the loop's wall time before the final synchronize, the wall time per call includes it (so wall ~ host
means the GPU waited for the host). Medians of ``--rounds`` interleaved rounds (the order rotates: a burst of
host noise moves one round, not a row). Every path's output is checked against a reference first; a path that
fails is a row with its error.

Paths per op: torch's call (``torch.matmul``, SDPA, the decomposed/materialized torch paths); the library's
public call as a user makes it (``matmul(a, b)``: tuned config, new output; with ``out=``; with ``graph=True``:
CUDA-graph replay); the general path (``launch(...)``: checks, descriptors, ``kernel[grid]``); the bare
``kernel[grid](*args)`` with arguments built once (Triton's JIT dispatch); ``CompiledKernel[grid](*args)``
(Triton's public launch of a compiled kernel). The public rows say how many of their calls launched from a plan
(``cached``). Writes JSON (default bench/results/launch-overhead-<date>.json).
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
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from workbench.measure import interleave
from workbench.measure.timing import host_per_call

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "kernels"))

ATTENTION = (1, 16, 512, 128)  # B, H, S, D


@dataclass
class Path:
    """One way to make the call: ``run()`` launches it; ``out()`` is what it wrote, ``ref`` what it must be."""

    op: str
    problem: str
    name: str
    run: Callable[[], Any]
    out: Callable[[], Any]
    ref: Any
    note: str = ""
    plans: Any = None  # the tlx_kernels.launch.Plans the path's cached launches count in
    into: Any = None  # the caller's output buffer the path writes (NaN-poisoned before the check)
    counts: dict = field(default_factory=dict)


def compiled_call(kernel, args, kwargs, grid) -> Callable[[], Any]:
    """``CompiledKernel[grid](*values)`` of a prepared launch: every parameter's value in order."""
    compiled = kernel.warmup(*args, grid=grid, **kwargs)
    values = list(args) + [kwargs[p.name] if p.name in kwargs else p.default for p in kernel.params[len(args):]]
    runner = compiled[(*grid, 1, 1)[:3]]
    return lambda: runner(*values)


def path_maker(op: str, problem: str, ref: Any) -> Callable[..., Path]:
    """``path(name, fn, note, plans, into)``: a :class:`Path` of this problem; without ``into`` (the output buffer
    ``fn`` writes) ``fn`` returns its output, kept for the check."""
    last: dict[str, Any] = {}

    def path(name, fn, note="", plans=None, into=None) -> Path:
        if into is not None:
            return Path(op, problem, name, fn, lambda: into, ref, note, plans, into)
        return Path(op, problem, name, lambda: last.__setitem__("out", fn()), lambda: last["out"], ref, note, plans)

    return path


def gemm_paths(n: int) -> list[Path]:
    import torch
    from tlx_kernels.gemm import MODULES
    from tlx_kernels.gemm import common as C
    from tlx_kernels.gemm import ws_cooperative as W

    g = torch.Generator(device="cuda").manual_seed(n)
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16, generator=g)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16, generator=g)
    out = C.empty_out(n, n, a.dtype, "cuda")
    path = path_maker("gemm", f"{n}x{n}x{n} bf16", torch.matmul(a, b))

    rows = [path("torch.matmul(a, b)", lambda: torch.matmul(a, b), "cuBLAS, new output"),
            path("torch.matmul(a, b, out=out)", lambda: torch.matmul(a, b, out=out), "cuBLAS", into=out)]
    for name, mod in MODULES.items():
        rows.append(path(f"{name}.matmul(a, b)", lambda mod=mod: mod.matmul(a, b), "public: tuned config, new output",
                         mod._matmul.plans))
    cfg = W._matmul.config_for(a, b)
    args, kwargs, grid, _ = W.prepare(a, b, cfg, out)
    rows += [
        path("ws_cooperative.matmul(a, b, out=out)", lambda: W.matmul(a, b, out=out), "public", W._matmul.plans,
             into=out),
        path("ws_cooperative.matmul(..., graph=True)", lambda: W.matmul(a, b, out=out, graph=True),
             "public: CUDA-graph replay", into=out),
        path("ws_cooperative.launch(a, b, cfg, out)", lambda: W.launch(a, b, cfg, out),
             "general path: checks, descriptors, kernel[grid]", into=out),
        path("ws_cooperative kernel[grid](*args)", lambda: W.kernel[grid](*args, **kwargs),
             "Triton's JIT dispatch, arguments built once", into=out),
        path("ws_cooperative CompiledKernel[grid](*args)", compiled_call(W.kernel, args, kwargs, grid),
             "Triton's compiled-kernel call, arguments built once", into=out),
    ]
    return rows


def gemm_parts(n: int, calls: int, rounds: int) -> list[dict]:
    """The public ``matmul``'s host work taken apart (issue 24: a new output costs it 6.5 us against torch's 2.6):
    each piece alone in a loop of back-to-back calls, interleaved rounds, host us per call."""
    import torch
    from tlx_kernels.gemm import common as C
    from tlx_kernels.gemm import ws_cooperative as W
    from tlx_kernels.gemm.calls import call_key

    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    c = C.empty_out(n, n, a.dtype, a.device)
    W.matmul(a, b)  # tuned, planned
    plans = W._matmul.plans
    key = call_key(a, b, None, None)
    parts = {
        "torch.empty((n, n), dtype=, device=)": lambda: torch.empty((n, n), dtype=a.dtype, device=a.device),
        "a.new_empty((n, n))": lambda: a.new_empty((n, n)),
        "C.empty_out(n, n, dtype, device)": lambda: C.empty_out(n, n, a.dtype, a.device),
        "C.new_out(a, b) (what matmul allocates with)": lambda: C.new_out(a, b),
        "call_key(a, b, None, None)": lambda: call_key(a, b, None, None),
        "plans.get(key)": lambda: plans.get(key),
        "plans.launch(key, (a, b, c))": lambda: plans.launch(key, (a, b, c)),
        "matmul(a, b, out=c)": lambda: W.matmul(a, b, out=c),
        "matmul(a, b)": lambda: W.matmul(a, b),
    }
    times = interleave.rounds(parts, rounds, lambda fn: host_per_call(fn, calls)[0])
    torch.cuda.synchronize()
    return [dict(op="gemm parts", problem=f"{n}x{n}x{n} bf16", path=name, host_us=statistics.median(v),
                 host_us_rounds=v) for name, v in times.items()]


def attention_paths(causal: bool) -> list[Path]:
    import torch
    from tlx_kernels import attention as A

    B, H, S, D = ATTENTION
    g = torch.Generator(device="cuda").manual_seed(S + causal)
    q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16, generator=g) for _ in range(3))
    out, sdpa = torch.empty_like(q), torch.nn.functional.scaled_dot_product_attention
    path = path_maker("attention", f"B{B} H{H} S{S} D{D}{' causal' if causal else ''} bf16",
                      A.reference(q, k, v, causal))

    A.attention(q, k, v, causal)  # tune: the chosen kernel's own paths follow
    prepare, cfg = A._choose(q, k, v, causal, None)
    launch = prepare(q, k, v, causal, cfg, out=out)
    kernel, args, kwargs, grid = launch.kernel, launch.args, launch.kwargs, launch.grid
    return [
        path("sdpa(q, k, v)", lambda: sdpa(q, k, v, is_causal=causal), "torch's pick of backend, new output"),
        path("attention(q, k, v)", lambda: A.attention(q, k, v, causal), "public: tuned kernel, new output",
             A._attention.plans),
        path("attention(..., out=out)", lambda: A.attention(q, k, v, causal, out=out), "public", A._attention.plans,
             into=out),
        path("attention(..., graph=True)", lambda: A.attention(q, k, v, causal, out=out, graph=True),
             "public: CUDA-graph replay", into=out),
        path(f"{kernel.__name__} prepare().run()", lambda: prepare(q, k, v, causal, cfg, out=out).run(),
             "general path: checks, descriptors, kernel[grid]", into=out),
        path(f"{kernel.__name__} kernel[grid](*args)", lambda: kernel[grid](*args, **kwargs),
             "Triton's JIT dispatch, arguments built once", into=out),
    ]


def broadcast_paths() -> list[Path]:
    from tlx_kernels import broadcast as BC
    from tlx_kernels.broadcast import host as H

    s = next(x for x in BC.BENCH_SHAPES if x.name == "small")
    U, X, W, b = BC.make_inputs(s.B, s.C, s.DU, s.DX, s.N, bias=s.bias, seed=1)
    out = BC.empty_out(s.B, s.C, s.N, U.dtype, "cuda")
    path = path_maker("broadcast", f"B{s.B} C{s.C} Du{s.DU} Dx{s.DX} N{s.N} bf16", BC.reference(U, X, W, b, s.act))

    BC.broadcast_linear(U, X, W, b, s.act)  # tune
    cfg = H._config_for(U, X, W, b, s.act)
    args, kwargs, grid, _ = BC.prepare(U, X, W, b, s.act, cfg, out)
    return [
        path("decomposed (torch)", lambda: BC.decomposed(U, X, W, b, s.act), "two cuBLAS GEMMs + broadcast add"),
        path("materialized (torch)", lambda: BC.materialized(U, X, W, b, s.act), "repeat + cat + one cuBLAS GEMM"),
        path("broadcast_linear(U, X, W, b)", lambda: BC.broadcast_linear(U, X, W, b, s.act),
             "public: tuned config, new output", H._plans),
        path("broadcast_linear(..., graph=True)", lambda: BC.broadcast_linear(U, X, W, b, s.act, out=out, graph=True),
             "public: CUDA-graph replay", into=out),
        path("launch(U, X, W, b, cfg, out)", lambda: BC.launch(U, X, W, b, s.act, cfg, out),
             "general path: checks, descriptors, kernel[grid]", into=out),
        path("kernel[grid](*args)", lambda: BC.KERNEL[grid](*args, **kwargs),
             "Triton's JIT dispatch, arguments built once", into=out),
    ]


def checked(paths: list[Path]) -> tuple[list[Path], list[dict]]:
    """The paths whose output matches their reference (rel err < 2e-2), and an error row for each other one."""
    import torch
    from tlx_kernels.gemm.common import rel_err

    ok, failed = [], []
    for p in paths:
        try:
            if p.into is not None:
                p.into.fill_(float("nan"))
            p.run()
            torch.cuda.synchronize()
            err = rel_err(p.out(), p.ref)
            if not err < 2e-2:
                raise AssertionError(f"wrong result: max rel err {err:.3g}")
            ok.append(p)
        except Exception as e:  # a row with the error, the rest goes on
            failed.append(dict(op=p.op, problem=p.problem, path=p.name, note=p.note,
                               error=f"{type(e).__name__}: {str(e)[:300]}"))
    return ok, failed


def measure(paths: list[Path], calls: int, n_rounds: int) -> list[dict]:
    def time_one(p: Path) -> tuple[float, float]:
        before = p.plans.counts["cached"] if p.plans is not None else 0
        result = host_per_call(p.run, calls)
        if p.plans is not None:  # the launches of this path's calls that came from a plan
            p.counts["cached"] = p.counts.get("cached", 0) + p.plans.counts["cached"] - before
        return result

    runs = {f"{p.op}|{p.problem}|{p.name}": p for p in paths}
    samples = interleave.rounds(runs, n_rounds, time_one, lambda r: print(f"round {r + 1}/{n_rounds}", flush=True))
    rows = []
    for key, p in runs.items():
        hosts, walls = [h for h, _ in samples[key]], [w for _, w in samples[key]]
        row = dict(op=p.op, problem=p.problem, path=p.name, host_us=statistics.median(hosts),
                   wall_us=statistics.median(walls), host_us_rounds=hosts, wall_us_rounds=walls, note=p.note)
        if p.plans is not None:
            row["cached"] = f"{p.counts['cached']} of {n_rounds * (calls + 20)}"
        rows.append(row)
    return rows


def print_table(rows: list[dict]) -> None:
    for problem in dict.fromkeys(r["problem"] for r in rows):
        print(f"\n{problem}")
        base = None
        for r in (r for r in rows if r["problem"] == problem):
            if r.get("error"):
                print(f"  {r['path']:44} FAILED {r['error']}")
                continue
            base = base or r["host_us"]
            spread = f"[{min(r['host_us_rounds']):.1f}-{max(r['host_us_rounds']):.1f}]"
            cached = f"  cached {r['cached']}" if "cached" in r else ""
            print(f"  {r['path']:44} host {r['host_us']:7.1f} us {spread:>15}  wall {r['wall_us']:7.1f} us  "
                  f"{r['host_us'] / base:5.2f}x  {r['note']}{cached}", flush=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gemm", default="1024,2048", help="GEMM cube sizes")
    ap.add_argument("--ops", default="gemm,attention,broadcast")
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--parts", action="store_true", help="also the public matmul's host work, piece by piece "
                    "(rows with op 'gemm parts')")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)

    import torch
    import triton

    if not torch.cuda.is_available():
        print("needs a CUDA GPU")
        return 2
    t0 = time.perf_counter()
    ops = args.ops.split(",")
    rows: list[dict] = []
    makers: list[tuple[str, Callable[[], list[Path]]]] = []
    if "gemm" in ops:
        makers += [(f"gemm {n}^3", lambda n=int(n): gemm_paths(n)) for n in args.gemm.split(",")]
    if "attention" in ops:
        makers += [("attention", lambda: attention_paths(False)), ("attention causal", lambda: attention_paths(True))]
    if "broadcast" in ops:
        makers.append(("broadcast", broadcast_paths))
    for label, make in makers:
        try:
            ok, failed = checked(make())
        except Exception as e:  # the problem's setup failed (compile, tuning): one row says so
            rows.append(dict(op=label, problem=label, path="setup", error=f"{type(e).__name__}: {str(e)[:300]}"))
            continue
        rows += measure(ok, args.calls, args.rounds) + failed
    print_table(rows)
    if args.parts:
        for n in args.gemm.split(","):
            print(f"\ngemm parts {n}^3 (host us per call, each piece alone)")
            for r in gemm_parts(int(n), args.calls, args.rounds):
                print(f"  {r['path']:<44s} {r['host_us']:8.2f} us")
                rows.append(r)

    now = dt.datetime.now(dt.UTC)
    path = args.json or os.path.join(ROOT, "bench", "results", f"launch-overhead-{now:%Y-%m-%d}.json")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    doc = dict(date=now.isoformat(timespec="seconds"), device=torch.cuda.get_device_name(), torch=torch.__version__,
               triton=triton.__version__, python=platform.python_version(),
               command="python3 " + " ".join(["bench/launch_overhead.py"] + (argv or sys.argv[1:])),
               calls=args.calls, rounds=args.rounds, wall_s=round(time.perf_counter() - t0, 1),
               method="host us per call: loop time of back-to-back calls before the final synchronize; "
                      "median of interleaved rounds", rows=rows)
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"wrote {os.path.relpath(path, ROOT)} ({doc['wall_s']} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
