"""GPU worker of bench/attention.py, and the parent's handle on it.

The worker (``python bench/attention_worker.py``) reads one JSON job per stdin line and answers with
``BEGIN {"item": ...}`` before each item, ``ROW {...}`` after it and ``DONE {}`` after the job. Jobs (``op``):
``warm`` (SDPA for ``seconds``), ``sdpa`` (items: backends), ``public`` (items: our variants' public
``attention(q, k, v, causal)``, or ``attention`` for the library's top-level one: tuned on the first call over
the CONFIGS less ``skip`` and with ``extra``, then called into NaN-poisoned outputs twice, the general launch and
the cached plan), ``ours`` (items: [variant, config], prepared launches: the preflight and the sweep),
``meta`` (items: Meta tutorial names, their own ``attention`` wrappers), ``rounds`` (``groups`` of those, timed in
interleaved rounds). Each item: run (ours into a NaN-poisoned output), check against the fp32 reference on the
first and last head (``rel_err``; a wrong result is an error, except for SDPA, whose error is only recorded), then
time it if the job has ``rep_ms`` (``time_call``: ``timing``, default back-to-back calls; prepared
launches: kernel time). A failure is recorded in the item's row; an error that leaves the CUDA context broken
ends the worker, and :class:`Child` (the parent side) starts a new one for the remaining items, as it does after a
hang.
"""

from __future__ import annotations

import contextlib
import json
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from workbench.measure import interleave
from workbench.measure.timing import time_call

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "kernels"))

META = {  # name -> tutorial file in the triton-utlx wheel (tlx/tutorials/)
    "meta_ws": "hopper_fa_ws.py",
    "meta_ws_pipelined": "hopper_fa_ws_pipelined.py",
    "meta_pingpong": "hopper_fa_ws_pipelined_pingpong.py",
    "meta_pingpong_persistent": "hopper_fa_ws_pipelined_pingpong_persistent.py",
}
BACKENDS = ("FLASH_ATTENTION", "CUDNN_ATTENTION", "EFFICIENT_ATTENTION")


def cname(cfg: dict | None) -> str:
    from tlx_kernels.attention.common import config_name

    return config_name(cfg) if cfg else "-"


_inputs: dict = {}
_meta_mods: dict = {}


def emit(tag: str, obj: Any) -> None:
    print(f"{tag} {json.dumps(obj, default=str)}", flush=True)


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
    if name not in _meta_mods:
        import importlib.util

        import tlx

        path = Path(tlx.__file__).parent / "tutorials" / META[name]
        spec = importlib.util.spec_from_file_location(f"meta_{name}", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        _meta_mods[name] = mod
    return _meta_mods[name]


def run_rounds(job: dict) -> None:
    """Time every item of ``job["groups"]`` (``{"sdpa"|"ours"|"meta": items}``, already checked) in
    ``job["rounds"]`` interleaved rounds, the order rotated each round, so clock drift during the run moves every
    item alike; one row per item with its times per round (``ms``: their median)."""
    import statistics

    fns = {}
    for op, items in job["groups"].items():
        for name, make in job_items(dict(job, op=op, items=items)):
            fns[name] = make()[1]
    timing = job.get("timing", "calls")
    times = interleave.rounds(fns, job["rounds"], lambda fn: time_call(fn, job["rep_ms"], timing),
                              lambda r: emit("BEGIN", {"item": f"round {r + 1}"}))
    for n, ts in times.items():
        emit("ROW", {"item": n, "ms": statistics.median(ts), "times": ts, "error": None})


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
        emit("BEGIN", {"item": name})
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
            except Exception:
                emit("ROW", row)
                emit("FATAL", {"item": name})
                sys.exit(3)
        emit("ROW", row)


def worker_main() -> int:
    for line in sys.stdin:
        job = json.loads(line)
        if job["op"] == "exit":
            return 0
        try:
            run_job(job)
        except Exception as e:  # job-level failure (inputs, import): report and go on
            emit("ROW", {"item": "-", "ms": None, "error": f"{type(e).__name__}: {e}"[:300]})
        emit("DONE", {})
    return 0


# ------------------------------------------------------------------------------------------------
# parent: workers with timeouts
# ------------------------------------------------------------------------------------------------


class Child:
    """A worker process; ``run(job, items)`` yields rows, kills the worker on a hang (``timeout_s`` without
    output) or sees it crash, and then reports the running item as failed and goes on in a fresh worker."""

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s, self.p, self.q = timeout_s, None, None

    def _start(self) -> None:
        self.p = subprocess.Popen([sys.executable, str(Path(__file__).resolve())], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, bufsize=1, cwd=ROOT)
        self.q = queue.Queue()
        threading.Thread(target=lambda p=self.p, q=self.q: [q.put(ln) for ln in p.stdout] + [q.put(None)],
                         daemon=True).start()

    def kill(self) -> None:
        if self.p is not None:
            self.p.kill()
            self.p.wait()
        self.p = None

    def run(self, job: dict) -> list[dict]:
        items, rows = list(job.get("items", [])), []
        while True:
            if self.p is None or self.p.poll() is not None:
                self._start()
            self.p.stdin.write(json.dumps(dict(job, items=items)) + "\n")
            self.p.stdin.flush()
            current, before = None, len(rows)
            while True:
                try:
                    line = self.q.get(timeout=self.timeout_s)
                except queue.Empty:
                    line, why = None, f"timeout: no progress in {self.timeout_s:.0f} s (hang?)"
                else:
                    why = "worker died (crash or broken CUDA context)"
                if line is None:
                    self.kill()
                    if current is not None and current not in {r["item"] for r in rows}:
                        rows.append({"item": current, "ms": None, "error": why})
                    break
                tag, _, body = line.partition(" ")
                if tag == "BEGIN":
                    current = json.loads(body)["item"]
                elif tag == "ROW":
                    rows.append(json.loads(body))
                elif tag == "DONE":
                    return rows
            finished = {r["item"] for r in rows}
            items = [it for it in items if item_name(job["op"], it) not in finished]
            if len(rows) == before:  # died before any item: give up on this job
                return rows + [{"item": item_name(job["op"], it), "ms": None, "error": why} for it in items]
            if not items or job["op"] == "warm":
                return rows

    def close(self) -> None:
        if self.p is not None and self.p.poll() is None:
            self.p.stdin.write('{"op": "exit"}\n')
            self.p.stdin.flush()
            self.p.wait(timeout=30)


def item_name(op: str, item) -> str:
    return f"{item[0]}:{cname(item[1])}" if op == "ours" else item


# ------------------------------------------------------------------------------------------------

if __name__ == "__main__":
    sys.exit(worker_main())
