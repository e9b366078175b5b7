"""workbench.search against Triton's own autotuner, and how the search scales with cores and nodes.

    python3 bench/search.py [--gpu] [--cpu] [--size 8192] [--json PATH]

GPU rows (an H100/H200 machine; about 5 minutes): Meta's ``hopper_gemm_ws`` tutorial (from the triton-utlx wheel,
unmodified) at SIZE^3 bf16 over its own configs as its ``early_config_prune`` keeps them for this shape. Each
measurement runs in a fresh process, so imports and worker starts are part of it: Triton's autotuner (the
tutorial's ``matmul``'s autotuned path: first call = tune + run) and ``workbench.search`` (compile on every core,
checks, isolated runs checked against cuBLAS on fresh inputs, interleaved timing), both with empty caches (cold)
and again on the caches the cold run filled (warm). The cold runs then tune a second shape (SIZE/2) in the same
process, as a notebook's second search would. A last cold search waits first for what ``%load_ext workbench``
starts in the background (Ray, the compile workers' imports, the GPU actor): a notebook's first search after that
start. The speed-ups are given for the process as a whole and for the call alone. Configs Triton's autotuner
cannot survive (a compile error it does not catch ends its run) are measured on the subset that compiles, for both.
Then every config that ran is timed exhaustively in one interleaved run, and the search's winner is compared with
the best found there.
CPU and GPU use are sampled every 0.5 s (psutil, nvidia-smi) while each runs.

CPU rows (no GPU needed): a compile-only search of 32 configs of the library's WS cooperative GEMM with 1, 2 and
all cores (the speed-up with cores), and a two-node Ray cluster made with ``ray start`` on this machine
(``testbed/search_nodes.py``): which node compiled what. Writes JSON (default bench/results/search-<date>.json).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "kernels"), str(ROOT / "bench"), str(ROOT / "testbed")]


# ------------------------------------------------------------------------------------------------ the problems
def meta_gemm(size: int):
    """Meta's tutorial kernel (its Autotuner), launch arguments for SIZE^3 bf16 (fp16 out, as its matmul), grid."""
    import torch
    from tlx_kernels import meta_tutorials as mt
    from triton.tools.tensor_descriptor import TensorDescriptor

    mod = mt.load("hopper_gemm_ws")
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    M = N = K = size
    a = torch.randn(M, K, dtype=torch.bfloat16, device=dev)
    b = torch.randn(K, N, dtype=torch.bfloat16, device=dev)
    c = torch.empty(M, N, dtype=torch.float16, device=dev)
    descs = [TensorDescriptor(t, list(t.shape), list(t.stride()), [1, 1]) for t in (a, b, c)]
    sms = torch.cuda.get_device_properties(dev).multi_processor_count if dev == "cuda" else 132

    def grid(meta):
        return (min(sms, -(-M // meta["BM"]) * -(-N // meta["BN"])),)

    return mod, (*descs, M, N, K), grid, (a, b, c)


def pruned_configs(mod, args) -> list:
    tuner = mod.matmul_kernel_tlx_ws
    named = dict(zip(tuner.arg_names, args))
    return list(tuner.early_config_prune(tuner.configs, named)) if tuner.early_config_prune else list(tuner.configs)


def gemm_reference(a_desc, b_desc, c_desc, M, N, K):
    import torch

    return torch.matmul(a_desc.base, b_desc.base)


# ------------------------------------------------------------------------------------------------ children
def child_triton(size: int, subset: str, then: int | None = None) -> dict:
    """Triton's autotuner over the pruned configs (``subset``: "all" or "ctas1", the configs with NUM_CTAS=1);
    ``then``: a second shape tuned afterwards in the same process (its compiled kernels are in memory)."""
    import torch
    import triton

    t0 = time.perf_counter()
    mod, args, grid, (a, b, c) = meta_gemm(size)
    triton.set_allocator(mod.alloc_fn)
    cfgs = pruned_configs(mod, args)
    if subset == "ctas1":
        cfgs = [x for x in cfgs if x.kwargs.get("NUM_CTAS", 1) == 1]
    tuner = triton.autotune(configs=cfgs, key=["M", "N", "K"])(mod.matmul_kernel_tlx_ws.fn)
    sms = torch.cuda.get_device_properties("cuda").multi_processor_count
    t1 = time.perf_counter()
    out = {"configs": len(cfgs), "setup_s": t1 - t0}
    try:
        tuner[grid](*args, NUM_SMS=sms)
        torch.cuda.synchronize()
        out.update(status="ok", best=dict(tuner.best_config.kwargs), timings_ms={
            str(dict(k.kwargs)): v[0] for k, v in getattr(tuner, "configs_timings", {}).items()})
    except Exception as e:
        out.update(status="error", error=f"{type(e).__name__}: {str(e)[:600]}")
    out["tune_s"] = time.perf_counter() - t1
    out["wall_s"] = time.perf_counter() - t0
    if then and out["status"] == "ok":
        _, args2, grid2, _ = meta_gemm(then)
        t2 = time.perf_counter()
        tuner[grid2](*args2, NUM_SMS=sms)
        torch.cuda.synchronize()
        out["then"] = {"size": then, "tune_s": time.perf_counter() - t2, "best": dict(tuner.best_config.kwargs)}
    return out


def child_ours(size: int, subset: str, then: int | None = None, loaded: bool = False) -> dict:
    """``workbench.search`` over the same configs; ``then``: a second shape searched afterwards in the same process;
    ``loaded``: what ``%load_ext workbench`` starts in the background (Ray, importing compile workers, the GPU
    actor) is started first and waited for, as in a notebook whose first search comes after that start."""
    import torch

    import workbench

    t0 = time.perf_counter()
    warm = None
    if loaded:
        from workbench.search import warm as background

        background.start()
        while not background.status()["done"]:
            time.sleep(0.1)
        warm = background.status() | {"waited_s": time.perf_counter() - t0}

    def search(n: int, mod, args, grid):  # Meta's GEMM at n^3 on inputs built beforehand (timed apart)
        return workbench.search(mod.matmul_kernel_tlx_ws, _space(mod, args, subset), *args, grid=grid,
                                reference=gemm_reference, flops=2.0 * n ** 3, atol=0.5, rtol=2e-2, progress=False)

    mod, args, grid, _ = meta_gemm(size)
    t1 = time.perf_counter()
    r = search(size, mod, args, grid)
    t2 = time.perf_counter()
    if torch.cuda.is_available():  # a compile-only search on a machine without one (the harness's check)
        torch.cuda.synchronize()
    rows = r.to_dict()["rows"]
    out = {"configs": len(rows), "setup_s": t1 - t0, "search_s": t2 - t1, "wall_s": t2 - t0, "counts": r.counts(),
           "info": r.info, "best": r.best_index, "best_config": r.best_config, "background_start": warm,
           "rows": [{k: row.get(k) for k in ("index", "config", "status", "ms", "tflops", "ratio", "ref_ms",
                                             "registers", "spills", "shared_kib", "compile_s", "check_s", "time_s",
                                             "judge_s", "node", "confirmed", "error")} for row in rows]}
    if then:
        _, args2, grid2, _ = meta_gemm(then)
        t3 = time.perf_counter()
        r2 = search(then, mod, args2, grid2)
        out["then"] = {"size": then, "search_s": time.perf_counter() - t3, "counts": r2.counts(),
                       "best_config": r2.best_config, "phases": r2.info.get("phases")}
    return out


def _space(mod, args, subset: str):
    """None: the autotuner's own configs as its pruning keeps them; "ctas1": those with NUM_CTAS=1."""
    if subset != "ctas1":
        return None
    return [x for x in pruned_configs(mod, args) if x.kwargs.get("NUM_CTAS", 1) == 1]


def child_exhaustive(size: int, subset: str, indices: list[int]) -> dict:
    """The configs ``indices`` (candidates of the same space) timed in one interleaved run, as JIT launches with
    their pre_hook: what exhaustive timing finds, to judge the search's winner by."""
    import triton

    from workbench.measure.interleave import rounds
    from workbench.measure.timing import bench
    from workbench.search.problem import prepare

    mod, args, grid, _ = meta_gemm(size)
    triton.set_allocator(mod.alloc_fn)
    tuner = mod.matmul_kernel_tlx_ws
    _, cands = prepare(tuner, _space(mod, args, subset), args, {}, grid=grid, target="sm_90", reference=None,
                       outputs=None)
    fn = tuner.fn
    runs = {}
    for c in cands:
        if c.index not in indices:
            continue
        nargs = dict(zip(fn.arg_names, args)) | c.options

        def call(c=c, nargs=nargs):
            c.pre_hook(nargs)
            fn[grid(nargs)](*args, **c.options)

        call()
        runs[c.index] = call
    times = rounds(runs, 5, lambda f: bench(f, warmup_ms=10, rep_ms=40).median_ms)
    return {"ms": {str(i): statistics.median(ts) for i, ts in times.items()}, "rounds": 5}


def child_scaling(cpus: int, n: int, warm: bool = False) -> dict:
    import torch
    import triton
    from tlx_kernels.gemm import ws_cooperative as ws
    from triton.tools.tensor_descriptor import TensorDescriptor

    import workbench
    from workbench.search.engine import connect

    def blocks(nargs):
        nargs["a_desc"].block_shape = [nargs["BM"] // 2, nargs["BK"]]
        nargs["b_desc"].block_shape = [nargs["BK"], nargs["BN"]]
        nargs["c_desc"].block_shape = [nargs["BM"] // 2, nargs["BN"] // nargs.get("EPI_SPLIT", 1)]

    space = [triton.Config({k: v for k, v in c.items() if k != "num_warps"}, num_warps=c.get("num_warps", 4),
                           pre_hook=blocks) for c in ws.candidates()[:n]]
    M = N = K = 4096
    a, b, c = (torch.empty(M, K, dtype=torch.bfloat16, device="meta") for _ in range(3))
    descs = [TensorDescriptor(t, [M, K], [K, 1], [64, 64]) for t in (a, b, c)]
    t0 = time.perf_counter()
    info = connect(num_cpus=cpus)
    t1 = time.perf_counter()
    warm_s = None
    if warm:  # every worker imports what a compile task needs first: what is left is the compiles' own scaling
        import ray

        task = ray.remote(num_cpus=1)(_warm_worker)
        ray.get([task.remote() for _ in range(info["cpus"])])
        warm_s = time.perf_counter() - t1
        t1 = time.perf_counter()
    r = workbench.search(ws.kernel, space, *descs, M, N, K, compile_only=True, progress=False, A_T=False, B_T=False)
    return {"cpus": info["cpus"], "configs": len(space), "connect_s": t1 - t0, "warm_s": warm_s,
            "search_s": time.perf_counter() - t1, "counts": r.counts(),
            "compile_cpu_s": r.info["utilisation"]["compile_cpu_s"], "cpu_busy": r.info["utilisation"]["cpu_busy"]}


def _warm_worker() -> int:
    import time as _t

    import triton.language.extra.tlx  # noqa: F401

    import workbench.search.compile_job  # noqa: F401

    _t.sleep(0.5)  # hold the core so that each warm-up lands on its own worker
    return os.getpid()



# ------------------------------------------------------------------------------------------------ the parent
class Sampler:
    """CPU (psutil, whole machine) and GPU (nvidia-smi utilization.gpu) use every 0.5 s while a child runs."""

    def __init__(self) -> None:
        self.cpu: list[float] = []
        self.gpu: list[float] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            import psutil
        except ImportError:
            psutil = None
        smi = shutil.which("nvidia-smi")
        while not self._stop.wait(0.5):
            if psutil is not None:
                self.cpu.append(psutil.cpu_percent(interval=None))
            if smi:
                with contextlib.suppress(Exception):
                    out = subprocess.run([smi, "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits"],
                                         capture_output=True, text=True, timeout=5).stdout
                    self.gpu.append(float(out.split()[0]))

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(5)

    def summary(self) -> dict:
        f = lambda xs: {"mean": round(statistics.mean(xs), 1), "max": round(max(xs), 1), "n": len(xs)} if xs else None  # noqa: E731
        return {"cpu_percent": f(self.cpu), "gpu_percent": f(self.gpu)}


def run_child(args: list[str], env: dict, timeout: float) -> dict:
    with Sampler() as s:
        t0 = time.perf_counter()
        p = subprocess.run([sys.executable, __file__, "--child", *args], capture_output=True, text=True,
                           timeout=timeout, env=env, cwd=str(ROOT))
        wall = time.perf_counter() - t0
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("CHILD ")]
    out = json.loads(lines[-1][6:]) if lines else {"status": "crashed", "rc": p.returncode,
                                                   "stderr": p.stderr[-3000:]}
    out["process_wall_s"] = wall
    out["use"] = s.summary()
    return out


def caches(tag: str) -> dict:
    d = Path(tempfile.mkdtemp(prefix=f"search-bench-{tag}-"))
    return {**os.environ, "TRITON_CACHE_DIR": str(d / "triton"), "TLX_WORKBENCH_CACHE_DIR": str(d / "wb"),
            "PYTHONUNBUFFERED": "1", "RAY_ADDRESS": ""}


def gpu_rows(size: int) -> dict:
    out: dict = {}
    t_env, o_env = caches("triton"), caches("ours")
    out["triton_all_cold"] = run_child(["triton", str(size), "all"], caches("triton-all"), 900)
    print("triton (all pruned configs), cold:", _short(out["triton_all_cold"]), flush=True)
    subset = "all" if out["triton_all_cold"].get("status") == "ok" else "ctas1"
    out["subset"] = subset
    then = f"then={size // 2}"  # a second shape in the same process, after the first
    out["triton_cold"] = run_child(["triton", str(size), subset, then], t_env, 900)
    print("triton cold:", _short(out["triton_cold"]), flush=True)
    out["triton_warm"] = run_child(["triton", str(size), subset], t_env, 600)
    print("triton warm:", _short(out["triton_warm"]), flush=True)
    out["ours_cold"] = run_child(["ours", str(size), subset, then], o_env, 900)
    print("ours cold:", _short(out["ours_cold"]), flush=True)
    out["ours_warm"] = run_child(["ours", str(size), subset], o_env, 900)
    print("ours warm:", _short(out["ours_warm"]), flush=True)
    warm = out["ours_warm"]
    ok = [r["index"] for r in warm.get("rows", []) if r["status"] == "ok"]
    if ok and warm.get("best") is not None:
        ex = run_child(["exhaustive", str(size), subset, ",".join(map(str, ok))], o_env, 600)
        ms = {int(k): v for k, v in ex.get("ms", {}).items()}
        if ms:
            best = min(ms, key=ms.get)
            ex.update(best=best, best_ms=ms[best], search_best=warm["best"], search_best_ms=ms.get(warm["best"]),
                      search_best_vs_exhaustive=ms.get(warm["best"], float("nan")) / ms[best])
        out["exhaustive"] = ex
        print("exhaustive:", json.dumps({k: ex.get(k) for k in ("best", "best_ms", "search_best",
                                                                 "search_best_vs_exhaustive")}), flush=True)
    out["ours_all_configs_cold"] = run_child(["ours", str(size), "all"], caches("ours-all"), 900)
    print("ours (all pruned configs), cold:", _short(out["ours_all_configs_cold"]), flush=True)
    loaded_env = caches("ours-loaded") | {"TLX_WORKBENCH_WARM": "1"}
    out["ours_cold_loaded"] = run_child(["ours", str(size), subset, "loaded"], loaded_env, 900)
    print("ours cold, after %load_ext's background start:", _short(out["ours_cold_loaded"]),
          (out["ours_cold_loaded"].get("background_start") or {}).get("phases"), flush=True)
    out.update(speedups(out))
    return out


def speedups(out: dict) -> dict:
    """Triton's time over ours in each state: a fresh process as a whole (imports, Ray's start and exit included),
    and the call alone (the search; Triton's first call, which tunes) cold, warm, cold after %load_ext's background
    start, and a second shape in the same process."""
    def over(a, b):
        return a / b if a and b else None

    tc, oc, tw, ow = (out.get(k) or {} for k in ("triton_cold", "ours_cold", "triton_warm", "ours_warm"))
    return {"speedup_cold": over(tc.get("process_wall_s"), oc.get("process_wall_s")),
            "speedup_warm": over(tw.get("process_wall_s"), ow.get("process_wall_s")),
            "speedup_cold_call": over(tc.get("tune_s"), oc.get("search_s")),
            "speedup_warm_call": over(tw.get("tune_s"), ow.get("search_s")),
            "speedup_cold_after_load_ext": over(tc.get("tune_s"), (out.get("ours_cold_loaded") or {}).get("search_s")),
            "speedup_second_shape": over((tc.get("then") or {}).get("tune_s"), (oc.get("then") or {}).get("search_s")),
            "winner_vs_exhaustive_best": (out.get("exhaustive") or {}).get("search_best_vs_exhaustive")}


def _short(d: dict) -> str:
    keys = ("status", "configs", "process_wall_s", "counts", "best_config", "error")
    return json.dumps({k: d.get(k) for k in keys if d.get(k) is not None}, default=str)[:600]


def cpu_rows(n: int) -> dict:
    from search_nodes import two_node_search

    total = os.cpu_count() or 1
    out = {"scaling": []}
    for warm in (False, True):
        rows = []
        for cpus in sorted({1, 2, total}):
            row = run_child(["scaling", str(cpus), str(n), *(["warm"] if warm else [])], caches(f"scale{cpus}"), 1800)
            row["warm_workers"] = warm
            rows.append(row)
            print(f"compile-only search of {n} configs on {cpus} core(s){' (warm workers)' if warm else ''}:",
                  _short(row), row.get("search_s"), flush=True)
        base = rows[0].get("search_s")
        for row in rows:
            if base and row.get("search_s"):
                row["speedup"] = base / row["search_s"]
                row["efficiency"] = row["speedup"] / row["cpus"]
        out["scaling"] += rows
    with tempfile.TemporaryDirectory() as tmp:
        rows = two_node_search(Path(tmp), n_configs=8)
    out["two_nodes"] = {"rows": rows, "nodes": sorted({r["node"] for r in rows})}
    print("two nodes:", json.dumps(out["two_nodes"]["nodes"]), flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gpu", action="store_true", help="the GPU rows (Meta's GEMM vs Triton's autotuner)")
    ap.add_argument("--cpu", action="store_true", help="the CPU rows (scaling with cores, two nodes)")
    ap.add_argument("--size", type=int, default=8192)
    ap.add_argument("--configs", type=int, default=32, help="configs in the CPU scaling rows")
    ap.add_argument("--json", default=None)
    ap.add_argument("--child", nargs="+", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        kind, *rest = a.child
        then = next((int(x[5:]) for x in rest if x.startswith("then=")), None)
        if kind == "triton":
            res = child_triton(int(rest[0]), rest[1], then)
        elif kind == "ours":
            res = child_ours(int(rest[0]), rest[1], then, loaded="loaded" in rest)
        elif kind == "exhaustive":
            res = child_exhaustive(int(rest[0]), rest[1], [int(x) for x in rest[2].split(",")])
        else:
            res = child_scaling(int(rest[0]), int(rest[1]), "warm" in rest)
        print("CHILD " + json.dumps(res, default=str), flush=True)
        return
    import torch

    from workbench.measure._env import environment

    result = {"date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "env": environment(),
              "command": " ".join(["python3", "bench/search.py", *sys.argv[1:]]), "tree": os.environ.get("WB_TREE"),
              "cpu_count": os.cpu_count()}
    if a.gpu or (not a.cpu and torch.cuda.is_available()):
        result["gpu"] = gpu_rows(a.size)
        print("speed-ups (Triton's time / ours):", json.dumps({k: v for k, v in result["gpu"].items()
                                                               if k.startswith(("speedup", "winner"))}), flush=True)
    if a.cpu or not torch.cuda.is_available():
        result["cpu"] = cpu_rows(a.configs)
    # the GPU's model in the name (H100 or H200: the device tool lends either), else cpu
    tag = (torch.cuda.get_device_name().split()[1].lower() if torch.cuda.is_available() else "cpu")
    path = a.json or str(ROOT / "bench" / "results" / f"search-{tag}-{dt.date.today().isoformat()}.json")
    Path(path).write_text(json.dumps(result, indent=1, default=str))
    print("wrote", path)


if __name__ == "__main__":
    main()
