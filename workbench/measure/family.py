"""Kernel families and the one benchmark runner: what a family gives, how its kernels are checked and timed.

A family (the library's GEMMs, its attention variants, a test's CPU operators) is a plain object, written beside
the kernels (it imports nothing of the workbench), that gives the calls, configs, reference, tolerance and shapes
(:class:`Family`). ``bench/`` scripts are thin: they parse options, pick a family and call :func:`bench` or
:func:`sweep` here; every GPU step runs in workbench.run's isolated worker (``workbench.run.jobs``,
``workbench.measure.family_jobs``), so a kernel that hangs or faults is its row's error and the run goes on in a
fresh worker.

:func:`bench`, as a user meets the kernels: a preflight checks every config our public calls may tune over at the
family's ``preflight`` shapes (NaN-poisoned outputs, ``workers`` worker processes at once, which also compiles
everything); per shape, each public call is made as a user makes it (tuned on its first call over the configs
that passed), each baseline is built (one with candidates of its own, such as Meta's autotune configs, keeps the
fastest by kernel time), every one is checked against the family's reference, then all that passed are timed in
``rounds`` interleaved rounds (``workbench.measure.interleave``: the ratio is the median of the per-round ratios,
so a GPU clock that drifts as it heats moves both sides alike). :func:`sweep` times every candidate config as a
prepared launch (kernel time) and ranks them (``compare.rank_configs``).

The answer is the run's JSON document: rows of {kernel, shape, dtype, config, ms, tflops, baseline, baseline_ms,
ratio, method} (one per our kernel and baseline measured in the run), the summary against the family's targets,
every check and measurement.
"""

from __future__ import annotations

import datetime as dt
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from workbench.measure.compare import rank_configs, rounds_records, versus_rows
from workbench.measure.timing import TIMINGS
from workbench.run.jobs import Answer, Jobs, in_parallel

__all__ = ["Family", "Settings", "bench", "chosen_shapes", "compile_only", "document", "firsts", "on_gpu", "plans",
           "preflight", "ranking", "rounds_rows", "summary", "sweep", "with_ranked"]

Shape = tuple
Log = Callable[..., None]
Plan = Mapping[str, "list[dict] | None"]  # per kernel of ours: the configs it may use (None: its own space)
JOBS = "workbench.measure.family_jobs:handle"


class Family(Protocol):
    """What a kernel family gives the runner (duck-typed: the kernel library's families import nothing of the
    workbench). ``ref`` is ``"module:attribute"``, how the worker imports the same object."""

    ref: str
    name: str
    kernels: Sequence[str]  # ours: each has a public call and configs
    baselines: Sequence[str]  # what ours are compared with (cuBLAS, SDPA backends, Meta's kernels, ...)
    shapes: Mapping[str, Sequence[Shape]]  # "bench" (the default), "quick", "sweep", ...

    def case(self, shape: Shape) -> str: ...  # shapes of one case share their configs and preflight
    def checks(self, shape: Shape) -> list[Shape]: ...  # the preflight shapes of its case
    def shape_name(self, shape: Shape) -> str: ...
    def parse_shape(self, text: str) -> Shape: ...
    def flops(self, shape: Shape) -> float: ...
    def inputs(self, shape: Shape, dtype: str, device: str) -> Any: ...
    def reference(self, inputs: Any) -> Any: ...  # the exact answer (fp32)
    def tolerance(self, dtype: str) -> float: ...
    def error(self, out: Any, ref: Any) -> float: ...  # a call passes when error < tolerance
    def configs(self, kernel: str, space: str, shape: Shape) -> list[dict] | None: ...  # None: its own space
    def config_name(self, cfg: dict) -> str: ...
    def launch(self, kernel: str, cfg: dict, inputs: Any) -> tuple[Callable[[], Any], Any]: ...  # (run, its out)
    def call(self, kernel: str, inputs: Any, configs: list[dict] | None) -> Callable[..., Any]: ...  # f(out=None)
    def tuned(self, kernel: str, inputs: Any) -> dict | None: ...  # the config the public call picked
    def baseline(self, name: str, inputs: Any, limit: int) -> dict[str, Callable[[], Any]]: ...  # {} n/a here
    def targets(self, shape: Shape) -> dict[str, float]: ...  # {baseline or "prefix*": ratio needed}


@dataclass
class Settings:
    """How a run measures. ``timing``: how the rounds time one call (``timing.TIMINGS``); ``kernel_timing``: how
    a config or a baseline's candidate is timed; ``gpu=False``: CPU workers (a family of CPU callables)."""

    dtype: str = "bf16"
    rounds: int = 7
    rep_ms: float = 40.0
    tune_rep_ms: float = 30.0
    timing: str = "calls"
    kernel_timing: str = "flush"
    warmup_s: float = 2.0
    workers: int = field(default_factory=lambda: min(6, max(1, (os.cpu_count() or 2) // 2)))
    job_timeout_s: float = 240.0
    candidates: int = 8  # a baseline's own candidates tried (Meta's autotune configs)
    gpu: bool = True
    paths: Sequence[str] = ()  # folders the worker imports the family from
    # not a setting: the worker :func:`on_gpu` started, which the run that follows takes (one worker start fewer)
    kept: Any = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        for name in ("timing", "kernel_timing"):
            if getattr(self, name) not in TIMINGS:
                raise ValueError(f"{name} must be one of {sorted(TIMINGS)}, got {getattr(self, name)!r}")
        self.rounds = max(1, self.rounds)


class _Worker:
    """The family's jobs in one isolated worker: an item that hangs or crashes costs only itself."""

    def __init__(self, family: Family, s: Settings) -> None:
        self.family, self.s = family, s
        self.jobs = Jobs(paths=s.paths, gpu=s.gpu, name=family.name)

    def job(self, op: str, shape: Shape | None = None, **kw: Any) -> dict[str, Any]:
        return dict(kw, op=op, family=self.family.ref, shape=shape, dtype=self.s.dtype)

    def run(self, job: dict, items: int = 1, extra_s: float = 0.0) -> Answer:
        return self.jobs.call(JOBS, job, timeout_s=self.s.job_timeout_s * items + extra_s)

    def each(self, job: dict, key: str, failed: Callable[[Any, str], dict]) -> list[dict]:
        return self.jobs.each(JOBS, job, key, timeout_s=self.s.job_timeout_s, failed=failed)

    def close(self) -> None:
        self.jobs.close()


def _worker(family: Family, s: Settings) -> _Worker:
    """The worker :func:`on_gpu` kept for this run, else a new one."""
    w, s.kept = s.kept, None
    if w is not None and w.family is family:
        return w
    if w is not None:
        w.close()
    return _Worker(family, s)


def device(family: Family, s: Settings, keep: bool = False) -> dict[str, Any]:
    """The worker's device and versions; raises RuntimeError when the worker cannot start (no GPU, ...). With
    ``keep`` the worker stays up in ``s.kept`` for the run that follows (:func:`bench`, :func:`sweep`)."""
    w = _Worker(family, s)
    a = None
    try:
        a = w.run(w.job("info"))
    finally:
        if keep and a is not None and not a.failure:
            s.kept = w
        else:
            w.close()
    if a.failure:
        raise RuntimeError(a.failure)
    return a.value


def firsts(family: Family, shapes: Sequence[Shape]) -> dict[str, Shape]:
    """Per case of ``shapes`` (``family.case``), its first shape: the one its plan and its preflight are made for."""
    out: dict[str, Shape] = {}
    for shape in shapes:
        out.setdefault(family.case(shape), shape)
    return out


def plans(family: Family, shapes: Sequence[Shape], plan_for: Callable[[Shape], Plan]) -> dict[str, Plan]:
    """Per case of ``shapes``, the plan ``plan_for`` gives for its first shape."""
    return {case: plan_for(shape) for case, shape in firsts(family, shapes).items()}


def on_gpu(family: Family, s: Settings, script: str, shapes: Sequence[Shape], log: Log = print) -> dict | None:
    """The worker's device and versions, said in one line with the run's shapes; None (said why) without a GPU."""
    info = device(family, s, keep=True)
    if info["device"] == "cpu":  # no run follows: the kept worker goes
        s.kept.close()
        s.kept = None
        log(f"{script} needs a CUDA GPU (the kernels' compile-only checks are in tests/kernels/)")
        return None
    log(f"{info['device']} ({info['sms']} SMs), torch {info['torch']}, triton {info['triton']}: {family.name} at "
        f"{', '.join(family.shape_name(x) for x in shapes)}, {s.dtype}")
    return info


def chosen_shapes(family: Family, text: str | None, named: str) -> list[Shape]:
    """The shapes of ``--shapes`` (comma-separated, ``family.parse_shape``), else the family's ``named`` set."""
    return [family.parse_shape(x) for x in text.split(",")] if text else list(family.shapes[named])


def preflight(family: Family, shapes: Sequence[Shape], cases: Mapping[str, Plan], s: Settings,
              log: Log = print) -> dict[str, dict[str, dict[str, str]]]:
    """{case: {kernel: {config name: "ok" | why not}}}: every config of each case's plan launched into a
    NaN-poisoned output at each of the case's preflight shapes (``family.checks``) and checked against the
    reference, ``s.workers`` workers at once; a config that fails at one shape is not tried at the next."""
    first = firsts(family, shapes)
    chunks = [(case, k, cfgs[i:i + 3]) for case, plan in cases.items() for k, cfgs in plan.items() if cfgs
              for i in range(0, len(cfgs), 3)]
    verdict: dict[str, dict[str, dict[str, str]]] = {c: {k: {} for k, v in p.items() if v is not None}
                                                     for c, p in cases.items()}
    lock = threading.Lock()

    def work(w: _Worker, chunk: tuple[str, str, list[dict]]) -> None:
        case, kernel, cfgs = chunk
        mine = verdict[case][kernel]
        for shape in family.checks(first[case]):
            rows = _configs(w, kernel, shape, cfgs, timed=False)
            with lock:
                for r in rows:
                    if mine.get(r["config"], "ok") == "ok":
                        mine[r["config"]] = "ok" if not r["error"] else f"{shape}: {r['error']}"
            cfgs = [c for c in cfgs if mine.get(family.config_name(c)) == "ok"]

    in_parallel(chunks, s.workers, lambda: _Worker(family, s), work)
    for case, per in verdict.items():
        for kernel, v in per.items():
            bad = {c: e for c, e in v.items() if e != "ok"}
            log(f"  preflight {case} {kernel}: {len(v) - len(bad)}/{len(v)} ok")
            for c, e in bad.items():
                log(f"    {c}: {e[:240]}")
    return verdict


def _configs(w: _Worker, kernel: str, shape: Shape, cfgs: list[dict], timed: bool) -> list[dict]:
    """One row per config: checked (and timed, ``s.kernel_timing``), each config a call of its own."""
    job = w.job("configs", shape, kernel=kernel, configs=cfgs, time=timed, rep_ms=w.s.tune_rep_ms,
                timing=w.s.kernel_timing)
    name = w.family.config_name
    return w.each(job, "configs", lambda c, why: dict(config=name(c), cfg=c, ms=None, error_value=None, error=why))


def passing(family: Family, plan: Plan, verdict: Mapping[str, Mapping[str, str]]) -> dict[str, list[dict] | None]:
    """The configs of ``plan`` the preflight passed (None stays None: a kernel tuning over its own space)."""
    return {k: None if cfgs is None else [c for c in cfgs if verdict[k].get(family.config_name(c)) == "ok"]
            for k, cfgs in plan.items()}


def _record(family: Family, shape: Shape, s: Settings, kind: str, name: str, row: dict, phase: str) -> dict:
    ms = row.get("ms")
    return dict(kind=kind, kernel=name, shape=list(shape), dtype=s.dtype, phase=phase, config=row.get("config"),
                cfg=row.get("cfg"), ms=ms, tflops=family.flops(shape) / ms / 1e9 if ms else None,
                error_value=row.get("error_value"), error=row.get("error"))


def _checked(w: _Worker, shape: Shape, kernels: Plan, baselines: Sequence[str]) -> list[dict]:
    """Each public call (tuned over its passing configs) and each baseline, built and checked at ``shape``."""
    items = [["ours", k, cfgs] for k, cfgs in kernels.items()] + [["baseline", b, None] for b in baselines]
    job = w.job("calls", shape, items=items, rep_ms=w.s.tune_rep_ms, timing=w.s.kernel_timing,
                limit=w.s.candidates)
    rows = w.each(job, "items", lambda it, why: dict(kind=it[0], name=it[1], config=None, error=why))
    return [_record(w.family, shape, w.s, "library" if r["kind"] == "ours" else "baseline", r["name"], r, "check")
            for r in rows if not r.get("absent")]


def _rounds(w: _Worker, shape: Shape, checked: list[dict], good: Plan) -> dict[str, list[float]] | None:
    items = [dict(kind=r["kind"], name=r["kernel"], config=r["config"], cfgs=good.get(r["kernel"]))
             for r in checked if not r["error"]]
    if not items:
        return None
    job = w.job("rounds", shape, items=items, rounds=w.s.rounds, rep_ms=w.s.rep_ms, timing=w.s.timing,
                limit=w.s.candidates)
    a = w.run(job, items=w.s.rounds + 2)
    return None if a.failure else a.value["times"]


def _warm(w: _Worker, shape: Shape, log: Log) -> None:
    """``s.warmup_s`` of the first baseline's calls, to bring the GPU to its working clock."""
    if w.s.warmup_s > 0 and w.family.baselines:
        a = w.run(w.job("warm", shape, name=w.family.baselines[0], seconds=w.s.warmup_s), extra_s=w.s.warmup_s)
        if a.failure:
            log(f"  warm-up FAILED: {a.failure}")


def bench(family: Family, shapes: Sequence[Shape], plan_for: Callable[[Shape], Plan], s: Settings,
          baselines: Sequence[str] | None = None, log: Log = print) -> dict[str, Any]:
    """Preflight, then per shape the checked public calls and baselines in interleaved rounds (module doc);
    ``plan_for(shape)``: per kernel of ours, the configs its public call may tune over at that shape's case. The
    run's part of the document (:func:`document` adds the device, date and command)."""
    baselines = list(family.baselines if baselines is None else baselines)
    cases = plans(family, shapes, plan_for)
    log(f"preflight ({sum(len(c or ()) for p in cases.values() for c in p.values())} configs, {s.workers} workers):")
    verdict = preflight(family, shapes, cases, s, log)
    w = _worker(family, s)
    records: list[dict] = []
    rows: list[dict] = []
    inter: dict[str, dict[str, list[float]]] = {}
    try:
        for i, shape in enumerate(shapes):
            log(f"== {family.shape_name(shape)}")
            if i == 0:
                _warm(w, shape, log)
            good = passing(family, cases[family.case(shape)], verdict[family.case(shape)])
            checked = _checked(w, shape, good, baselines)
            for r in checked:
                log(f"  {r['kernel']:<26} " + (f"FAILED {str(r['error'])[:200]}" if r["error"] else
                                               f"error {r['error_value']:.2e}  {str(r['config'])[:60]}"))
            log(f"  interleaved: {s.rounds} rounds")
            times = _rounds(w, shape, checked, good)
            records += checked
            if times is None:
                log("  interleaved rounds FAILED (or nothing passed its check)")
                continue
            inter[family.shape_name(shape)] = times
            rows += rounds_rows(family, shape, times, checked, s)
    finally:
        w.close()
    summ = summary(family, shapes, rows)
    print_table(family, shapes, rows, summ, log)
    return dict(mode="bench", timing=f"public calls and baselines, {TIMINGS[s.timing]}", rows=rows,
                summary=summ, checks=records, preflight=verdict, interleaved=inter)


def rounds_rows(family: Family, shape: Shape, times: dict[str, list[float]], checked: list[dict],
                s: Settings) -> list[dict]:
    """One row per (our kernel, baseline) from the rounds: ``ms`` the median over rounds, ``ratio`` the median of
    the per-round ratios ``baseline_ms / ms``."""
    recs = rounds_records(times, flops=family.flops(shape))
    for r in checked:
        if r["kernel"] in recs:
            recs[r["kernel"]]["config"] = r["config"]
    ours = {k: v for k, v in recs.items() if k in family.kernels}
    bases = {k: v for k, v in recs.items() if k not in family.kernels}
    return [dict(r, shape=list(shape), dtype=s.dtype, method=f"{s.timing}; {r['method']}")
            for r in versus_rows(ours, bases)]


def summary(family: Family, shapes: Sequence[Shape], rows: list[dict]) -> list[dict]:
    """Per shape and target (``family.targets``): our best kernel against that baseline and whether it is met; a
    target that names a prefix (``"meta_*"``: Meta's best) is judged against the baseline of that prefix our best
    beats by the least (same-round ratios: the best of theirs, seen from ours). A shape without targets: our best
    against each baseline."""
    out = []
    for shape in shapes:
        here = [r for r in rows if r["shape"] == list(shape)]
        wanted = family.targets(shape) or {b: None for b in dict.fromkeys(r["baseline"] for r in here)}
        for name, need in wanted.items():
            bests = []
            for base in dict.fromkeys(r["baseline"] for r in here):
                if base == name or (name.endswith("*") and base.startswith(name[:-1])):
                    bests.append(max((r for r in here if r["baseline"] == base), key=lambda r: r["ratio"]))
            best = min(bests, key=lambda r: r["ratio"]) if bests else None
            out.append(dict(shape=list(shape), against=best["baseline"] if best else name, target=need,
                            best_kernel=best and best["kernel"], config=best and best["config"],
                            tflops=best and best["tflops"], ratio=best and best["ratio"],
                            met=None if need is None or best is None else best["ratio"] >= need))
    return out


def print_table(family: Family, shapes: Sequence[Shape], rows: list[dict], summ: list[dict],
                log: Log = print) -> None:
    """Per shape, every kernel and baseline of the rounds (median ms, TFLOP/s) and our ratios against each
    baseline (median of per-round ratios; above 1: ours faster); then the targets of ``summ`` (:func:`summary`)."""
    for shape in shapes:
        here = [r for r in rows if r["shape"] == list(shape)]
        if not here:
            continue
        bases = list(dict.fromkeys(r["baseline"] for r in here))
        log(f"\n{family.shape_name(shape)}  (x = baseline ms / ours, median of per-round ratios)")
        for b in bases:
            ms = next(r["baseline_ms"] for r in here if r["baseline"] == b)
            log(f"  {b:<26} {ms:9.4f} ms {family.flops(shape) / ms / 1e9:8.1f} TFLOP/s")
        for k in dict.fromkeys(r["kernel"] for r in here):
            mine = {r["baseline"]: r for r in here if r["kernel"] == k}
            first = next(iter(mine.values()))
            ratios = "  ".join(f"x{mine[b]['ratio']:.3f} {b}" for b in bases if b in mine)
            log(f"  {k:<26} {first['ms']:9.4f} ms {first['tflops']:8.1f} TFLOP/s  {ratios}  "
                f"{str(first['config'] or '-')[:50]}")
    for t in (t for t in summ if t["target"] is not None):
        verdict = f"{'met' if t['met'] else 'MISSED'} ({t['ratio']:.3f}, {t['best_kernel']})" if t["ratio"] else "-"
        log(f"target {t['shape']} vs {t['against']} >= {t['target']}: {verdict}")


def sweep(family: Family, shapes: Sequence[Shape], plan_for: Callable[[Shape], Plan], s: Settings,
          budget_s: float, log: Log = print) -> dict[str, Any]:
    """Every candidate of each case's plan that passes the preflight, timed at every shape of its case as a
    prepared launch (``s.kernel_timing``), the best-ranked candidates of every kernel first, until ``budget_s``
    from the start; then the five best of each once more; per case, the ranking (``compare.rank_configs``)."""
    t0 = time.time()
    cases = plans(family, shapes, plan_for)
    log(f"preflight ({sum(len(c or ()) for p in cases.values() for c in p.values())} candidates, "
        f"{s.workers} workers):")
    verdict = preflight(family, shapes, cases, s, log)
    of_case = {c: [x for x in shapes if family.case(x) == c] for c in cases}
    work = [(of_case[c], k, cfgs) for c, p in cases.items() for k, cfgs in passing(family, p, verdict[c]).items()
            if cfgs]
    w = _worker(family, s)
    try:
        _warm(w, shapes[0], log)
        records = _timed(w, work, t0 + budget_s, "sweep", log)
        top = [(x, k, [r["cfg"] for r in ranking(family, records, x).get(k, [])[:5]]) for x, k, _ in work]
        if time.time() < t0 + budget_s - 20 and any(cfgs for _, _, cfgs in top):
            log("confirming the top configs:")
            records += [r for r in _timed(w, top, t0 + budget_s, "confirm", log) if r["ms"]]
    finally:
        w.close()
    ranked = {c: ranking(family, records, x) for c, x in of_case.items()}
    log("\n== ranking (geometric mean of speed relative to each shape's best)")
    for case, per in ranked.items():
        for kernel, best in per.items():
            log(f"  {case} {kernel}:")
            for r in best[:6]:
                log(f"    {r['score']:.3f} {r['tflops']}  {r['config']}")
    return dict(mode="sweep", timing=f"prepared launches, {TIMINGS[s.kernel_timing]}", ranking=ranked,
                preflight=verdict, skipped=sum(1 for r in records if r["error"] == "skipped: budget"),
                measurements=records)


def _timed(w: _Worker, work: Sequence[tuple[list[Shape], str, list[dict]]], deadline: float, phase: str,
           log: Log) -> list[dict]:
    """Each (shapes, kernel, configs) of ``work`` timed config by config at its shapes, the first config of every
    kernel first, then the second, ...; past ``deadline`` a config is recorded as skipped."""
    records: list[dict] = []
    name = w.family.config_name
    for rank in range(max((len(c) for _, _, c in work), default=0)):
        for shapes, kernel, cfgs in work:
            if rank >= len(cfgs):
                continue
            for shape in shapes:
                if time.time() > deadline:
                    row = dict(config=name(cfgs[rank]), cfg=cfgs[rank], error="skipped: budget")
                    records.append(_record(w.family, shape, w.s, "library", kernel, row, phase))
                    continue
                r = _record(w.family, shape, w.s, "library", kernel,
                            _configs(w, kernel, shape, [cfgs[rank]], timed=True)[0], phase)
                records.append(r)
                log(f"  {kernel:15s} {w.family.shape_name(shape):>18s} {r['config'][:40]:40s} "
                    + (f"{r['tflops']:7.1f} TFLOP/s" if r["tflops"] else f"FAILED {str(r['error'])[:120]}"))
    return records


def ranking(family: Family, records: list[dict], shapes: Sequence[Shape]) -> dict[str, list[dict]]:
    """Per kernel, its configs timed at every one of ``shapes``, best first (``compare.rank_configs``)."""
    here = [r for r in records if r["ms"] and r["shape"] in [list(x) for x in shapes]]
    return rank_configs(here, [list(x) for x in shapes], lambda shape: family.flops(tuple(shape)))


def with_ranked(family: Family, plan: Plan, ranking: Mapping[str, list[dict]], n: int = 3) -> dict[str, Any]:
    """``plan`` with the ``n`` best configs per kernel of a sweep's ranking (of the plan's case) first (a config
    once; a kernel tuning over its own space stays so)."""
    out: dict[str, Any] = {}
    for kernel, cfgs in plan.items():
        if cfgs is None:
            out[kernel] = None
            continue
        merged: dict[str, dict] = {}
        for cfg in [r["cfg"] for r in ranking.get(kernel, [])[:n]] + list(cfgs):
            merged.setdefault(family.config_name(cfg), cfg)
        out[kernel] = list(merged.values())
    return out


def compile_only(family: Family, shape: Shape, plan: Mapping[str, list[dict]], log: Log = print) -> list[dict]:
    """Every config of ``plan`` compiled for sm_90 from CPU inputs of ``shape`` (``family.prepare``: no GPU
    needed): per config the registers (per async task for TLX), spills, local and shared memory, the static
    orchestration findings (``workbench.check``) and the compile time; a config that does not compile is a row
    with its error."""
    from workbench.check import check_artifact
    from workbench.compile import compile as compile_kernel

    inputs = family.inputs(shape, "bf16", "cpu")
    out = []
    for kernel, cfgs in plan.items():
        for cfg in cfgs:
            row: dict[str, Any] = dict(kernel=kernel, config=family.config_name(cfg), shape=list(shape))
            t0 = time.perf_counter()
            try:
                jit, args, kwargs, grid = family.prepare(kernel, cfg, inputs)  # type: ignore[attr-defined]
                art = compile_kernel(jit, *args, target="sm_90", **kwargs)
                findings = check_artifact(art, jit, *args, grid=tuple(grid), **kwargs)
            except Exception as e:  # a config that does not compile is a row with its error
                row.update(error=f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}")
                out.append(row)
                log(f"  {kernel:>14s} {row['config']:>40s} FAILED {row['error']}")
                continue
            m = art.metadata
            row.update(compile_s=round(time.perf_counter() - t0, 2), registers=m.registers,
                       task_registers=[t["registers"] for t in sorted(m.tasks, key=lambda t: t["start_warp"])],
                       spill_stores=m.spill_stores, spill_loads=m.spill_loads, local_bytes=m.local_bytes,
                       shared_bytes=m.shared_bytes, num_warps=m.num_warps, grid=list(grid),
                       findings=[str(f).splitlines()[0] for f in findings if f.severity != "info"],
                       info=len([f for f in findings if f.severity == "info"]))
            out.append(row)
            log(f"  {kernel:>14s} {row['config']:>40s} regs {m.registers} {row['task_registers']} spills "
                f"{m.spill_stores}/{m.spill_loads} smem {m.shared_bytes} findings {len(row['findings'])} "
                f"({row['compile_s']} s)")
    return out


def document(family: Family, info: Mapping[str, Any], part: Mapping[str, Any], shapes: Sequence[Shape],
             s: Settings, command: str, t_start: float) -> dict[str, Any]:
    """The run's JSON: device and versions (``info``), date, command, the settings, the part's fields."""
    return dict(info, family=family.name, date=dt.datetime.now().isoformat(timespec="seconds"), command=command,
                shapes=[list(x) for x in shapes], settings={k: v for k, v in vars(s).items() if k != "paths"},
                **part, wall_s=round(time.time() - t_start, 1))

