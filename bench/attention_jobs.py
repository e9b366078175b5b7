"""The GPU steps of bench/attention.py, called in workbench.run's isolated worker (``workbench.run.jobs``): a kernel
that hangs or faults costs only the call it was in; bench/attention.py records it and goes on in a fresh worker.

``run_job(job)`` reports ``begin`` before each item and a ``row`` after it (``workbench.run.jobs.report``). Jobs
(``op``): ``warm`` (SDPA for ``seconds``), ``sdpa`` (items: backends), ``public`` (items: our variants' public
``attention(q, k, v, causal)``, or ``attention`` for the library's top-level one: tuned on the first call over
the CONFIGS less ``skip`` and with ``extra``, then called into NaN-poisoned outputs twice, the general launch and
the cached plan), ``ours`` (items: [variant, config], prepared launches: the preflight and the sweep),
``meta`` (items: Meta tutorial names, their own ``attention`` wrappers, from ``tlx_kernels.meta_tutorials``),
``rounds`` (``groups`` of those, timed in interleaved rounds). Each item: run (ours into a NaN-poisoned output),
check against the fp32 reference on the first and last head (``rel_err``; a wrong result is an error, except for
SDPA, whose error is only recorded), then time it if the job has ``rep_ms`` (``workbench.measure.timing.time_call``:
``timing``, default back-to-back calls; prepared launches: kernel time). A failure is recorded in the item's row;
an error that leaves the CUDA context broken ends the job after its row, and the worker process is replaced.
"""

from __future__ import annotations

import contextlib
import statistics
import time

from workbench.measure.interleave import timed_rounds
from workbench.measure.timing import time_call
from workbench.run.jobs import report

META = {  # name -> Meta's tutorial in the triton-utlx wheel (tlx/tutorials/)
    "meta_ws": "hopper_fa_ws",
    "meta_ws_pipelined": "hopper_fa_ws_pipelined",
    "meta_pingpong": "hopper_fa_ws_pipelined_pingpong",
    "meta_pingpong_persistent": "hopper_fa_ws_pipelined_pingpong_persistent",
}
BACKENDS = ("FLASH_ATTENTION", "CUDNN_ATTENTION", "EFFICIENT_ATTENTION")


def cname(cfg: dict | None) -> str:
    from tlx_kernels.attention.common import config_name

    return config_name(cfg) if cfg else "-"


_inputs: dict = {}


def inputs(shape, dtype: str, seed: int = 0):
    import torch

    key = (tuple(shape), dtype, seed)
    if key not in _inputs:
        _inputs.clear()  # one problem at a time keeps memory bounded
        B, H, S, D = shape[:4]
        g = torch.Generator(device="cuda").manual_seed(seed)
        dt_ = torch.bfloat16 if dtype == "bf16" else torch.float16
        _inputs[key] = tuple(torch.randn(B, H, S, D, device="cuda", dtype=dt_, generator=g) for _ in range(3))
    return _inputs[key]


def error(out, q, k, v, causal: bool) -> float:
    """rel err against the fp32 reference on the first and the last head (the whole output must be finite)."""
    import torch
    from tlx_kernels.attention import common as C

    if not torch.isfinite(out).all():
        return float("inf")
    B, H = q.shape[:2]
    errs = []
    for b, h in {(0, 0), (B - 1, H - 1)}:
        sl = (slice(b, b + 1), slice(h, h + 1))
        errs.append(C.rel_err(out[sl], C.reference(q[sl], k[sl], v[sl], causal)))
    return max(errs)


def job_items(job: dict):
    """(item name, callable giving (output, launch fn)) for each item of a job."""
    import torch

    shape, causal = job["shape"], bool(job["shape"][4])
    q, k, v = inputs(shape, job["dtype"])
    if job["op"] == "sdpa":
        from torch.nn.attention import SDPBackend, sdpa_kernel

        for b in job["items"]:
            def run(b=b):
                with sdpa_kernel(getattr(SDPBackend, b)):
                    return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
            yield b, lambda run=run: (run(), run)
    elif job["op"] == "ours":
        from tlx_kernels import attention as A

        for variant, cfg in job["items"]:
            def make(variant=variant, cfg=cfg):
                launch = A.MODULES[variant].prepare(q, k, v, causal, cfg, out=torch.full_like(q, float("nan")))
                launch.run()
                return launch.out, launch.run
            yield f"{variant}:{cname(cfg)}", make
    elif job["op"] == "public":
        for name in job["items"]:
            yield name, lambda name=name: public_call(name, q, k, v, causal, job.get("skip"), job.get("extra"))
    elif job["op"] == "meta":
        for name in job["items"]:
            def make(name=name):
                mod = meta_module(name)
                scale = 1.0 / shape[3] ** 0.5
                return mod.attention(q, k, v, scale), lambda: mod.attention(q, k, v, scale)
            yield name, make


@contextlib.contextmanager
def tuning_space(skip: dict[str, list[str]], extra: dict[str, dict]):
    """While the block runs, every variant's CONFIGS lacks the configs named in ``skip`` (they failed the
    preflight) and holds its ``extra`` config (``--from-sweep``): what a first public call tunes over."""
    from tlx_kernels import attention as A

    saved = {v: list(m.CONFIGS) for v, m in A.MODULES.items()}
    for v, m in A.MODULES.items():
        m.CONFIGS[:] = [c for c in m.CONFIGS if cname(c) not in set(skip.get(v, ()))]
        if extra.get(v) and cname(extra[v]) not in {cname(c) for c in m.CONFIGS}:
            m.CONFIGS.append(dict(extra[v]))
    try:
        yield
    finally:
        for v, m in A.MODULES.items():
            m.CONFIGS[:] = saved[v]


def public_call(name: str, q, k, v, causal: bool, skip: dict | None = None, extra: dict | None = None):
    """(output, the call) of our public ``attention`` (``name``: a variant, or "attention" for the top-level one):
    the first call tunes (over :func:`tuning_space`); the output checked is that of the second call into a
    NaN-poisoned buffer, which launches from the plan the first such call made (a fresh output may reuse a tuning
    output, which holds the answer)."""
    import torch
    from tlx_kernels import attention as A

    fn = A.attention if name == "attention" else A.MODULES[name].attention
    with tuning_space(skip or {}, extra or {}):
        fn(q, k, v, causal)
    for _ in range(2):
        out = fn(q, k, v, causal, out=torch.full_like(q, float("nan")))
    return out, lambda: fn(q, k, v, causal)


def tuned_config(name: str, q, k, v, causal: bool) -> str:
    """The config the public call ``name`` tuned to for this problem."""
    from tlx_kernels import attention as A
    from tlx_kernels.attention import common as C

    key = C.problem(q, k, v, causal, None).key()
    if name == "attention":
        variant, cfg = A._tuner.cache[key]
        return f"{variant}:{cname(cfg)}"
    return cname(A.MODULES[name]._tuner.cache.get(key))


def meta_module(name: str):
    from tlx_kernels import meta_tutorials

    return meta_tutorials.load(META[name])


def run_rounds(job: dict) -> None:
    """Time every item of ``job["groups"]`` (``{"sdpa"|"ours"|"meta": items}``, already checked) in
    ``job["rounds"]`` interleaved rounds, the order rotated each round, so clock drift during the run moves every
    item alike; one row per item with its times per round (``ms``: their median)."""
    fns = {}
    for op, items in job["groups"].items():
        for name, make in job_items(dict(job, op=op, items=items)):
            fns[name] = make()[1]
    times = timed_rounds(fns, job["rounds"], job["rep_ms"], job.get("timing", "calls"),
                         lambda r: report("begin", f"round {r + 1}"))
    for n, ts in times.items():
        report("row", {"item": n, "ms": statistics.median(ts), "times": ts, "error": None})


def run_job(job: dict) -> None:
    import torch

    if job["op"] == "rounds":
        run_rounds(job)
        return
    if job["op"] == "warm":
        q, k, v = inputs((4, 32, 4096, 128), "bf16", 99)
        t0 = time.perf_counter()
        while time.perf_counter() - t0 < job["seconds"]:
            torch.nn.functional.scaled_dot_product_attention(q, k, v)
            torch.cuda.synchronize()
        return
    q, k, v = inputs(job["shape"], job["dtype"])
    tol = 2e-2 if job["dtype"] == "bf16" else 1e-2
    for name, make in job_items(job):
        report("begin", name)
        row = {"item": name, "ms": None, "error": None, "rel_err": None}
        try:
            out, fn = make()
            torch.cuda.synchronize()
            row["rel_err"] = err = error(out, q, k, v, bool(job["shape"][4]))
            if not err < tol and job["op"] != "sdpa":
                raise AssertionError(f"wrong result: rel err {err:.3g} >= {tol}")
            if job["op"] == "public":
                row["config"] = tuned_config(name, q, k, v, bool(job["shape"][4]))
            if job.get("rep_ms"):  # prepared launches ("ours": the sweep) by their kernel time
                row["ms"] = time_call(fn, job["rep_ms"], "flush" if job["op"] == "ours" else job.get("timing", "calls"))
        except Exception as e:  # recorded, not fatal; a broken CUDA context ends the worker
            row["error"] = f"{type(e).__name__}: {str(e).strip().splitlines()[0][:300] if str(e).strip() else ''}"
            try:
                torch.cuda.synchronize()
            except Exception as lost:
                report("row", row)
                raise lost from e
        report("row", row)


def item_name(op: str, item) -> str:
    return f"{item[0]}:{cname(item[1])}" if op == "ours" else item
