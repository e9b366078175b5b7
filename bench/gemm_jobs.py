"""The GPU steps of bench/gemm.py, called in workbench.run's isolated worker (``workbench.run.jobs``): a kernel that
hangs or faults (a poisoned CUDA context) costs only the call it was in; bench/gemm.py records it and goes on in a
fresh worker. ``handle(job)`` runs one job; before each item it reports ``begin`` and after it a ``row``
(``workbench.run.jobs.report``), so the caller knows which one was running when a call failed. Jobs (``op``):

- ``info``: the device and versions;
- ``cublas``: time ``torch.matmul(a, b)`` (after ``warmup_s`` seconds of it, to bring the GPU to its working clock);
- ``public``: for each library kernel, its public ``matmul(a, b)`` as a user calls it (tuned on this first call
  over the job's configs, a new output, later calls launched from the cached plan), checked against the fp32
  product (``rel_err`` < ``tol``; a wrong or failing kernel is recorded, not fatal), with the config it tuned to;
- ``configs``: for each config of a library kernel (the preflight and ``--sweep``): launch into a NaN-poisoned
  output, compare with torch, then time the bare launch (``kernel[grid](*args)``, descriptors built once);
- ``meta``: the same for the configs of one of Meta's Hopper GEMM tutorials from the installed wheel
  (``tlx_kernels.meta_tutorials.load``), imported unmodified and launched as their own wrappers launch them, with
  our operands and output;
- ``rounds``: cuBLAS, the library's public calls and Meta's best configs, timed in interleaved rounds.

Timings: ``workbench.measure.timing.time_call`` (``timing``: "calls", back to back as a user's loop; "flush", L2
flushed). Every job names its shape and dtype; operands are made once per (shape, dtype, seed) and kept while the
worker lives. An error that loses the CUDA context ends the item's row with it and stops the job (the worker's
synchronize then finds the context lost and the process is replaced).
"""

from __future__ import annotations

import sys
import time
from typing import Any

from workbench.measure.interleave import timed_rounds
from workbench.measure.timing import time_call
from workbench.run.jobs import report

META_FILES = {  # our name -> (Meta's tutorial in the wheel, its kernel)
    "meta_ws": ("hopper_gemm_ws", "matmul_kernel_tlx_ws"),
    "meta_coop": ("hopper-persistent-gemm-ws-cooperative", "matmul_kernel_tlx_ws_persistent"),
    "meta_pingpong": ("hopper-persistent-gemm-ws-pingpong", "matmul_kernel_tlx_ws_persistent"),
    "meta_pipelined": ("hopper_gemm_pipelined", "matmul_kernel_pipelined_hopper"),
}
_operands: dict[tuple, Any] = {}


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
    """Each library kernel's public ``matmul(a, b)`` (``job["kernels"]``: [kernel, configs] pairs): tuned over its
    configs (those that passed the preflight) on this first call, checked against the fp32 product; the config it
    tuned to."""
    import torch
    from tlx_kernels import gemm as G
    from tlx_kernels.gemm.common import config_name, empty_out, problem_key, rel_err

    a, b, _ref = operands(*job["shape"], job["dtype"])
    ref32 = a.float() @ b.float()
    results = []
    for kernel, configs in job["kernels"]:
        report("begin", kernel)
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
                report("row", row)
                return {"results": results + [row], "context_lost": True}
        row["seconds"] = round(time.perf_counter() - t0, 2)
        results.append(row)
        report("row", row)
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
        report("begin", name)
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
                report("row", row)
                return {"results": results, "context_lost": True}
        row["seconds"] = round(time.perf_counter() - t0, 2)
        results.append(row)
        report("row", row)
    return {"results": results}


def meta_module(key: str):
    """One of Meta's Hopper GEMM tutorials from the installed wheel (tlx/tutorials), imported unmodified."""
    from tlx_kernels import meta_tutorials

    return meta_tutorials.load(META_FILES[key][0])


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
    times = timed_rounds(runs, job["rounds"], job["rep_ms"], job.get("timing", "calls"),
                         lambda r: report("begin", f"round {r + 1}"))
    return {"times": times}


def job_info() -> dict:
    import torch
    import triton

    if not torch.cuda.is_available():
        raise RuntimeError("no CUDA GPU in the worker")
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
