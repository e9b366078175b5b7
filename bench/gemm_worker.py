"""GPU worker of bench/gemm.py: reads JSON jobs on stdin, answers one ``RESULT {...}`` line per job on stdout.

A child process, so that a kernel that hangs or faults (a poisoned CUDA context) costs only the job it
was running: the parent kills it and starts another. Before each item it prints ``BEGIN {...}`` so the
parent knows which one was running when a job timed out. Jobs (``op``):

- ``cublas``: time ``torch.matmul(a, b)`` (after ``warmup_s`` seconds of it, to bring the GPU to its working clock);
- ``public``: for each library kernel, its public ``matmul(a, b)`` as a user calls it (tuned on this first call
  over the job's configs, a new output, later calls launched from the cached plan), checked against the fp32
  product (``rel_err`` < ``tol``; a wrong or failing kernel is recorded, not fatal), with the config it tuned to;
- ``configs``: for each config of a library kernel (the preflight and ``--sweep``): launch into a NaN-poisoned
  output, compare with torch, then time the bare launch (``kernel[grid](*args)``, descriptors built once);
- ``meta``: the same for the configs of one of Meta's Hopper GEMM tutorials from the installed wheel,
  imported unmodified and launched as their own wrappers launch them, with our operands and output;
- ``rounds``: cuBLAS, the library's public calls and Meta's best configs, timed in interleaved rounds;
- ``exit``.

Timings: ``time_call`` (``timing``: "calls", back to back as a user's loop; "flush", L2 flushed). Every
job names its shape and dtype; operands are made once per (shape, dtype, seed) and kept.
"""

from __future__ import annotations

import importlib.util
import json
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from workbench.measure import interleave
from workbench.measure.timing import time_call

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "kernels"))

META_FILES = {
    "meta_ws": ("hopper_gemm_ws.py", "matmul_kernel_tlx_ws"),
    "meta_coop": ("hopper-persistent-gemm-ws-cooperative.py", "matmul_kernel_tlx_ws_persistent"),
    "meta_pingpong": ("hopper-persistent-gemm-ws-pingpong.py", "matmul_kernel_tlx_ws_persistent"),
    "meta_pipelined": ("hopper_gemm_pipelined.py", "matmul_kernel_pipelined_hopper"),
}
_operands: dict[tuple, Any] = {}
_meta_modules: dict[str, Any] = {}


def emit(tag: str, obj: Any) -> None:
    print(f"{tag} {json.dumps(obj, default=str)}", flush=True)


def operands(M: int, N: int, K: int, dtype: str, seed: int = 0):
    """(a, b, ref) on the GPU, made once per key; ref = torch.matmul(a, b)."""
    import torch

    key = (M, N, K, dtype, seed)
    if key not in _operands:
        if len(_operands) >= 4:  # keep memory bounded across many shapes
            _operands.pop(next(iter(_operands)))
        g = torch.Generator(device="cuda").manual_seed(seed)
        dt = getattr(torch, {"bf16": "bfloat16", "fp16": "float16"}[dtype])
        a = torch.randn(M, K, device="cuda", dtype=dt, generator=g)
        b = torch.randn(K, N, device="cuda", dtype=dt, generator=g)
        _operands[key] = (a, b, torch.matmul(a, b))
    return _operands[key]


def check(run, ref, out, tol: float) -> float:
    """Launch ``run()`` into ``out`` (NaN-poisoned first) and return the error against ``ref``; raise if wrong."""
    import torch
    from tlx_kernels.gemm.common import rel_err

    out.fill_(float("nan"))
    run()
    torch.cuda.synchronize()
    err = rel_err(out, ref)
    if not err < tol:
        raise AssertionError(f"wrong result: max rel err {err:.3g} >= {tol:g} against torch.matmul")
    return err


def job_cublas(job: dict) -> dict:
    import torch

    a, b, _ref = operands(*job["shape"], job["dtype"])
    t_end = time.perf_counter() + job.get("warmup_s", 0.0)
    while time.perf_counter() < t_end:
        for _i in range(8):
            torch.matmul(a, b)
        torch.cuda.synchronize()
    return {"ms": time_call(lambda: torch.matmul(a, b), job["rep_ms"], job.get("timing", "calls"))}


def public_call(name: str, a, b):
    """A user's call of library kernel ``name``: ``matmul(a, b)`` (a new output each call)."""
    from tlx_kernels import gemm as G

    mod = G.MODULES[name]
    return lambda: mod.matmul(a, b)


def context_lost(e: Exception) -> bool:
    """Whether an error left the CUDA context unusable (then this worker must stop)."""
    import torch

    if "illegal" in str(e).lower() or "launch failure" in str(e).lower():
        return True
    try:
        torch.cuda.synchronize()
    except Exception:
        return True
    return False


def job_public(job: dict) -> dict:
    """Each library kernel's public ``matmul(a, b)``: tuned over ``job["configs"][kernel]`` (the configs that passed
    the preflight) on this first call, checked against the fp32 product; the config it tuned to."""
    import torch
    from tlx_kernels import gemm as G
    from tlx_kernels.gemm.common import config_name, empty_out, problem_key, rel_err

    a, b, _ref = operands(*job["shape"], job["dtype"])
    ref32 = a.float() @ b.float()
    results = []
    for kernel, configs in job["configs"].items():
        emit("BEGIN", {"config": kernel})
        row: dict[str, Any] = {"kernel": kernel, "config": None, "cfg": None, "rel_err": None, "error": None}
        t0 = time.perf_counter()
        mod = G.MODULES[kernel]
        try:
            if not configs:
                raise RuntimeError("no config passed the preflight")
            mod._matmul.configs = [dict(c) for c in configs]
            errs = [rel_err(public_call(kernel, a, b)(), ref32)]  # tunes (into outputs it frees: then poisoned)
            for _ in range(2):  # the general launch, then the plan, into NaN-poisoned outputs: every tile written
                errs.append(rel_err(mod.matmul(a, b, out=empty_out(*ref32.shape, a.dtype, "cuda", float("nan"))),
                                    ref32))
            torch.cuda.synchronize()
            row["rel_err"] = err = max(errs)
            if not err < job["tol"]:
                raise AssertionError(f"wrong result: max rel err {err:.3g} >= {job['tol']:g} against the fp32 product")
            cfg = mod._tuner.cache.get(problem_key(a, b), configs[0])
            row.update(config=config_name(cfg), cfg=cfg, tune=mod._tuner.timings.get(problem_key(a, b)))
        except Exception as e:  # recorded, not fatal
            row["error"] = f"{type(e).__name__}: {str(e)[:1500]}"
            if context_lost(e):
                row["error"] += " (CUDA context lost: this worker stops)"
                emit("ROW", row)
                return {"results": results + [row], "context_lost": True}
        row["seconds"] = round(time.perf_counter() - t0, 2)
        results.append(row)
        emit("ROW", row)
    return {"results": results}


def library_launcher(name: str, cfg: dict, a, b, out):
    """A no-argument bare launch of library kernel ``name`` with ``cfg`` (descriptors built once)."""
    from tlx_kernels import gemm as G
    from tlx_kernels.gemm import triton_dot

    mod = G.MODULES[name]
    if mod is triton_dot:
        triton_dot._ensure_allocator()
        kernel, *prepared = triton_dot.prepare(a, b, cfg, out)
    else:
        kernel, prepared = mod.kernel, mod.prepare(a, b, cfg, out)
    args, kwargs, grid, _c = prepared
    return lambda: kernel[grid](*args, **kwargs)


def run_configs(job: dict, items: list[tuple[str, Any, dict]], launcher) -> dict:
    """Check and time each ``(name, payload, record)`` item with ``launcher(payload, a, b, out)`` (a no-argument
    launch); ``record`` (JSON) describes the config in the result."""
    from tlx_kernels.gemm.common import empty_out

    a, b, ref = operands(*job["shape"], job["dtype"])
    M, N = ref.shape
    results = []
    for name, payload, record in items:
        emit("BEGIN", {"config": name})
        row: dict[str, Any] = {"config": name, "cfg": record, "ms": None, "rel_err": None, "error": None}
        t0 = time.perf_counter()
        try:
            out = empty_out(M, N, a.dtype, "cuda")
            run = launcher(payload, a, b, out)
            row["rel_err"] = check(run, ref, out, job["tol"])
            if job.get("time", True):
                row["ms"] = time_call(run, job["rep_ms"], "flush")  # a config's kernel time
        except Exception as e:  # recorded, not fatal
            row["error"] = f"{type(e).__name__}: {str(e)[:1500]}"
            if context_lost(e):
                row["error"] += " (CUDA context lost: this worker stops)"
                results.append(row)
                emit("ROW", row)
                return {"results": results, "context_lost": True}
        row["seconds"] = round(time.perf_counter() - t0, 2)
        results.append(row)
        emit("ROW", row)
    return {"results": results}


def meta_module(key: str):
    """One of Meta's Hopper GEMM tutorials from the installed wheel (tlx/tutorials), imported unmodified."""
    if key not in _meta_modules:
        spec = importlib.util.find_spec("tlx")
        if spec is None or not spec.submodule_search_locations:
            raise ImportError("package tlx (triton-utlx) not installed")
        path = Path(list(spec.submodule_search_locations)[0]) / "tutorials" / META_FILES[key][0]
        mspec = importlib.util.spec_from_file_location(f"tlx_tutorial_{key}", path)
        mod = importlib.util.module_from_spec(mspec)
        mspec.loader.exec_module(mod)
        _meta_modules[key] = mod
    return _meta_modules[key]


def meta_configs(key: str, M: int, N: int, K: int, limit: int) -> list:
    """Their autotune configs that uTLX can build (one CTA per cluster), pruned as their kernel prunes them,
    without 256x256 tiles (256 accumulator registers per thread), subtiled epilogues first."""
    mod = meta_module(key)
    kern = getattr(mod, META_FILES[key][1])
    cfgs = [c for c in kern.configs if c.kwargs.get("NUM_CTAS", 1) == 1]
    prune = getattr(mod, "preprocess_configs", None)
    if prune is not None:
        cfgs = prune(cfgs, {"M": M, "N": N, "K": K})
    cfgs = [c for c in cfgs if (c.kwargs.get("BM"), c.kwargs.get("BN")) != (256, 256)]
    # the whole-tile epilogue of hopper_gemm_ws with a 4-stage ring needs 262 KB of shared memory: last
    tiles = {(128, 256): 0, (256, 128): 1}
    cfgs.sort(key=lambda c: (not c.kwargs.get("EPILOGUE_SUBTILE", True),
                             tiles.get((c.kwargs.get("BM"), c.kwargs.get("BN")), 2), -c.kwargs.get("NUM_STAGES", 0)))
    return cfgs[:limit]


def meta_config_name(cfg) -> str:
    """How a Meta tutorial config is named in results (and found again by ``job_rounds``)."""
    return "_".join(f"{k}{v}" for k, v in cfg.kwargs.items())


def meta_launcher(key: str, cfg, a, b, out):
    """Launch Meta's kernel with one of its configs as its own wrapper does (``kernel.fn[grid]`` after the
    config's pre_hook), on our operands and output (so the output dtype is ours)."""
    import torch
    import triton
    from triton.tools.tensor_descriptor import TensorDescriptor

    mod = meta_module(key)
    kern = getattr(mod, META_FILES[key][1])
    M, K = a.shape
    N = b.shape[1]
    kw = cfg.all_kwargs()
    if key == "meta_pipelined":
        grid = (triton.cdiv(M, kw["BLOCK_SIZE_M"]) * triton.cdiv(N, kw["BLOCK_SIZE_N"]),)
        strides = (a.stride(0), a.stride(1), b.stride(0), b.stride(1), out.stride(0), out.stride(1))
        return lambda: kern.fn[grid](a, b, out, M, N, K, *strides, **kw)
    sms = torch.cuda.get_device_properties(a.device).multi_processor_count
    descs = [TensorDescriptor(t, list(t.shape), list(t.stride()), [1, 1]) for t in (a, b, out)]
    nargs = dict(zip(("a_desc", "b_desc", "c_desc"), descs), **kw)
    if cfg.pre_hook is not None:
        cfg.pre_hook(nargs)
    kw = {k: v for k, v in kw.items() if k != "NUM_SMS"}
    grid = (min(sms, triton.cdiv(M, kw["BM"]) * triton.cdiv(N, kw["BN"])),)
    return lambda: kern.fn[grid](*descs, M, N, K, NUM_SMS=sms, **kw)


def job_meta(job: dict) -> dict:
    import torch
    import triton

    M, N, K = job["shape"]
    cfgs = meta_configs(job["kernel"], M, N, K, job.get("limit", 8))
    items = []
    for c in cfgs:
        record = dict(c.kwargs, num_warps=c.num_warps, num_stages=c.num_stages)
        items.append((meta_config_name(c), c, record))
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
    return run_configs(job, items, lambda cfg, a, b, out: meta_launcher(job["kernel"], cfg, a, b, out))


def job_rounds(job: dict) -> dict:
    """Time ``job["items"]`` in interleaved rounds (each round times every item once, the order rotated from
    round to round), so a clock that drifts during the run (the H200 slows as it heats) moves every item alike;
    returns each item's times per round. Items: ``{"label", "kind": "cublas"|"public"|"meta", "kernel", "cfg"}``
    (public: the library kernel's ``matmul(a, b)``; meta: the config's name as ``job_meta`` records it). Each is
    checked against ``torch.matmul`` first."""
    import torch
    import triton
    from tlx_kernels.gemm.common import empty_out, rel_err

    a, b, ref = operands(*job["shape"], job["dtype"])
    M, N, K = job["shape"]
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
    runs = {}
    for it in job["items"]:
        if it["kind"] == "meta":
            out = empty_out(M, N, a.dtype, "cuda")
            named = {meta_config_name(c): c for c in meta_configs(it["kernel"], M, N, K, job.get("limit", 8))}
            runs[it["label"]] = meta_launcher(it["kernel"], named[it["cfg"]], a, b, out)
            check(runs[it["label"]], ref, out, job["tol"])
            continue
        runs[it["label"]] = (lambda: torch.matmul(a, b)) if it["kind"] == "cublas" else public_call(it["kernel"], a, b)
        err = rel_err(runs[it["label"]](), ref)
        if not err < job["tol"]:
            raise AssertionError(f"{it['label']}: wrong result: max rel err {err:.3g} against torch.matmul")
    timing = job.get("timing", "calls")
    times = interleave.rounds(runs, job["rounds"], lambda run: time_call(run, job["rep_ms"], timing),
                              lambda r: emit("BEGIN", {"config": f"round {r + 1}"}))
    return {"times": times}


def job_info() -> dict:
    import torch
    import triton

    props = torch.cuda.get_device_properties(0)
    return {"device": props.name, "sms": props.multi_processor_count, "torch": torch.__version__,
            "triton": triton.__version__, "python": sys.version.split()[0]}


def handle(job: dict) -> dict:
    op = job["op"]
    if op == "info":
        return job_info()
    if op == "cublas":
        return job_cublas(job)
    if op == "configs":
        from tlx_kernels.gemm.common import config_name

        items = [(config_name(cfg), cfg, cfg) for cfg in job["configs"]]
        return run_configs(job, items, lambda cfg, a, b, out: library_launcher(job["kernel"], cfg, a, b, out))
    if op == "public":
        return job_public(job)
    if op == "meta":
        return job_meta(job)
    if op == "rounds":
        return job_rounds(job)
    raise ValueError(f"unknown op {op!r}")


class WorkerProcess:
    """The parent's handle on one worker: ``run(job)`` returns ``(result, rows, failure)``.

    ``rows`` are the per-config rows that came back; ``failure`` is None, or ``(config, reason)`` when the
    worker hung (no line for ``timeout_s``; it is killed) or died while running ``config``. After a failure
    the worker is gone; make a new one."""

    def __init__(self, timeout_s: float = 180.0) -> None:
        import queue
        import subprocess
        import threading

        self.timeout_s = timeout_s
        self.proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve())], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=sys.stderr, text=True, bufsize=1)
        self.lines: queue.Queue = queue.Queue()

        def pump(out=self.proc.stdout, q=self.lines):
            for line in out:
                q.put(line)
            q.put(None)

        threading.Thread(target=pump, daemon=True).start()

    def run(self, job: dict) -> tuple[dict | None, list[dict], tuple[str | None, str] | None]:
        import queue

        rows: list[dict] = []
        current = None
        try:
            self.proc.stdin.write(json.dumps(job) + "\n")
            self.proc.stdin.flush()
        except OSError as e:
            return None, rows, (current, f"worker gone: {e}")
        while True:
            try:
                line = self.lines.get(timeout=self.timeout_s)
            except queue.Empty:
                self.kill()
                return None, rows, (current, f"hung: no progress for {self.timeout_s:.0f} s (worker killed)")
            if line is None:
                code = self.proc.wait()
                return None, rows, (current, f"worker died (exit {code})")
            tag, _, payload = line.partition(" ")
            if tag == "BEGIN":
                current = json.loads(payload)["config"]
            elif tag == "ROW":
                rows.append(json.loads(payload))
            elif tag == "RESULT":
                res = json.loads(payload)
                if res.get("context_lost"):
                    self.proc.wait()
                    return res, rows, (current, "CUDA context lost")
                return res, rows, None

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.write(json.dumps({"op": "exit"}) + "\n")
                self.proc.stdin.flush()
                self.proc.wait(timeout=30)
            except Exception:
                self.kill()


def main() -> int:
    import torch

    if not torch.cuda.is_available():
        emit("RESULT", {"error": "no CUDA GPU in the worker"})
        return 2
    for line in sys.stdin:
        job = json.loads(line)
        if job.get("op") == "exit":
            return 0
        t0 = time.perf_counter()
        try:
            res = handle(job)
        except Exception as e:
            res = {"error": f"{type(e).__name__}: {str(e)[:1500]}", "traceback": traceback.format_exc()[-3000:]}
        res["job_seconds"] = round(time.perf_counter() - t0, 2)
        emit("RESULT", res)
        if res.get("context_lost"):
            return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())

