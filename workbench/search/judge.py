"""The GPU side of a search: one ``Judge`` per GPU, in its own process (a Ray actor), judging candidates.

For a problem it draws fresh inputs once (the caller's tensors never leave the caller), evaluates the reference
on a copy of them, and keeps a snapshot. For each candidate:

1. every storage gets the snapshot's values back and each output is poisoned (NaN; integers: the dtype's
   minimum), so a kernel that writes nothing cannot pass;
2. the candidate's pre_hooks run on this process's arguments, as Triton's autotuner calls them;
3. its first launch runs in the isolated worker (``workbench.run.isolate``: a child process under a watchdog),
   from the binary the compile task shipped: a hang or a fault is that candidate's status, nothing more;
4. its outputs are compared with the reference's values (tolerances by dtype, or the caller's);
5. it is timed here, interleaved with the reference round by round (``workbench.measure.interleave``), so the
   ratio is a median of same-moment ratios whatever the clock does.
"""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from workbench.compile import portable
from workbench.measure.interleave import ratio, rounds
from workbench.run import isolate
from workbench.run.judge import reference_at_high_precision
from workbench.run.launch_record import poison_, with_blocks
from workbench.search.compile_job import Binary, node_name
from workbench.search.problem import Problem, format_exception
from workbench.search.space import Candidate

__all__ = ["Judge", "SetupError"]

WARMUP_MS = 5.0
REP_MS = 20.0


class SetupError(RuntimeError):
    """The problem cannot be judged on this GPU (the reference raised, the outputs cannot be found)."""


def _output_names(problem: Problem, values: dict[str, Any], expected: list[Any]) -> list[str]:
    """The arguments the reference's values are compared with: ``problem.outputs``, else for each value the last
    tensor (or descriptor) argument of its shape."""
    if problem.outputs:
        if len(problem.outputs) != len(expected):
            raise SetupError(f"the reference returned {len(expected)} value(s) for {len(problem.outputs)} outputs "
                             f"({', '.join(problem.outputs)})")
        return list(problem.outputs)
    names: list[str] = []
    tensors = [n for n in problem.record.args if problem.record.root(n) is not None]
    for e in expected:
        shape = tuple(getattr(e, "shape", ()))
        fits = [n for n in tensors if n not in names and tuple(_tensor(values[n]).shape) == shape]
        if not fits:
            raise SetupError(f"no tensor argument has the shape {list(shape)} of the reference's value: pass "
                             "outputs=['c'] naming the argument(s) the kernel writes")
        names.append(fits[-1])
    return names


def _tensor(v: Any) -> Any:
    return v.base if hasattr(v, "block_shape") and hasattr(v, "base") else v


def _tf32(binary: Binary) -> bool:
    """Whether the kernel's dots round fp32 operands to tf32 (read from the TTIR Triton's cache holds)."""
    from workbench.ir.mlir import dot_precisions

    ttir = next((v for k, v in binary.files.items() if k.endswith(".ttir")), b"")
    return "tf32" in dot_precisions(ttir.decode(errors="replace"))


class Judge:
    """Judges candidates of one problem at a time on this process's GPU (``device``)."""

    def __init__(self, device: int | None = None) -> None:
        import torch
        import triton

        if device is not None:
            torch.cuda.set_device(device)
        self.device = f"cuda:{torch.cuda.current_device()}"
        self.device_name = torch.cuda.get_device_name()
        triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device=self.device))
        self.problem: Problem | None = None
        self.files = Path(tempfile.mkdtemp(prefix="wb-search-"))
        self.kernels: dict[str, Any] = {}
        # the isolated worker each candidate's first launch runs in starts now, while the compiles run: its
        # imports and CUDA context (about 4 s) were on the first candidate's path (its judge_s on an H100)
        isolate.shared_worker()

    # ------------------------------------------------------------------ the problem
    def setup(self, problem: Problem, seed: int = 1234) -> dict[str, Any]:
        """Fresh inputs, the reference's values on them, the snapshot every candidate starts from."""
        import torch

        if self.problem is not None and self.problem.id == problem.id:
            self.problem = problem  # the same inputs and reference; its settings (timing rounds) may differ
            return self.info()
        t0 = time.perf_counter()
        self.problem = problem
        self.values, self.bufs = problem.record.build(self.device, seed=seed)
        self.snapshot = [b.clone() for b in self.bufs]
        self.positional = [self.values[n] for n in problem.positional]
        self.reference = portable.loads(problem.reference) if problem.reference else None
        self.tuner_hook = portable.loads(problem.tuner_pre_hook) if problem.tuner_pre_hook else None
        self.expected: list[Any] = []
        self.outputs: list[str] = []
        self.reference_note: str | None = None
        if self.reference is not None:
            try:
                got = self.reference(*self.positional)
                torch.cuda.synchronize()
            except Exception as e:
                raise SetupError(f"the reference raised {format_exception(e)}") from None
            self._restore()
            got, self.reference_note = reference_at_high_precision(
                lambda up: self.reference(*up(tuple(self.positional))), got)
            got = list(got) if isinstance(got, tuple | list) else [got]
            self.expected = [torch.as_tensor(g).detach().clone() for g in got]
            self._restore()
            self.outputs = _output_names(problem, self.values, self.expected)
        rec = problem.record
        out_storages = {rec.root(n).storage for n in self.outputs}
        self.input_dtypes = [rec.storages[i].dtype for i in {rec.root(n).storage for n in rec.args
                                                             if rec.root(n) is not None} if i not in out_storages]
        self.setup_s = time.perf_counter() - t0
        return self.info()

    def info(self) -> dict[str, Any]:
        return {"device": self.device_name, "node": node_name(), "pid": os.getpid(), "outputs": self.outputs,
                "setup_s": round(self.setup_s, 3), "reference_note": self.reference_note}

    def _restore(self) -> None:
        for b, s in zip(self.bufs, self.snapshot, strict=True):
            b.copy_(s)

    # ------------------------------------------------------------------ one candidate
    def _kernel(self, binary: Binary) -> Any:
        k = self.kernels.get(binary.hash)
        if k is None:
            from workbench.run.protocol import KernelRef
            from workbench.run.worker import Runner

            d = self.files / binary.hash
            d.mkdir(parents=True, exist_ok=True)
            paths = {}
            for name, data in binary.files.items():
                (d / name).write_bytes(data)
                paths[name] = str(d / name)
            ref = KernelRef("triton", binary.name, binary.hash, paths, binary.signature,
                            tuple(self.problem.arg_names))
            k = self.kernels[binary.hash] = Runner().kernel(ref)
        return k

    def _launch_args(self, cand: Candidate) -> tuple[dict[str, Any], list[Any]]:
        values = with_blocks(self.values, cand.blocks)
        full = {**values, **cand.options}
        return full, [None if n in self.problem.constexprs else full.get(n) for n in self.problem.arg_names]

    def _hooks(self, full: dict[str, Any], cand: Candidate) -> None:
        if cand.pre_hook is not None:
            cand.pre_hook(full)
        if self.tuner_hook is not None:
            self.tuner_hook(full)

    def judge(self, cand: Candidate, binary: Binary, *, timing: bool = True) -> dict[str, Any]:
        """One candidate's status, check and times (a dict for its row); never raises for the kernel's faults."""
        import torch

        from workbench.run.launching import launch_grid

        p = self.problem
        row: dict[str, Any] = {"index": cand.index, "gpu": self.device_name, "gpu_node": node_name()}
        t0 = time.perf_counter()
        kernel = self._kernel(binary)
        self._restore()
        for name in self.outputs:
            poison_(_tensor(self.values[name]))
        full, args = self._launch_args(cand)
        try:
            self._hooks(full, cand)
        except Exception as e:
            return row | {"status": "fault", "error": f"the pre_hook raised {format_exception(e)}"}
        grid = launch_grid(cand.grid or (1,), cand.options)
        torch.cuda.synchronize()
        consts = [n in p.constexprs for n in p.arg_names]
        out = isolate.launch(kernel, p.arg_names, consts, args, grid, key=binary.hash, timeout_s=p.timeout_s)
        row["run_s"] = round(time.perf_counter() - t0, 4)
        if not out.ok:
            hang = out.status == "timeout" and out.phase == "run"
            what = f"did not finish within {out.timeout_s:.3g} s" if hang else out.message or out.status
            return row | {"status": "hang" if hang else "fault", "error": f"{what} (phase {out.phase})"}
        t_check = time.perf_counter()
        row.update(self._check(binary))
        row["check_s"] = round(time.perf_counter() - t_check, 4)
        if row["status"] != "ok" or not timing:
            row["judge_s"] = round(time.perf_counter() - t0, 4)
            return row
        t_time = time.perf_counter()
        row.update(self._time({"candidate": self._call(kernel, grid, full, args, cand)}, p.rounds)["candidate"])
        row["time_s"] = round(time.perf_counter() - t_time, 4)
        row["judge_s"] = round(time.perf_counter() - t0, 4)
        return row

    def _check(self, binary: Binary) -> dict[str, Any]:
        """Each output against the reference's value under ``workbench.run.judge``'s rule (the caller's atol/rtol,
        else the default of the output's working precision), on the GPU; with the rule and the error."""
        from workbench.run.verify import compare

        if not self.expected:
            return {"status": "ok", "check": "no reference"}
        worst: dict[str, Any] = {}
        for name, exp in zip(self.outputs, self.expected, strict=True):
            got = _tensor(self.values[name])
            if tuple(got.shape) != tuple(exp.shape):
                got = got.reshape(exp.shape)
            r = compare(name, got, exp, self.problem.atol, self.problem.rtol, inputs=self.input_dtypes,
                        tf32=_tf32(binary))
            if r["status"] != "passed":
                return {"status": "check-failed", "error": f"{name}: {r['message']}",
                        "max_abs_err": r.get("max_abs_err"), "max_ulps": r["error"]["max_ulps"]}
            if not worst or (r["error"]["max_ulps"] or 0) > (worst["max_ulps"] or 0):
                worst = {"max_abs_err": r.get("max_abs_err"), "max_ulps": r["error"]["max_ulps"], "rule": r["rule"]}
        return {"status": "ok", "check": "passed", **worst}

    def _call(self, kernel: Any, grid: tuple[int, int, int], full: dict[str, Any], args: list[Any], cand: Candidate):
        launch = kernel[grid]
        hooked = cand.pre_hook is not None or self.tuner_hook is not None

        def call() -> None:
            if hooked:
                self._hooks(full, cand)
            launch(*args)

        return call

    def _time(self, runs: dict[str, Any], n: int) -> dict[str, Any]:
        """Median ms of each run over ``n`` interleaved rounds, and each one's ratio to the reference."""
        from workbench.measure.timing import bench

        if self.reference is not None:
            pos = self.positional
            runs = {**runs, "reference": lambda: self.reference(*pos)}
        last: dict[int, Any] = {}  # each run's result of the round before: its estimate is not made again

        def time_one(f: Any) -> float:
            last[id(f)] = bench(f, warmup_ms=WARMUP_MS, rep_ms=REP_MS, prior=last.get(id(f)))
            return last[id(f)].median_ms

        times = rounds(runs, n, time_one)
        out: dict[str, Any] = {}
        for k, ts in times.items():
            if k == "reference":
                continue
            out[k] = {"ms": statistics.median(ts), "rounds": len(ts)}
            if "reference" in times:
                out[k]["ref_ms"] = statistics.median(times["reference"])
                out[k]["ratio"] = ratio(times["reference"], ts)
        return out

    def confirm(self, cands: list[tuple[Candidate, Binary]], n: int) -> dict[int, dict[str, Any]]:
        """The leading candidates timed again together, interleaved round by round: {index: times}."""
        from workbench.run.launching import launch_grid

        runs = {}
        for cand, binary in cands:
            kernel = self._kernel(binary)
            full, args = self._launch_args(cand)
            runs[str(cand.index)] = self._call(kernel, launch_grid(cand.grid or (1,), cand.options), full, args, cand)
        return {int(k): v for k, v in self._time(runs, n).items()}
