"""One candidate of an evaluation, judged in an isolated worker: every shape, ``trials`` fresh seeds, the guards
against faked results, then timing interleaved with the reference.

``evaluate_candidate(job)`` is a ``workbench.run.jobs`` job (the worker's process: a hang or a fault costs this
candidate alone). A candidate and the reference are Python callables (``"file.py:name"``, ``"module:name"`` or
``workbench.compile.portable`` bytes) taking the inputs ``make_inputs(shape, seed, device)`` returns and returning
the output(s). For each trial, in this order:

1. fresh inputs (the trial's seed; the maker runs once per shape and seed in a worker, each call gets a copy:
   ``_Inputs``), each tensor placed between canary bytes; a copy of them kept aside;
2. the candidate is called under the launch capture (its Triton kernels counted, compiled by the workbench: run in
   Triton's interpreter on a CPU) and an aten-op log; nothing the reference computed exists yet, so there is
   nothing to copy from;
3. the reference is called on the kept copy, then again on upcast inputs (``judge.reference_at_high_precision``),
   in a memory pool of its own on a GPU (so a candidate's ``torch.empty`` never hands back its values);
4. the judge's verdict per output, and the guards: inputs modified, canaries overwritten, an output that is an
   input's tensor, no Triton kernel launched, a kernel launched on a stream other than the caller's (the one the
   timing's events are on), torch's compute op that the reference uses, the reference itself
   called, patched timers or torch (``tamper.Watch``), the same output as the previous trial while the reference
   changed (a cached result); after the trials, the inputs refilled in place (same addresses, new values) must
   give a new, right output.

Then, if it passed: rounds of the reference and the candidate alternating (``tamper.Clock``, bound before any
candidate loaded); each round's ratio; flags for a speed-up over 10x, a spread over 10%, host-side work over half
the time, and event time far below the synchronized time (work on another stream). One row per candidate is
reported (``report("row", ...)``).
"""

from __future__ import annotations

import importlib
import importlib.util
import itertools
import math
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workbench.run.jobs import report
from workbench.run.judge import judge, reference_at_high_precision, rule_for
from workbench.run.launch_record import is_tensor, storage_key
from workbench.run.tamper import Clock, OpLog, Watch

__all__ = ["evaluate_candidate", "load_callable"]

PAD = 512  # canary bytes before and after each input (keeps the input's 16-byte alignment)
CANARY = 0x5A
SPEEDUP_FLAG = 10.0
SPREAD_FLAG = 0.10
SIDE_STREAM_RATIO = 0.5  # event time below this share of the synchronized time: work the event stream did not see

_WATCH: Watch | None = None  # made when this module loads in the worker, before any candidate's code
_CLOCK: Clock | None = None
_MODULES = itertools.count(1)


def _start(cuda: bool) -> tuple[Watch, Clock]:
    global _WATCH, _CLOCK
    if _WATCH is None:
        from workbench.compile.triton_reach import load_dynamo

        load_dynamo()  # it rebinds torch.manual_seed when it loads: before the watch, not during a candidate
        if cuda:
            import torch

            torch.cuda.init()

        _WATCH, _CLOCK = Watch(), Clock(cuda)
    return _WATCH, _CLOCK


def load_callable(spec: Any, fresh: bool = False) -> Callable[..., Any]:
    """A callable from ``"path/file.py:name"``, ``"module:name"`` or portable bytes; ``fresh``: a file is loaded
    as a module of its own (two candidates with the same file name never share one)."""
    if isinstance(spec, bytes):
        from workbench.compile import portable

        return portable.loads(spec)
    if callable(spec):
        return spec
    where, _, name = str(spec).rpartition(":")
    if not where or not name:
        raise ValueError(f"{spec!r}: expected 'file.py:name' or 'module:name'")
    if where.endswith(".py"):
        path = Path(where).resolve()
        if not path.is_file():
            raise FileNotFoundError(f"{spec!r}: no file {path}")
        mod_name = f"wb_candidate_{next(_MODULES)}_{path.stem}" if fresh else f"wb_file_{path.stem}"
        module = sys.modules.get(mod_name)
        if module is None:
            module_spec = importlib.util.spec_from_file_location(mod_name, path)
            module = importlib.util.module_from_spec(module_spec)
            sys.modules[mod_name] = module
            sys.path.insert(0, str(path.parent))
            try:
                module_spec.loader.exec_module(module)
            finally:
                sys.path.remove(str(path.parent))
    else:
        module = importlib.import_module(where)
    fn = getattr(module, name, None)
    if fn is None:
        raise AttributeError(f"{spec!r}: {where} has no {name!r}")
    return fn


# ---------------------------------------------------------------------------------------------------- tensors
def _outputs(v: Any) -> list[Any]:
    return list(v) if isinstance(v, tuple | list) else [v]


class _Guarded:
    """The trial's inputs, each contiguous tensor inside a buffer with ``PAD`` canary bytes on either side."""

    def __init__(self, inputs: tuple) -> None:
        import torch

        self.bufs: list[tuple[int, Any]] = []
        out = []
        for i, v in enumerate(inputs):
            if is_tensor(v) and v.is_contiguous() and v.numel():
                nbytes = v.numel() * v.element_size()
                buf = torch.full((nbytes + 2 * PAD,), CANARY, dtype=torch.uint8, device=v.device)
                view = buf[PAD:PAD + nbytes].view(v.dtype).view(v.shape)
                view.copy_(v)
                self.bufs.append((i, buf))
                out.append(view)
            else:
                out.append(v)
        self.inputs = tuple(out)
        self.kept = tuple(v.clone() if is_tensor(v) else v for v in self.inputs)

    def findings(self) -> list[str]:
        out = []
        for i, buf in self.bufs:
            before, after = int((buf[:PAD] != CANARY).sum()), int((buf[-PAD:] != CANARY).sum())
            if before or after:
                out.append(f"wrote outside input {i}: {before} canary bytes before it, {after} after it changed")
        for i, (v, k) in enumerate(zip(self.inputs, self.kept, strict=True)):
            if is_tensor(v) and not _same_bytes(v, k):
                out.append(f"modified input {i} (inputs are read-only: return the outputs)")
        return out

    def refill(self, fresh: tuple) -> None:
        """The values of ``fresh`` (the input maker's, for another seed: inputs keep the structure the op relies
        on, such as rotary tables whose halves are equal) in every input tensor, in place (same addresses), and in
        the kept copy."""
        for v, k, f in zip(self.inputs, self.kept, fresh, strict=True):
            if is_tensor(v) and is_tensor(f) and f.shape == v.shape and f.dtype == v.dtype:
                v.copy_(f)
                k.copy_(f)


def _same_bytes(a: Any, b: Any) -> bool:
    import torch

    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if not a.numel():
        return True
    return bool(torch.equal(a.reshape(-1).view(torch.uint8), b.reshape(-1).view(torch.uint8)))  # 0-dim too


# ---------------------------------------------------------------------------------------------------- inputs
class _Inputs:
    """The input maker's values per (shape, seed, device), made once per worker process and handed out as fresh
    copies: an evaluation asks for the same seeds of every candidate (eight per shape: the first call, the trials,
    the refill), and a maker that draws large tensors on the CPU costs more than the judging (4096^2 fp16 twice:
    ~0.2 s a call). The cache holds CPU copies (at most ``LIMIT_BYTES``; the oldest go first), so that no call can
    write into it; a maker whose tensors share memory (views of one buffer) is called every time."""

    LIMIT_BYTES = 4 << 30

    def __init__(self) -> None:
        self._made: dict[tuple, tuple] = {}
        self.hits = self.misses = 0

    def __call__(self, make: Callable[..., Any], key: Any, shape: Any, seed: int, device: str) -> tuple:
        import copy

        k = (key, repr(shape), seed, device)
        kept = self._made.get(k)
        if kept is not None:
            self.hits += 1
            return tuple(v.to(device, copy=True) if is_tensor(v) else copy.deepcopy(v) for v in kept)
        self.misses += 1
        made = tuple(make(shape, seed, device))
        tensors = [v for v in made if is_tensor(v)]
        if len({storage_key(t) for t in tensors}) == len(tensors):  # no two inputs alias each other
            self._made[k] = tuple(v.detach().to("cpu", copy=True) if is_tensor(v) else copy.deepcopy(v)
                                  for v in made)
            size = lambda vs: sum(v.numel() * v.element_size() for v in vs if is_tensor(v))  # noqa: E731
            while sum(size(vs) for vs in self._made.values()) > self.LIMIT_BYTES and len(self._made) > 1:
                self._made.pop(next(iter(self._made)))
        return made


_INPUTS = _Inputs()


def _inputs_key(spec: Any) -> Any:
    """What names an input maker across jobs: its spec (portable bytes by their digest)."""
    if isinstance(spec, bytes):
        import hashlib

        return hashlib.sha256(spec).hexdigest()
    return spec if isinstance(spec, str) else id(spec)


# ---------------------------------------------------------------------------------------------------- one trial
class _Reference:
    """The reference callable, with a flag raised when anyone calls it while ``armed`` (the candidate)."""

    def __init__(self, fn: Callable[..., Any], spec: Any) -> None:
        import functools

        functools.update_wrapper(self, fn)
        self.fn, self.armed, self.called = fn, False, False
        module = sys.modules.get(getattr(fn, "__module__", "") or "")
        name = getattr(fn, "__name__", "")
        if module is not None and getattr(module, name, None) is fn:  # a candidate that imports it gets the wrapper
            setattr(module, name, self)
        self.ops = OpLog()

    def __call__(self, *args: Any) -> Any:
        if self.armed:
            self.called = True
        return self.fn(*args)


def _pool(cuda: bool) -> Any:
    import contextlib

    if not cuda:
        return contextlib.nullcontext()
    import torch

    try:
        return torch.cuda.use_mem_pool(torch.cuda.MemPool())
    except Exception:
        return contextlib.nullcontext()


def _device(cuda: bool) -> Any:
    from workbench.run.device import Device, detect

    return detect() if cuda else Device(False, "none", None, None, "evaluation on the CPU (Triton's interpreter)")


class _Trial:
    """What one call of the candidate did and how it was judged."""

    def __init__(self) -> None:
        self.verdicts: list[Any] = []
        self.guards: list[str] = []
        self.kernels: list[str] = []
        self.outputs: list[Any] = []
        self.expected: list[Any] = []


@dataclass
class _Call:
    """One call of the candidate: its output, the kernels the capture compiled (with their IR), the names of the
    Triton kernels it launched, the torch ops it ran, and whether a launch went to a stream other than the caller's
    (the one the timing's events are on)."""

    out: Any
    entries: list[Any]
    launched: list[str]
    ops: OpLog
    elsewhere: bool


def _call_candidate(cand: Callable[..., Any], ref: _Reference, g: _Guarded, cuda: bool) -> _Call:
    """On a GPU every launch counts, the JIT's and a kept ``CompiledKernel``'s (``gpu_launches``); on a CPU, the
    capture's (Triton's interpreter)."""
    from workbench.run.capture import Capture
    from workbench.run.launch_patches import current_stream, gpu_launches

    log = OpLog()
    cap = Capture(device=_device(cuda), isolate=False, auto_interpret=not cuda)
    stream = current_stream() if cuda else None
    ref.armed = True
    try:
        with cap, log.recording(), gpu_launches() as seen:
            out = cand(*g.inputs)
    finally:
        ref.armed = False
    entries = [e for e in cap.entries.values() for _ in range(e.launches)]
    if not cuda:
        return _Call(out, entries, [e.name for e in entries], log, False)
    import torch

    torch.cuda.synchronize()
    return _Call(out, entries, [name for name, _ in seen], log, any(s != stream for _, s in seen))


def _interpreted(cand: Callable[..., Any]) -> Callable[..., Any]:
    """``cand`` with its Triton kernels run by Triton's interpreter (no GPU: the timing is the interpreter's)."""
    from workbench.run.capture import Capture

    def call(*args: Any) -> Any:
        with Capture(device=_device(False), isolate=False, auto_interpret=True):
            return cand(*args)

    return call


def _trial(cand: Callable[..., Any], ref: _Reference, inputs: tuple, job: dict, prev: _Trial | None) -> _Trial:
    t = _Trial()
    cuda = job["device"] != "cpu"
    g = _Guarded(inputs)
    call = _call_candidate(cand, ref, g, cuda)
    t.kernels = call.launched
    t.outputs = _outputs(call.out)
    with _pool(cuda):
        with ref.ops.recording():
            low = ref(*g.kept)
        expected, note = reference_at_high_precision(lambda up: ref(*up(g.kept)), low)
    t.expected = _outputs(expected)
    t.guards += g.findings()
    held = {storage_key(v) for v in g.inputs + g.kept if is_tensor(v)}
    if any(is_tensor(o) and storage_key(o) in held for o in t.outputs):
        t.guards.append("returned an input's tensor as its output")
    if not call.launched:
        t.guards.append("launched no Triton kernel (it computes with something else)")
    elif call.elsewhere:
        t.guards.append("launched its kernels on a CUDA stream of its own, not the caller's: the timed stream does "
                        "not see that work (launch on torch.cuda.current_stream())")
    shared = call.ops.compute() & ref.ops.compute()
    core = ref.ops.core()
    if shared:
        t.guards.append(f"runs torch's {', '.join(sorted(shared))}, as the reference does (not a kernel of its own)")
    elif core and core <= call.ops.ops:
        t.guards.append(f"runs every op the reference runs ({', '.join(sorted(core))}): it computes the reference")
    if ref.called:
        t.guards.append("called the reference")
    if len(t.outputs) != len(t.expected):
        t.guards.append(f"returned {len(t.outputs)} outputs, the reference {len(t.expected)}")
        return t
    rules = _rules(t.outputs, t.expected, g, call, job)
    for i, (o, e, rule) in enumerate(zip(t.outputs, t.expected, rules, strict=True)):
        t.verdicts.append(judge(o, e, label=f"output {i}", rule=rule))
    if prev is not None and prev.outputs and len(prev.outputs) == len(t.outputs):
        same = all(is_tensor(a) and is_tensor(b) and _same_bytes(a, b) for a, b in zip(prev.outputs, t.outputs,
                                                                                          strict=True))
        # the same output is evidence of a cached result only where it is wrong for these inputs: a bfloat16 loss
        # of two random batches can round to the same value (Liger's cross entropy on the H100)
        if same and not all(judge(a, e, rule=r).passed for a, e, r in zip(prev.outputs, t.expected, rules,
                                                                            strict=True)):
            t.guards.append("gave the same output for fresh inputs (a cached result)")
    if note:
        t.guards_note = note  # type: ignore[attr-defined]
    return t


def _rules(outputs: list[Any], expected: list[Any], g: _Guarded, call: _Call, job: dict) -> list[Any]:
    """The judge's rule for each output: its dtype, the inputs', the reference's, tf32 where the kernel's dots use
    it (read from the TTIR of what the call launched), the caller's atol/rtol."""
    tf32 = any("tf32" in _dots(e) for e in call.entries)
    dtypes = [v.dtype for v in g.kept if is_tensor(v) and v.is_floating_point()]
    return [rule_for(getattr(o, "dtype", e.dtype), dtypes, reference=e.dtype, tf32=tf32, atol=job.get("atol"),
                     rtol=job.get("rtol")) for o, e in zip(outputs, expected, strict=False)]


def _dots(entry: Any) -> set[str]:
    from workbench.ir.mlir import dot_precisions

    return dot_precisions(entry.artifact.stages.get("ttir", ""))


# ---------------------------------------------------------------------------------------------------- timing
def _timed(fn: Callable[[], Any], clock: Clock, rep_ms: float) -> tuple[float, float, float]:
    """(events ms, synchronized ms, host ms) per call, over about ``rep_ms`` of calls."""
    first = clock.synced_ms(fn, 1)
    n = max(1, min(1000, int(rep_ms / max(first, 1e-3))))
    clock.synced_ms(fn, max(1, n // 4))  # warm-up
    return clock.events_ms(fn, n), clock.synced_ms(fn, n), clock.host_ms(fn)


def _timing(cand: Callable[..., Any], ref: Callable[..., Any], inputs: tuple, job: dict, clock: Clock) -> dict:
    rounds, rep = int(job.get("rounds", 3)), float(job.get("rep_ms", 20.0))
    ratios, c_ms, r_ms, synced, host = [], [], [], [], []
    for _ in range(rounds):
        rev, _rs, _rh = _timed(lambda: ref(*inputs), clock, rep)
        cev, cs, ch = _timed(lambda: cand(*inputs), clock, rep)
        r_ms.append(rev)
        c_ms.append(cev)
        synced.append(cs)
        host.append(ch)
        ratios.append(rev / cev if cev > 0 else math.inf)
    med = statistics.median(c_ms)
    spread = (max(c_ms) - min(c_ms)) / med if med > 0 else 0.0
    flags = []
    speedup = statistics.median(ratios)
    if speedup > SPEEDUP_FLAG:
        flags.append(f"speed-up {speedup:.3g}x over the reference (over {SPEEDUP_FLAG:g}x: look twice)")
    if spread > SPREAD_FLAG:
        flags.append(f"timing spread {spread:.0%} across rounds")
    if statistics.median(host) > 0.5 * max(med, 1e-9):
        flags.append(f"host-side work: a call takes {statistics.median(host):.3g} ms to return, of {med:.3g} ms")
    side = clock.cuda and med < SIDE_STREAM_RATIO * statistics.median(synced)
    if side:
        flags.append(f"work outside the timed stream: {med:.3g} ms by events on the current stream, "
                     f"{statistics.median(synced):.3g} ms with the device synchronized")
    return {"ms": med, "ref_ms": statistics.median(r_ms), "speedup": speedup, "spread": spread,
            "synced_ms": statistics.median(synced), "host_ms": statistics.median(host), "rounds": rounds,
            "flags": flags, "side_stream": bool(side)}


# ---------------------------------------------------------------------------------------------------- the job
def _verdict_row(trials: list[_Trial]) -> dict[str, Any]:
    vs = [v for t in trials for v in t.verdicts]
    worst = max(vs, key=lambda v: (not v.passed, v.max_ulps or 0.0), default=None)
    return {"trials": len(trials), "passed": sum(all(v.passed for v in t.verdicts) and bool(t.verdicts)
                                                  for t in trials),
            "max_ulps": max((v.max_ulps for v in vs if v.max_ulps is not None), default=None),
            "p99_ulps": max((v.p99_ulps for v in vs if v.p99_ulps is not None), default=None),
            "norm_rel_err": max((v.norm_rel_err for v in vs if v.norm_rel_err is not None), default=None),
            "rule": worst.rule.text() if worst else None,
            "error": None if worst is None or worst.passed else worst.summary()}


def _shape(cand: Callable[..., Any], ref: _Reference, maker: Callable[..., Any], shape: Any, job: dict,
           watch: Watch, clock: Clock) -> tuple[dict[str, Any], list[str]]:
    device = job["device"]
    key = _inputs_key(job["inputs"])

    def make(shape: Any, seed: int, device: str) -> tuple:
        return _INPUTS(maker, key, shape, seed, device)

    trials: list[_Trial] = []
    guards: list[str] = []
    prev = None
    t0 = clock.perf()
    # a first call, not judged: what a library does once per problem (tuning, checking its configs) happens here
    _call_candidate(cand, ref, _Guarded(tuple(make(shape, int(job.get("seed", 0)) + 999, device))), device != "cpu")
    parts = {"first_call_s": clock.perf() - t0}  # the JIT's compile for this shape is in it
    for k in range(int(job.get("trials", 5))):
        inputs = tuple(make(shape, int(job.get("seed", 0)) + k, device))
        t = _trial(cand, ref, inputs, job, prev)
        trials.append(t)
        guards += [g for g in t.guards if g not in guards]
        prev = t
    parts["trials_s"] = clock.perf() - t0 - parts["first_call_s"]
    row = {"shape": shape, **_verdict_row(trials), "kernels": sorted(set(trials[-1].kernels))}
    ok = row["passed"] == row["trials"] and not guards
    if ok:  # the same addresses, new values: a result cached by address is caught here
        g = _Guarded(tuple(make(shape, int(job.get("seed", 0)) + 1000, device)))
        _call_candidate(cand, ref, g, device != "cpu")
        g.refill(tuple(make(shape, int(job.get("seed", 0)) + 2000, device)))
        call = _call_candidate(cand, ref, g, device != "cpu")
        expected, _ = reference_at_high_precision(lambda up: ref.fn(*up(g.kept)), ref.fn(*g.kept))
        outs, exps = _outputs(call.out), _outputs(expected)
        vs = [judge(o, e, rule=r) for o, e, r in zip(outs, exps, _rules(outs, exps, g, call, job), strict=False)]
        if not all(v.passed for v in vs):
            guards.append("gave a stale output after its inputs were refilled in place (a result cached by address)")
    changed = watch.changed()
    if changed:
        guards.append(f"replaced {', '.join(changed[:6])} (timers and torch are the harness's)")
        watch.restore()
    row["judge_s"] = round(clock.perf() - t0, 3)  # where an evaluation's time goes: judging, then timing
    parts["refill_s"] = row["judge_s"] - parts["first_call_s"] - parts["trials_s"]
    row["judge_parts_s"] = {k: round(v, 3) for k, v in parts.items()}  # the first call, the trials, the refill check
    if row["passed"] == row["trials"] and not guards and job.get("timing", True):
        t0 = clock.perf()
        inputs = tuple(make(shape, int(job.get("seed", 0)), device))
        timed = cand if device != "cpu" else _interpreted(cand)
        row.update(_timing(timed, ref.fn, inputs, job, clock))
        row["timing_s"] = round(clock.perf() - t0, 3)
        changed = watch.changed()
        if changed:
            guards.append(f"replaced {', '.join(changed[:6])} while being timed")
            watch.restore()
    return row, guards


def evaluate_candidate(job: dict[str, Any]) -> dict[str, Any]:
    """Judge and time one candidate on every shape (a ``workbench.run.jobs`` target); returns and reports its row."""
    cuda = job["device"] != "cpu"
    watch, clock = _start(cuda)
    row: dict[str, Any] = {"candidate": job["name"], "status": None, "shapes": [], "flags": [], "reasons": []}
    report("begin", job["name"])
    ref = _Reference(load_callable(job["reference"]), job["reference"])
    make = load_callable(job["inputs"])
    try:
        cand = load_callable(job["candidate"], fresh=True)
    except Exception as e:
        row.update(status="error", reasons=[f"cannot load: {type(e).__name__}: {e}"])
        report("row", row)
        return row
    changed = watch.changed()
    if changed:
        row["reasons"].append(f"replaced {', '.join(changed[:6])} when imported")
        watch.restore()
    for shape in job["shapes"]:
        try:
            r, guards = _shape(cand, ref, make, shape, job, watch, clock)
        except Exception as e:
            r, guards = {"shape": shape, "error": f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"}, []
            row["status"] = row["status"] or "error"
        row["shapes"].append(r)
        row["reasons"] += [g for g in guards if g not in row["reasons"]]
        row["flags"] += [f"shape {shape}: {f}" for f in r.pop("flags", [])]
    _conclude(row)
    report("row", row)
    return row


def _conclude(row: dict[str, Any]) -> None:
    shapes = row["shapes"]
    if row["reasons"]:
        row["status"] = "rejected"
    elif row["status"] is None:
        row["status"] = "passed" if shapes and all(s.get("passed") == s.get("trials") for s in shapes) else "failed"
    if row["status"] == "error":  # the candidate raised: the first shape where it did says what
        bad = next((s for s in shapes if s.get("error")), None)
        if bad is not None:
            row["reasons"].append(f"shape {bad['shape']}: raised {bad['error']}")
    if row["status"] == "failed":
        bad = next((s for s in shapes if s.get("passed") != s.get("trials")), None)
        if bad is not None:
            row["reasons"].append(f"shape {bad['shape']}: {bad.get('passed')} of {bad.get('trials')} trials passed: "
                                  f"{bad.get('error') or ''}".rstrip(": "))
    speedups = [s["speedup"] for s in shapes if s.get("speedup")]
    row["geomean_speedup"] = math.exp(statistics.fmean(math.log(x) for x in speedups)) \
        if speedups and len(speedups) == len(shapes) else None
    if any(s.get("side_stream") for s in shapes):
        row["status"] = "rejected"
        row["reasons"].append("its work ran outside the timed stream: the events saw less than half of it")
