"""The worker's side of a family benchmark (``workbench.measure.family``): ``handle(job)`` runs one job in
workbench.run's isolated worker (``workbench.run.jobs``). Before each item it reports ``begin`` and after it a
``row``, so the caller knows which item was running when a call hung or its process died.

Jobs (``op``; each names ``family`` as ``"module:attribute"``, its ``shape`` and ``dtype``):

- ``info``: the device and versions;
- ``warm``: ``seconds`` of a baseline's calls (the GPU reaches its working clock);
- ``configs``: each config of one of our kernels as a prepared launch into a NaN-poisoned output, checked against
  the reference, then (``time``) timed with ``timing``;
- ``calls``: each item, ``["ours", kernel, configs]`` (the public call as a user makes it, tuned over ``configs``
  on its first call, None: over its own space; the next two calls, into a NaN-poisoned output, checked) or
  ``["baseline", name, None]`` (its candidates checked and timed, the fastest kept; a baseline with none at this
  shape reports ``absent``);
- ``rounds``: the items that passed, built again, checked once more and timed in interleaved rounds.

Inputs and the reference are made once per (family, shape, dtype) and kept while the worker lives (four at most).
An error that loses the CUDA context ends the job (the worker's synchronize then finds it lost and the process is
replaced).
"""

from __future__ import annotations

import importlib
import sys
import time
from collections.abc import Callable
from typing import Any

from workbench.measure.interleave import timed_rounds
from workbench.measure.timing import synchronize, time_call
from workbench.run.jobs import report
from workbench.run.worker import is_fatal

_made: dict[tuple, tuple[Any, Any]] = {}


def family_of(ref: str) -> Any:
    """The family object ``"module:attribute"`` names."""
    module, _, attr = ref.partition(":")
    return getattr(importlib.import_module(module), attr)


def _device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def made(fam: Any, job: dict) -> tuple[Any, Any]:
    """(inputs, reference) of the job's shape and dtype."""
    key = (fam.ref, tuple(job["shape"]), job["dtype"])
    if key not in _made:
        if len(_made) >= 4:  # memory stays bounded over many shapes
            _made.pop(next(iter(_made)))
        inputs = fam.inputs(tuple(job["shape"]), job["dtype"], _device())
        _made[key] = (inputs, fam.reference(inputs))
    return _made[key]


def checked(fam: Any, run: Callable[[], Any], ref: Any, dtype: str, out: Any = None) -> float:
    """``run()``'s error against ``ref`` (its answer, or ``out`` NaN-poisoned before it ran); raises if wrong."""
    if out is not None:
        out.fill_(float("nan"))
    got = run()
    synchronize()
    err = fam.error(out if out is not None else got, ref)
    tol = fam.tolerance(dtype)
    if not err < tol:  # NaN included
        raise AssertionError(f"wrong result: error {err:.3g} >= {tol:g} against the reference")
    return float(err)


def context_lost(e: Exception) -> bool:
    """Whether an error left the CUDA context unusable (then this worker must stop): a fault's words
    (``worker.is_fatal``), or a synchronize that fails after it."""
    if is_fatal(e):
        return True
    try:
        synchronize()
    except Exception:
        return True
    return False


def _items(job: dict, key: str, one: Callable[[Any, dict], None], name: Callable[[Any], str]) -> dict:
    """``one(item, row)`` per item of ``job[key]``, each reported; a failing item is its row's error."""
    rows = []
    for item in job[key]:
        report("begin", name(item))
        row: dict[str, Any] = {"error": None}
        t0 = time.perf_counter()
        try:
            one(item, row)
        except Exception as e:  # recorded, not fatal
            row["error"] = f"{type(e).__name__}: {str(e)[:1500]}"
            if context_lost(e):
                row["error"] += " (CUDA context lost: this worker stops)"
                rows.append(row)
                report("row", row)
                return {"results": rows, "context_lost": True}
        row["seconds"] = round(time.perf_counter() - t0, 2)
        rows.append(row)
        report("row", row)
    return {"results": rows}


def job_configs(fam: Any, job: dict) -> dict:
    inputs, ref = made(fam, job)

    def one(cfg: dict, row: dict) -> None:
        row.update(config=fam.config_name(cfg), cfg=cfg, ms=None, error_value=None)
        run, out = fam.launch(job["kernel"], cfg, inputs)
        row["error_value"] = checked(fam, run, ref, job["dtype"], out)
        if job.get("time", True):
            row["ms"] = time_call(run, job["rep_ms"], job["timing"])

    return _items(job, "configs", one, fam.config_name)


def fastest_candidate(fam: Any, cands: dict[str, Callable[[], Any]], ref: Any,
                      job: dict) -> tuple[str, dict, float]:
    """The fastest of a baseline's candidates that pass the check, {name: ms or error} of each, and the fastest's
    error against the reference."""
    seen: dict[str, Any] = {}
    errors: dict[str, float] = {}
    for name, run in cands.items():
        try:
            errors[name] = checked(fam, run, ref, job["dtype"])
            seen[name] = time_call(run, job["rep_ms"], job["timing"]) if len(cands) > 1 else 0.0
        except Exception as e:
            if context_lost(e):
                raise
            seen[name] = f"{type(e).__name__}: {str(e)[:300]}"
    ok = {k: v for k, v in seen.items() if isinstance(v, float)}
    if not ok:
        raise RuntimeError("no candidate passed: " + "; ".join(f"{k}: {v}" for k, v in seen.items()))
    best = min(ok, key=ok.__getitem__)
    return best, seen, errors[best]


def _call(fam: Any, kind: str, name: str, cfgs: list[dict] | None, config: str | None, inputs: Any,
          limit: int) -> Callable[[], Any]:
    """A no-argument call of an item as the rounds time it (ours: a new output each call, as a user's)."""
    if kind in ("ours", "library"):
        return fam.call(name, inputs, cfgs)
    cands = fam.baseline(name, inputs, limit)
    return cands[config] if config in cands else next(iter(cands.values()))


def job_calls(fam: Any, job: dict) -> dict:
    inputs, ref = made(fam, job)

    def one(item: list, row: dict) -> None:
        kind, name, cfgs = item
        row.update(kind=kind, name=name, config=None, error_value=None)
        if kind == "ours":
            if cfgs == []:
                raise RuntimeError("no config passed the preflight")
            fn = fam.call(name, inputs, cfgs)
            first = fn()  # tunes (into outputs it frees, which may hold the answer: not the one checked)
            synchronize()
            out = first.new_empty(first.shape)
            errs = [checked(fam, lambda: fn(out=out), ref, job["dtype"], out) for _ in range(2)]  # general, plan
            row["error_value"] = max(errs)
            cfg = fam.tuned(name, inputs)
            row.update(config=fam.config_name(cfg) if cfg else None, cfg=cfg)
            return
        cands = fam.baseline(name, inputs, job.get("limit", 8))
        if not cands:
            row["absent"] = True
            return
        best, seen, err = fastest_candidate(fam, cands, ref, job)
        row.update(config=best, candidates=seen, error_value=err)

    return _items(job, "items", one, lambda it: f"{it[0]}:{it[1]}")


def job_rounds(fam: Any, job: dict) -> dict:
    """Each item timed once per round, the order rotated from round to round (``interleave``)."""
    inputs, ref = made(fam, job)
    runs = {}
    for it in job["items"]:
        report("begin", it["name"])
        runs[it["name"]] = run = _call(fam, it["kind"], it["name"], it.get("cfgs"), it.get("config"), inputs,
                                       job.get("limit", 8))
        checked(fam, run, ref, job["dtype"])
    times = timed_rounds(runs, job["rounds"], job["rep_ms"], job["timing"],
                         lambda r: report("begin", f"round {r + 1}"))
    return {"times": times}


def job_warm(fam: Any, job: dict) -> dict:
    inputs, _ = made(fam, job)
    run = _call(fam, "baseline", job["name"], None, None, inputs, 1)
    end = time.perf_counter() + job["seconds"]
    calls = 0
    while time.perf_counter() < end:
        run()
        calls += 1
        if calls % 8 == 0:
            synchronize()
    synchronize()
    return {"calls": calls}


def job_info() -> dict:
    import torch
    import triton

    info = {"torch": torch.__version__, "triton": triton.__version__, "python": sys.version.split()[0]}
    if not torch.cuda.is_available():
        return dict(info, device="cpu", sms=None)
    props = torch.cuda.get_device_properties(0)
    return dict(info, device=props.name, sms=props.multi_processor_count)


JOBS = {"configs": job_configs, "calls": job_calls, "rounds": job_rounds, "warm": job_warm}


def handle(job: dict) -> dict:
    if job["op"] == "info":
        return job_info()
    if job["op"] not in JOBS:
        raise ValueError(f"unknown op {job['op']!r}; one of info, {', '.join(JOBS)}")
    return JOBS[job["op"]](family_of(job["family"]), job)

