"""Search: many candidates (configs, variants) of one kernel as one job, compiled in parallel, checked, run in
isolated GPU workers and timed against a reference, on Ray (a local cluster by default, any cluster by address).

``workbench.search(kernel, space, *args, grid=..., reference=...)`` -> ``SearchResult``;
``workbench.autotune(tuned_kernel, *args, grid=...)`` finds an autotuner's best config this way and fixes it on
the autotuner, so later launches use it. ``%%tlx --search SPACE`` is the notebook's form.
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Callable, Mapping
from typing import Any

from workbench.search import result_cache
from workbench.search.engine import ClusterError, PipelineResult, Progress, SearchError
from workbench.search.result import SearchResult
from workbench.search.space import Candidate, SearchSpaceError, parse_space

__all__ = ["Candidate", "ClusterError", "Progress", "SearchError", "SearchResult", "SearchSpaceError", "autotune",
           "parse_space", "search"]

STRESS_STOP_AFTER = 3  # a stress run skips its other runs once this many hung or faulted


def _target(target: str | None) -> str:
    if target:
        return target
    from workbench.run.device import detect

    dev = detect()
    return dev.arch if dev.available and dev.arch else "sm_90"


def _cache_device(compile_only: bool, cluster: str | None) -> str | None:
    """The device a kept row must have been measured on: "compile-only" where nothing runs, the local GPU's name
    for a local cluster, None (nothing kept) for a cluster elsewhere, whose GPUs this process cannot name."""
    if compile_only:
        return "compile-only"
    if cluster or os.environ.get("RAY_ADDRESS"):
        return None
    from workbench.run.device import detect

    dev = detect()
    return dev.name or dev.kind if dev.available else "compile-only"


def _budgeted(problem: Any, todo: list[Candidate], gpus: int, budget_s: float | None, show: Any,
              device: str | None) -> PipelineResult:
    """``workbench.search.strategy.budgeted`` over the search's pipeline: each of its steps is one pipeline run
    (short timings: the problem with fewer rounds; its rows kept under that)."""
    import dataclasses

    from workbench.search.engine import run_pipeline
    from workbench.search.strategy import budgeted

    by_index = {c.index: c for c in todo}
    parts: list[PipelineResult] = []

    def measure(indices: list[int], rounds: int) -> dict[int, float | None]:
        step = dataclasses.replace(problem, rounds=rounds)
        cands = [by_index[i] for i in indices]
        res = run_pipeline(step, cands, gpus=gpus, budget_s=budget_s, progress=show)
        if device is not None:
            result_cache.store(step, cands, res.rows, device)
        parts.append(res)
        return {i: res.rows[i].get("ms") if res.rows[i].get("status") == "ok" else None for i in indices}

    plan = budgeted(todo, measure, rounds=problem.rounds)
    rows: dict[int, dict[str, Any]] = {i: {"index": i, "status": "skipped", "error": plan.untried, "transient": True}
                                       for i in by_index}
    binaries: dict[int, Any] = {}
    phases: dict[str, float] = {}
    for part in parts:  # in order: the leaders' full-round rows come last
        rows.update(part.rows)
        binaries.update(part.binaries)
        for k, v in part.phases.items():
            phases[k] = round(phases.get(k, 0.0) + v, 3)
    notes = [f"strategy='budgeted': {'; '.join(plan.steps)}; {len(plan.times)} of {len(todo)} configs measured"]
    return PipelineResult(rows, binaries, phases, next((p.gpu_info for p in parts if p.gpu_info), []),
                          notes + [n for p in parts for n in p.notes])


def _count(value: Any, named: Mapping[str, Any]) -> float | None:
    if value is None:
        return None
    return float(value(**named) if callable(value) else value)


def search(kernel: Any, space: Any = None, *args: Any, grid: Any = None, reference: Callable[..., Any] | None = None,
           flops: float | Callable[..., float] | None = None, bytes: float | Callable[..., float] | None = None,  # noqa: A002
           target: str | None = None, compile_only: bool = False, cluster: str | None = None,
           budget_s: float | None = None, outputs: list[str] | None = None, atol: float | None = None,
           rtol: float | None = None, rounds: int = 3, timeout_s: float | None = None,
           progress: bool | Callable[[Progress], None] = True, skip_on_error: bool = True, fresh: bool = False,
           strategy: str = "exhaustive", delays: tuple[int, float] | None = None,
           **constexprs: Any) -> SearchResult:
    """Compile, check, run and time every config of ``space`` for one launch of ``kernel``.

    - ``space``: a list of configs (dicts or ``triton.Config``), a dict of lists (their product), a string
      ``"BM=[64,128] BN=[128,256]"``, or None for a ``triton.autotune``-wrapped kernel (its configs, pruned as
      its autotuner would, with its pre_hooks).
    - ``args``/``constexprs``: the launch's arguments, as for ``kernel[grid](*args, **constexprs)``; GPU or CPU
      tensors (only their dtype, shape, strides and value statistics travel: workers draw fresh inputs).
    - ``grid``: a tuple, or a callable of the launch's named values and the config (as Triton's grids).
    - ``reference(*args)``: gets the positional arguments rebuilt on fresh data on each GPU and returns the
      expected output(s); compared with ``outputs`` (argument names; default: for each value the last tensor
      argument of its shape) with ``atol``/``rtol`` (default: by dtype); also the timing baseline (``ratio`` =
      reference time / candidate time, same rounds).
    - ``flops``/``bytes``: per launch (a number or a callable of the named arguments): TFLOP/s and TB/s columns.
    - ``target``: compile target (default: the local GPU's arch, else sm_90); ``compile_only`` (also without a
      GPU in the cluster): compile and check only. ``cluster``: a Ray address (default ``RAY_ADDRESS`` or a
      local cluster). ``budget_s``: stop starting work after this many seconds (the rest is ``skipped``).
    - ``rounds``: interleaved timing rounds per candidate; ``timeout_s``: a run's hang limit (default 5 s beyond
      4x its last time); ``skip_on_error``: candidates with an error finding are not run.
    - ``fresh``: compile, check and time every candidate again; by default a candidate this machine already
      compiled (compile-only) or timed on this GPU, with the same kernel, arguments' meta, reference and versions,
      gets its kept row (``cached``: when it was measured) and nothing of it runs (``workbench.search.result_cache``).
    - ``strategy``: "exhaustive" (every candidate) or "budgeted" for a space too large to try all: a sample and a
      pattern search around its leaders on short timings, then the leaders in full rounds; the rest are
      ``skipped`` with the reason, and ``info["notes"]`` says each step (``workbench.search.strategy``).
    - ``delays=(max_ns, share)``: a stress run (``workbench.search.stress``): candidate i is a build with sleeps
      before its synchronisation points, seed i + 1 (``workbench.compile.delays``); always measured afresh; once
      ``STRESS_STOP_AFTER`` runs hung or faulted the rest are skipped (the race showed; each more would cost the
      time limit and a fresh worker).
    """
    import time

    from workbench.search.engine import connect, run_pipeline
    from workbench.search.problem import prepare
    from workbench.search.progress import display_progress

    t0 = time.perf_counter()
    tgt = _target(target)
    problem, cands = prepare(kernel, space, args, constexprs, grid=grid, target=tgt, reference=reference,
                             outputs=outputs, atol=atol, rtol=rtol, rounds=rounds, timeout_s=timeout_s,
                             skip_on_error=skip_on_error)
    if delays is not None:
        fresh = True
        for c in cands:
            c.delay, c.config = (c.index + 1, int(delays[0]), float(delays[1])), {"seed": c.index + 1, **c.config}
    named = {n: v for n, v in zip(problem.arg_names, args)} | constexprs
    problem.flops, problem.bytes = _count(flops, named), _count(bytes, named)
    if not compile_only and grid is None:
        raise SearchError("grid= is needed to run the candidates", hint="give grid=(n,) or grid=lambda META: (...), "
                          "or compile_only=True to compile and check them only")
    prep_s = time.perf_counter() - t0
    # shown before Ray starts (seconds on a cold machine): the widget says so instead of nothing
    show = display_progress(len(cands), problem.name) if progress is True else (progress or None)
    if strategy not in ("exhaustive", "budgeted"):
        raise SearchSpaceError(f"strategy={strategy!r}: give 'exhaustive' or 'budgeted'")
    device = _cache_device(compile_only, cluster)
    from workbench.compile.tuners import base_jit

    problem.extras["kernel_key"] = base_jit(kernel).cache_key  # Triton's key: a cell run again finds its rows
    kept = {} if fresh or device is None else result_cache.load(problem, cands, device)
    todo = [c for c in cands if c.index not in kept]
    if todo:
        cluster_info = connect(cluster, on_wait=_waiting(show, len(cands)))
        gpus = 0 if compile_only else cluster_info["gpus"]
        if strategy == "budgeted" and gpus:
            result = _budgeted(problem, todo, gpus, budget_s, show, device)
        else:
            result = run_pipeline(problem, todo, gpus=gpus, budget_s=budget_s, progress=show,
                                  stop_after_hangs=STRESS_STOP_AFTER if delays is not None else None)
            if device is not None:  # what nothing ran is a compile-only row, whatever GPU this machine has
                result_cache.store(problem, todo, result.rows, device if gpus else "compile-only")
            if strategy == "budgeted":
                result.notes.append("strategy='budgeted' needs timings: with no GPU every candidate was compiled "
                                    "and checked")
    else:  # everything kept: no cluster, nothing runs
        cluster_info = {"address": "none (every row kept)", "nodes": 0, "cpus": 0, "gpus": 0, "node_names": []}
        gpus = 0 if device == "compile-only" else 1
        result = PipelineResult({}, {}, {"total_s": 0.0}, [], [])
    notes = [] if gpus or compile_only else ["no GPU in the cluster: compiled and statically checked only; nothing "
                                             "ran, so no output was checked against the reference"]
    if kept:
        where = "compile-only searches" if device == "compile-only" else f"searches on {device}"
        notes.append(f"{len(kept)} of {len(cands)} rows kept from earlier {where} (each with the date it was "
                     "measured; fresh=True, or --remeasure in a cell, measures them again)")
    rows = {**kept, **result.rows}
    _rates(rows, problem)
    info = {"date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"), "cluster": cluster_info,
            "gpus": result.gpu_info, "compile_only": not gpus,
            "phases": {"prepare_s": round(prep_s, 3), "connect_s": round(time.perf_counter() - t0 - prep_s
                                                                           - result.phases.get("total_s", 0), 3),
                       **result.phases, "wall_s": round(time.perf_counter() - t0, 3)},
            "utilisation": _utilisation(rows, result.phases, cluster_info, gpus),
            "notes": notes + result.notes, "rounds": rounds, "reference": reference is not None}
    if delays is not None:
        from workbench.search import stress_summary

        info["stress"] = stress_summary.summary(rows, cands)
        info["notes"].append(stress_summary.note(info["stress"]))
    out = SearchResult(problem.name, tgt, cands, rows, info, kernel_fn=base_jit(kernel), problem=problem)
    if callable(getattr(show, "done", None)):
        show.done(out)
    return out


def _rates(rows: dict[int, dict[str, Any]], problem: Any) -> None:
    for r in rows.values():
        ms = r.get("ms")
        if ms:
            r["tflops"] = problem.flops / ms / 1e9 if problem.flops else None
            r["tbs"] = problem.bytes / ms / 1e9 if problem.bytes else None


def _waiting(show: Callable[[Progress], None] | None, total: int) -> Callable[[float], None] | None:
    """What the progress display says while Ray's background start (``search.warm``) finishes."""
    if show is None:
        return None
    return lambda s: show(Progress(total=total, phase="starting", elapsed_s=s,
                                   message=f"waiting for the background start of Ray and the workers ({s:.0f} s)"))


def _utilisation(rows: dict[int, dict[str, Any]], phases: dict[str, float], cluster: dict[str, Any],
                 gpus: int) -> dict[str, Any]:
    """Busy fractions: compile processes over the compile phase and cores; GPU workers over the pipeline."""
    wall = phases.get("compile_wall_s") or 0.0
    busy = sum(r.get("compile_s") or 0.0 for r in rows.values())
    out: dict[str, Any] = {"compile_cpu_s": round(busy, 2),
                           "cpu_busy": round(busy / (wall * cluster["cpus"]), 3) if wall and cluster["cpus"] else None}
    if gpus:
        judge = sum(r.get("judge_s") or 0.0 for r in rows.values())
        span = phases.get("pipeline_s") or 0.0
        out.update(gpu_worker_s=round(judge, 2), gpu_busy=round(judge / (span * gpus), 3) if span else None)
    return out


def autotune(kernel: Any, *args: Any, grid: Any = None, **kw: Any) -> SearchResult:
    """The drop-in for Triton's autotuner: search a ``triton.autotune``-wrapped kernel's own configs (pruned and
    hooked as it would) with this launch's arguments, then fix the winner on the autotuner for this launch's
    key, as ``Autotuner.run`` does after benchmarking; later launches with that key use it without tuning."""
    from workbench.compile.triton_reach import autotuner_key
    from workbench.search.space import tuner_parts

    parts = tuner_parts(kernel)
    if parts is None:
        raise SearchSpaceError(f"{getattr(kernel, '__name__', kernel)!r} is not a triton.autotune-wrapped kernel",
                               hint="use workbench.search(kernel, space, ...) for a plain kernel")
    search_kw = {k: v for k, v in kw.items() if k in _SEARCH_OPTIONS}
    constexprs = {k: v for k, v in kw.items() if k not in _SEARCH_OPTIONS}
    result = search(kernel, None, *args, grid=grid, **search_kw, **constexprs)
    i = result.best_index
    if i is None:
        err = SearchError(f"no config of {result.kernel} ran and passed: {result.counts()}\n{_why_not(result)}",
                          hint="the exception's .result is the search (its .table: each config's status and error)")
        err.result = result
        raise err
    tuner = parts["tuner"]
    chosen = result.candidate(i).config
    config = next(c for c in tuner.configs if _same(c, chosen))
    tuner.cache[autotuner_key(tuner, args, constexprs)] = config
    tuner.best_config = config
    return result


def _why_not(result: SearchResult, most: int = 8) -> str:
    """Each config's status and error, a line each (the first ``most``)."""
    lines = []
    for i, r in list(result.rows.items())[:most]:
        cfg = " ".join(f"{k}={v}" for k, v in result.candidate(i).config.items())
        lines.append(f"  {cfg}: {r.get('status')}" + (f": {str(r['error'])[:300]}" if r.get("error") else ""))
    more = len(result.rows) - most
    return "\n".join(lines + ([f"  ... and {more} more"] if more > 0 else []))


_SEARCH_OPTIONS = frozenset({"reference", "flops", "bytes", "target", "compile_only", "cluster", "budget_s",
                             "outputs", "atol", "rtol", "rounds", "timeout_s", "progress", "skip_on_error"})


def _same(cfg: Any, shown: dict[str, Any]) -> bool:
    from workbench.search.space import config_dict

    return config_dict(cfg)[0] == shown
