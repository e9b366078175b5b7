"""``workbench.evaluate``: many candidates of one op (kernel files or functions, by hand or by an agent) judged
against a reference on several shapes, ``trials`` fresh seeds each, on the search's machinery.

- **compile and check** (no GPU): one Ray task per candidate calls it on CPU tensors of each shape under the
  launch capture in compile-only mode, so every Triton kernel it launches is compiled for the target and
  statically checked (``workbench.check``); its findings and compile time go in its row. A candidate with an
  error-level finding is not run (``skip_on_error``).
- **run, judge, time**: one Ray actor per GPU of the cluster (or one CPU actor running Triton's interpreter when
  there is none), each with an isolated worker process (``workbench.run.jobs``) in which
  ``workbench.run.evaluation.evaluate_candidate`` judges one candidate at a time: a hang or a fault costs that
  candidate, the worker is replaced.

Each candidate's row is one JSON line (``EvaluationResult.to_jsonl``, streamed to ``json_path`` as rows come):
``candidate``, ``status`` (passed, failed, rejected, compile-error, skipped, hang, fault, lost, error), ``reasons``,
``flags``, ``findings``, per shape the trials passed, the error (max/p99 ulps, norm-relative), the times and the
speed-up over the reference, and their geomean.
"""

from __future__ import annotations

import datetime
import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.compile import child, portable
from workbench.errors import ArgumentError
from workbench.search.engine import LOST_RETRIES, connect, forget_actors, wait_placed, warm_actors

__all__ = ["EvaluationResult", "evaluate"]

JOB = "workbench.run.evaluation:evaluate_candidate"


@dataclass
class EvaluationResult:
    """The rows of an evaluation (one per candidate, in the order given) and what ran them."""

    rows: list[dict[str, Any]]
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def table(self) -> Any:
        import pandas as pd

        cols = ["candidate", "status", "geomean_speedup", "reasons", "flags"]
        return pd.DataFrame([{k: r.get(k) for k in cols} for r in self.rows])

    def to_jsonl(self, path: str | Path) -> Path:
        path = Path(path)
        path.write_text("".join(json.dumps(r, default=str) + "\n" for r in self.rows))
        return path

    def __repr__(self) -> str:
        lines = [f"evaluation of {len(self.rows)} candidates ({self.info.get('device', '?')}, "
                 f"{self.info.get('wall_s', 0):.1f} s)"]
        for r in self.rows:
            sp = r.get("geomean_speedup")
            why = "; ".join(r.get("reasons") or [])[:160]
            lines.append(f"  {r['candidate']}: {r['status']}" + (f", {sp:.3g}x" if sp else "") +
                         (f" - {why}" if why else ""))
        return "\n".join(lines)


def _spec_of(c: Any, what: str) -> Any:
    """A candidate, reference or input maker as something a worker can load: "file.py:name", "module:name", or a
    function defined in a notebook or module, sent by value."""
    if isinstance(c, str | Path):
        text = str(c)
        where = text.rpartition(":")[0]
        if not where:
            raise ArgumentError(f"{what} {text!r}: give 'file.py:name' or 'module:name'")
        if where.endswith(".py"):
            path = Path(where).resolve()
            if not path.is_file():
                raise ArgumentError(f"{what} {text!r}: no file {path}")
            return f"{path}:{text.rpartition(':')[2]}"
        return text
    if callable(c):
        try:
            return portable.dumps(c)
        except Exception as e:
            raise ArgumentError(f"the {what} {getattr(c, '__name__', c)!r} cannot be sent to a worker: {e}",
                                hint="define it at the top level of a cell or module, or give 'file.py:name'") from e
    raise ArgumentError(f"{what} {c!r} is neither a callable nor 'file.py:name'")


def _name_of(c: Any) -> str:
    if isinstance(c, str | Path):
        where, _, name = str(c).rpartition(":")
        return f"{Path(where).stem}:{name}" if where.endswith(".py") else str(c)
    return getattr(c, "__qualname__", getattr(c, "__name__", repr(c)))


# ---------------------------------------------------------------------------------------------------- remote parts
def _compile_remote(job: dict[str, Any]) -> dict[str, Any]:
    """A candidate called on CPU tensors of each shape, its launches compiled and checked, nothing run."""
    from workbench.run.capture import Capture
    from workbench.run.device import Device
    from workbench.run.evaluation import load_callable

    child.off()  # this Ray task is the isolation: a crash costs this candidate
    t0 = time.perf_counter()
    out: dict[str, Any] = {"findings": [], "kernels": [], "compile_error": None}
    try:
        cand = load_callable(job["candidate"], fresh=True)
        make = load_callable(job["inputs"])
        dev = Device(False, "none", None, None, "compile-only")
        for shape in job["shapes"]:
            with Capture(device=dev, compile_only=True, target=job["target"]) as cap:
                cand(*make(shape, 0, "cpu"))
            for e in cap.entries.values():
                out["kernels"].append(e.name)
                out["findings"] += _findings(e)
    except Exception as e:
        hint = getattr(e, "hint", None)  # a WorkbenchError says what to do (e.g. a Triton 3.8 change)
        out["compile_error"] = (f"{type(e).__name__}: {str(e).strip().splitlines()[0][:400] if str(e) else ''}"
                                + (f" (hint: {hint[:300]})" if hint else ""))
    out["kernels"] = sorted(set(out["kernels"]))
    out["compile_s"] = round(time.perf_counter() - t0, 3)
    return out


def _findings(entry: Any) -> list[dict[str, Any]]:
    from workbench.run.isolate import captured_findings

    fs = captured_findings(entry)
    return [{**f, "kernel": entry.name} for f in fs if f.get("severity") in ("error", "warning")]


class _RunActor:
    """An isolated worker (``workbench.run.jobs``) on this actor's GPU, or a CPU one running the interpreter."""

    def __init__(self, device: str) -> None:
        from workbench.run.jobs import Jobs

        self.device = device
        self.jobs = Jobs(gpu=device != "cpu", name="evaluate")

    def run(self, job: dict[str, Any], timeout_s: float) -> dict[str, Any]:
        t0 = time.perf_counter()
        a = self.jobs.call(JOB, {**job, "device": self.device}, timeout_s=timeout_s)
        rows = a.reported("row")
        if rows:
            return {**rows[-1], "run_s": round(time.perf_counter() - t0, 3)}  # the worker's whole call
        failure = a.failure or "no row"
        status = "hang" if failure.startswith("hung") else "fault"
        return {"candidate": job["name"], "status": status, "reasons": [failure], "shapes": [], "flags": []}


# ---------------------------------------------------------------------------------------------------- the driver
def evaluate(candidates: Sequence[Any], *, reference: Any, inputs: Any, shapes: Sequence[Any], trials: int = 5,
             atol: float | None = None, rtol: float | None = None, rounds: int = 3, target: str = "sm_90",
             cluster: str | None = None, timeout_s: float = 120.0, skip_on_error: bool = True,
             json_path: str | Path | None = None, progress: bool | Callable[[dict[str, Any]], None] = True,
             seed: int = 0) -> EvaluationResult:
    """Judge and time every candidate on every shape against ``reference``.

    - ``candidates``: callables, or ``"file.py:name"`` / ``"module:name"``; each is called as ``cand(*inputs)``
      and returns the output tensor(s). Inputs are read-only.
    - ``reference``: the same, computing the right output(s); evaluated again on upcast inputs (the judge).
    - ``inputs``: ``inputs(shape, seed, device) -> tuple`` of the call's arguments for one shape and seed.
    - ``shapes``: anything ``inputs`` takes (include odd sizes); ``trials``: fresh seeds per shape.
    - ``atol``/``rtol``: the classic rule instead of the judge's default; ``rounds``: interleaved timing rounds.
    - ``json_path``: one JSON line per candidate, written as each finishes.
    """
    if not candidates:
        raise ArgumentError("no candidates to evaluate")
    if not shapes:
        raise ArgumentError("no shapes: give shapes=[...] (each is passed to inputs(shape, seed, device))")
    import ray

    t0 = time.perf_counter()
    base = {"reference": _spec_of(reference, "reference"), "inputs": _spec_of(inputs, "input maker"),
            "shapes": [list(s) if isinstance(s, tuple) else s for s in shapes], "trials": int(trials),
            "atol": atol, "rtol": rtol, "rounds": int(rounds), "target": target, "seed": int(seed)}
    names = _unique([_name_of(c) for c in candidates])
    jobs = [{**base, "candidate": _spec_of(c, "candidate"), "name": n} for c, n in zip(candidates, names,
                                                                                      strict=True)]
    info_cluster = connect(cluster)
    phases = {"connect_s": round(time.perf_counter() - t0, 3)}  # where the wall time goes (with each row's run_s)
    gpus = info_cluster["gpus"]
    say = _progress(progress, len(jobs))
    compile_fn = ray.remote(num_cpus=1, max_retries=1)(_compile_remote)
    compiles = {compile_fn.remote(j): i for i, j in enumerate(jobs)}
    actors = _runners(ray, gpus)
    rows: list[dict[str, Any] | None] = [None] * len(jobs)
    compiled: dict[int, dict[str, Any]] = {}
    free, queue, running = list(actors), [], {}
    lost: dict[int, int] = {}  # candidate -> times its actor died under it
    out = open(json_path, "w") if json_path else None  # noqa: SIM115 - rows stream into it as they come
    try:
        wait_placed(actors)  # while the compiles run: a GPU held elsewhere is an error, not a wait for ever
        while compiles or queue or running:
            while free and queue:
                i = queue.pop(0)
                actor = free.pop(0)
                running[actor.run.remote(jobs[i], timeout_s)] = (i, actor)
            ready, _ = ray.wait(list(compiles) + list(running), num_returns=1, timeout=1.0)
            for ref in ready:
                if ref in compiles:
                    i = compiles.pop(ref)
                    phases["compiled_by_s"] = round(time.perf_counter() - t0, 3)  # the last compile's end, at last
                    compiled[i] = _get(ray, ref, {"compile_error": "the compile process died", "findings": []})
                    c = compiled[i]
                    errors = [f for f in c["findings"] if f.get("severity") == "error"]
                    if c.get("compile_error") and "compile" in c["compile_error"].lower():
                        rows[i] = _row(jobs[i], "compile-error", c, [c["compile_error"]])
                    elif errors and skip_on_error:
                        rows[i] = _row(jobs[i], "skipped", c, [f"line {f.get('line')}: [{f.get('rule')}] "
                                                                f"{f.get('message')}" for f in errors[:3]])
                    else:
                        queue.append(i)
                        continue
                    _emit(rows[i], out, say)
                else:
                    i, actor = running.pop(ref)
                    free.append(actor)  # Ray restarts an actor that died; calls wait for it
                    got = _get(ray, ref, {"candidate": jobs[i]["name"], "status": "lost", "shapes": [],
                                          "flags": [], "reasons": ["the worker's actor died"]})
                    if got["status"] == "lost":  # its process was lost, not judged: once more, then "lost"
                        lost[i] = lost.get(i, 0) + 1
                        if lost[i] <= LOST_RETRIES:
                            queue.insert(0, i)
                            continue
                        got["reasons"] = [*got["reasons"], f"tried {lost[i]} times"]
                    rows[i] = {**got, "findings": compiled.get(i, {}).get("findings", []),
                               "compile_s": compiled.get(i, {}).get("compile_s"),
                               "compile_note": compiled.get(i, {}).get("compile_error")}
                    _emit(rows[i], out, say)
    except BaseException:
        forget_actors("evaluate")  # an error or an interrupt: nothing keeps running for an evaluation nobody waits for
        raise
    finally:
        if out is not None:
            out.close()
    info = {"date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"), "cluster": info_cluster,
            "device": "cuda" if gpus else "cpu (Triton's interpreter)", "wall_s": round(time.perf_counter() - t0, 3),
            "shapes": base["shapes"], "trials": trials, **phases}
    return EvaluationResult([r for r in rows if r is not None], info)


def _runners(ray: Any, gpus: int) -> list[Any]:
    """One run actor per GPU of the cluster (one CPU actor when there is none), started once and kept."""
    device = "cuda" if gpus else "cpu"
    cls = ray.remote(num_gpus=1 if gpus else 0, num_cpus=0 if gpus else 1, max_restarts=-1)(_RunActor)
    return warm_actors("evaluate", lambda: cls.remote(device), max(1, gpus))


def _unique(names: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for n in names:
        seen[n] = seen.get(n, 0) + 1
        out.append(n if seen[n] == 1 else f"{n}#{seen[n]}")
    return out


def _get(ray: Any, ref: Any, default: dict[str, Any]) -> dict[str, Any]:
    try:
        return ray.get(ref)
    except Exception as e:
        d = dict(default)
        d.setdefault("reasons", [])
        d["reasons"] = [*d["reasons"], f"{type(e).__name__}: {str(e).strip().splitlines()[-1][:300]}"]
        return d


def _row(job: dict[str, Any], status: str, compiled: dict[str, Any], reasons: list[str]) -> dict[str, Any]:
    return {"candidate": job["name"], "status": status, "reasons": reasons, "flags": [], "shapes": [],
            "findings": compiled.get("findings", []), "compile_s": compiled.get("compile_s"),
            "geomean_speedup": None}


def _emit(row: dict[str, Any], out: Any, say: Callable[[dict[str, Any]], None] | None) -> None:
    if out is not None:
        out.write(json.dumps(row, default=str) + "\n")
        out.flush()
    if say is not None:
        say(row)


def _progress(progress: bool | Callable[[dict[str, Any]], None], total: int) -> Callable | None:
    if callable(progress):
        return progress
    if not progress:
        return None
    done = [0]

    def say(row: dict[str, Any]) -> None:
        done[0] += 1
        sp = row.get("geomean_speedup")
        print(f"[{done[0]}/{total}] {row['candidate']}: {row['status']}" + (f" ({sp:.3g}x)" if sp else ""),
              file=sys.stderr, flush=True)

    return say
