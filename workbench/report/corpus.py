"""Kernels nobody here wrote, through the workbench: a corpus of library ops, each called as a ``%%tlx`` cell would.

An :class:`Op` is a package's own Python entry point (``LigerRMSNormFunction.apply``, ``flag_gems.ops.softmax``,
``fla.ops.gla.chunk_gla``, a Meta tutorial's kernel, ...) with CPU inputs of realistic shapes. :func:`run_op` calls
it inside the workbench's launch capture in compile mode (``workbench.run.capture.Capture``: no GPU, every launch
becomes a compile from its own arguments) and, for every kernel it launched, records one row: each feature's status
and seconds.

Features (``FEATURES``), in order:

- ``compile``: the capture's compile for sm_90 (the op's call itself: a raise there is the op's row);
- ``compile_sm100a``: the same launch compiled for Blackwell (``sm_100a``);
- ``layouts``: the layouts read from the TTGIR (at least one);
- ``line_maps``: every stage's line map from the kernel's source is non-empty;
- ``findings``: the static checks ran (``workbench.check``); error-level findings are counted (on a library
  kernel that is correct, each is a false alarm);
- ``report``: ``Report.from_artifact`` and its three representations (JSON within the budget, HTML, text);
- ``timeline``: the per-role timeline build (Proton scopes by role) compiles, for TLX kernels;
- ``reproducer``: ``workbench.export`` writes a script that, run by a plain ``python`` with no workbench
  importable, compiles the kernel to the workbench's warps and shared memory;
- ``tritonparse``: the exported TritonParse trace parses with ``tritonparse`` (when it is installed).

A status is ``ok``, ``skipped`` (not asked for, or not applicable: the ``detail`` says why), ``clear`` (a
:class:`~workbench.errors.WorkbenchError` or a failure whose message names what is outside the workbench's reach),
``limitation`` (a documented limitation: ``LIMITATIONS``), or ``crash`` (anything else: a workbench bug until shown
otherwise). :func:`summary` makes the per-package, per-feature table.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from workbench.errors import WorkbenchError

__all__ = ["FEATURES", "LIMITATIONS", "Op", "corpus_path", "limitation", "run_op", "run_reproducer", "summary",
           "summary_table"]

FEATURES = ("compile", "compile_sm100a", "layouts", "line_maps", "findings", "report", "timeline", "reproducer",
            "tritonparse")

#: Failures outside the workbench's reach, by a pattern of their message: (pattern, what it means). A match turns
#: a failure into status ``limitation`` with that text.
LIMITATIONS: list[tuple[str, str]] = [
    (r"NotImplementedError.*remote_view|remote_view.*NotImplementedError",
     "uTLX 3.8.0.post16 does not implement remote_view on this target (README, TLX facts)"),
    (r"cluster launch control lowers to MLIR ops .* exist only in Meta's TLX fork",
     "stock Triton 3.8 lacks the MLIR ops of Blackwell's cluster launch control (tlx.clc_consumer): they exist only "
     "in Meta's TLX fork"),
    (r"'_aggregate_type' object has no attribute 'element_ty'",
     "stock Triton 3.8 rejects this kernel without the workbench: a block pointer (tl.make_block_ptr, deprecated) "
     "has no .type.element_ty there; FlagGems 5.0.2 generates it for NVIDIA"),
]

# sys.path of a reproducer run: without any folder holding workbench or tlx_kernels (as a colleague's machine)
_WITHOUT_WORKBENCH = """
import os, runpy, sys
sys.path[:] = [p for p in sys.path
               if not any(os.path.isdir(os.path.join(p or '.', n)) for n in ('workbench', 'tlx_kernels'))]
script = sys.argv[1]
sys.argv = sys.argv[1:]
try:
    runpy.run_path(script, run_name='__main__')
finally:
    leaked = [m for m in ('workbench', 'tlx_kernels') if m in sys.modules]
    if leaked:
        print('IMPORTED', leaked)
        sys.exit(3)
"""


@dataclass
class Op:
    """One entry point of a package, called with CPU inputs: ``call()`` builds its inputs and calls it."""

    package: str
    name: str
    call: Callable[[], Any]
    targets: tuple[str, ...] = ("sm_90", "sm_100a")  # the capture's target first
    note: str = ""


@dataclass
class _Step:
    status: str = "skipped"
    seconds: float | None = None
    detail: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "seconds": None if self.seconds is None else round(self.seconds, 3),
                "detail": self.detail}


def corpus_path(folders: Sequence[str | Path]) -> contextlib.AbstractContextManager:
    """Put ``folders`` (where the corpus packages were installed ``--no-deps``) first on ``sys.path`` inside."""

    @contextlib.contextmanager
    def ctx() -> Iterator[None]:
        added = [str(f) for f in folders if str(f) not in sys.path]
        sys.path[:0] = added
        try:
            yield
        finally:
            for f in added:
                with contextlib.suppress(ValueError):
                    sys.path.remove(f)

    return ctx()


def _workbench_frame(tb: traceback.StackSummary) -> str | None:
    """The innermost frame of the workbench's own code (this module's calls of the op are not)."""
    here = Path(__file__).resolve()
    for f in reversed(tb):
        p = Path(f.filename)
        if "workbench" in p.parts and p.resolve() != here:
            return f"{'/'.join(p.parts[p.parts.index('workbench'):])}:{f.lineno}"
    return None


def limitation(text: str) -> str | None:
    """What a failure's message means when it is a documented limitation (``LIMITATIONS``), else None."""
    return next((meaning for pattern, meaning in LIMITATIONS if re.search(pattern, text, re.S)), None)


def _classify(exc: BaseException, op_call: bool = False) -> tuple[str, str]:
    """(status, detail) of a failure; ``op_call``: raised by the op's own call (a raise in the package's code or
    torch, with no workbench frame, is the op's: ``op-error``)."""
    text = f"{type(exc).__name__}: {exc}"
    if meaning := limitation(text):
        return "limitation", f"{meaning}: {text[:400]}"
    if isinstance(exc, WorkbenchError):
        hint = getattr(exc, "hint", None)
        return "clear", (text[:600] + (f" (hint: {hint})" if hint else ""))
    tb = traceback.extract_tb(exc.__traceback__)
    where = _workbench_frame(tb)
    if op_call and where is None:
        last = tb[-1] if tb else None
        at = f" [at {Path(last.filename).name}:{last.lineno}]" if last else ""
        return "op-error", text[:600] + at
    return "crash", text[:600] + (f" [workbench frame: {where}]" if where else "")


@contextlib.contextmanager
def _step(step: _Step, op_call: bool = False) -> Iterator[_Step]:
    t0 = time.perf_counter()
    try:
        yield step
        if step.status == "skipped":
            step.status = "ok"
    except Exception as e:  # each feature is measured on its own: one failing does not hide the others
        step.status, step.detail = _classify(e, op_call)
    finally:
        step.seconds = time.perf_counter() - t0


def _options(target: str) -> SimpleNamespace:
    """What a ``%%tlx --compile-only`` cell's options hold, for the Report and the export."""
    return SimpleNamespace(target=target, compile_only=True, check=None, atol=None, rtol=None, bench=False,
                           bench_ref=None, flops=None, bytes=None, timeline=None, stages=None, kernel=None,
                           interpret=False, export=None, output=None, quiet=True, sanitize=None, timeout=None,
                           no_isolate=False, diff=None, search=None)


def run_op(op: Op, workdir: str | Path | None = None, *, features: Sequence[str] = FEATURES,
           reproducer_env: dict[str, str] | None = None, reproducer_timeout: float = 300) -> list[dict[str, Any]]:
    """Call ``op`` inside a compile-mode launch capture; one row per kernel it launched (or one row for the op when
    its call failed or launched nothing). ``workdir``: where reproducers and traces are written (a temporary folder
    by default); ``reproducer_env``: environment of the reproducer runs (e.g. ``PYTHONPATH`` with the corpus)."""
    from workbench.run.capture import Capture
    from workbench.run.device import detect

    workdir = Path(workdir or tempfile.mkdtemp(prefix="wb-corpus-"))
    target = op.targets[0]
    device = detect()
    cap = Capture(device=device, target=target, compile_only=True, isolate=False)
    call = _Step()
    with _step(call, op_call=True), cap:
        op.call()
    # one row per kernel the op launched: the configs an autotuner run without a GPU only compiled are not rows
    entries = [e for e in cap.entries.values() if not e.tuning_only]
    base = {"package": op.package, "op": op.name, "target": target, "note": op.note or None}
    rows, pending = [], []
    for i, e in enumerate(entries):
        row, finish = _kernel_row(e, i, op, cap, device, call, workdir, features, reproducer_env, reproducer_timeout)
        merged = {**base, **row}
        row.clear()
        row.update(merged)  # the same dict: the reproducer's result lands in it
        rows.append(row)
        if finish is not None:
            pending.append(finish)
    for finish in pending:
        finish()
    if cap.failed_kernel is not None:  # a launch whose compile raised: that kernel's row, its compile failed
        k = cap.failed_kernel
        while not hasattr(k, "__name__") and hasattr(k, "fn"):
            k = k.fn
        rows.append({**base, "kernel": getattr(k, "__name__", repr(k)), "index": len(entries), "kind": None,
                     "op_call": call.to_dict(), "features": _not_compiled(call), "findings": {},
                     "seconds": round(call.seconds or 0.0, 3)})
    if not rows:
        if call.status == "ok":
            call.status, call.detail = "op-error", "the op launched no Triton kernel on CPU tensors"
        rows.append({**base, "kernel": None, "kind": None, "op_call": call.to_dict(),
                     "features": _not_compiled(call), "findings": {}})
    return rows


def _not_compiled(call: _Step) -> dict[str, dict[str, Any]]:
    return {f: (call.to_dict() if f == "compile" else _Step(detail="not compiled").to_dict()) for f in FEATURES}


def _kernel_row(e: Any, i: int, op: Op, cap: Any, device: Any, call: _Step, workdir: Path,
                features: Sequence[str], reproducer_env: dict[str, str] | None,
                reproducer_timeout: float) -> tuple[dict[str, Any], Callable[[], None] | None]:
    from workbench.compile.kernel_kinds import kernel_kind

    art = e.artifact
    steps = {f: _Step() for f in FEATURES}
    steps["compile"] = _Step("ok", (e.compile_ms or 0.0) / 1e3)
    # the op's call raising after this kernel compiled (e.g. a later launch's compile) is the op's, not this one's
    kind = kernel_kind(e.kernel)
    row: dict[str, Any] = {"kernel": e.name, "index": i, "kind": kind, "launches": e.launches,
                           "grid": list(e.grid) if e.grid else None, "op_call": call.to_dict(),
                           "num_warps": art.metadata.num_warps, "shared_bytes": art.metadata.shared_bytes,
                           "registers": art.metadata.registers, "spills": art.metadata.spills,
                           "source_file": getattr(art.source, "filename", None), "findings": {},
                           # its other autotune configs, compiled only (a config the autotuner would skip is said)
                           "configs_compiled_only": sum(x.tuning_only and x.name == e.name
                                                        for x in cap.entries.values())}
    want = set(features)
    if "compile_sm100a" in want:
        if "sm_100a" not in op.targets[1:]:
            steps["compile_sm100a"].detail = "not asked for this op (a Hopper-only kernel)"
        else:
            with _step(steps["compile_sm100a"]):
                _compile_again(e, "sm_100a")
    if "layouts" in want:
        with _step(steps["layouts"]) as s:
            n = len(art.layouts.values) if art.layouts is not None else 0
            row["layouts"] = n
            if n == 0:
                s.status, s.detail = "crash", "no layout read from the TTGIR"
    if "line_maps" in want:
        with _step(steps["line_maps"]) as s:
            sizes = {st: len(art.source_map(st)) for st in art.stages if st in ("ttir", "ttgir", "llir", "ptx", "sass")}
            row["line_maps"] = sizes
            empty = [st for st, n in sizes.items() if n == 0]
            if empty:
                s.status, s.detail = "crash", f"empty line map for {', '.join(empty)}"
    findings: list[dict[str, Any]] = []
    if "findings" in want:
        with _step(steps["findings"]) as s:
            from workbench.run.isolate import captured_findings

            findings = captured_findings(e)
            by = {}
            for f in findings:
                by[f.get("severity")] = by.get(f.get("severity"), 0) + 1
            row["findings"] = by
            errors = [f for f in findings if f.get("severity") == "error"]
            row["error_findings"] = [{"rule": f.get("rule"), "line": f.get("line"), "message": f.get("message")}
                                     for f in errors]
    report = None
    if "report" in want or "reproducer" in want or "tritonparse" in want:
        with _step(steps["report"]) as s:
            report = _report(e, cap, device, op.targets[0], findings)
            bundle = report._repr_mimebundle_()
            row["report_bytes"] = sum(len(json.dumps(v)) if not isinstance(v, str) else len(v)
                                      for v in bundle.values())
        if steps["report"].status != "ok":
            report = None
        if "report" not in want:
            steps["report"] = _Step()
    if "timeline" in want:
        if kind != "tlx":
            steps["timeline"].detail = f"a {kind} kernel: the per-role timeline is for TLX kernels"
        else:
            with _step(steps["timeline"]):
                from workbench.measure.timeline import compile_instrumented

                kernel, args, kwargs = _launch_args(e)
                compile_instrumented(kernel, *args, target=op.targets[0], **kwargs)
    stem = re.sub(r"\W", "_", f"{op.package}-{op.name}-{i}-{e.name}")[:120]
    finish = None
    if "reproducer" in want:
        if report is None:
            steps["reproducer"].detail = "no Report"
        else:
            with _step(steps["reproducer"]) as s:
                from workbench.report.export import export

                script = export(report, workdir / f"{stem}.py")
            if steps["reproducer"].status == "ok":  # runs in the background while the next kernels compile
                done = _pool().submit(run_reproducer, script, env=reproducer_env, timeout=reproducer_timeout)
                finish = _finish_reproducer(row, steps, script, done)
    if "tritonparse" in want:
        if report is None:
            steps["tritonparse"].detail = "no Report"
        else:
            with _step(steps["tritonparse"]) as s:
                from workbench.report.export import export

                folder = workdir / f"{stem}-trace"
                export(report, str(folder) + "/")
                s.status, s.detail = _parse_trace(folder, workdir / f"{stem}-parsed")
    row["features"] = {f: steps[f].to_dict() for f in FEATURES}
    row["seconds"] = round(sum(st.seconds or 0.0 for st in steps.values()), 3)
    return row, finish


_POOL: list[Any] = []


def _pool() -> Any:
    """One background thread for the reproducer subprocesses (a second core runs them)."""
    if not _POOL:
        from concurrent.futures import ThreadPoolExecutor

        _POOL.append(ThreadPoolExecutor(max_workers=1, thread_name_prefix="wb-corpus-reproducer"))
    return _POOL[0]


def _finish_reproducer(row: dict[str, Any], steps: dict[str, _Step], script: Path, done: Any) -> Callable[[], None]:
    def finish() -> None:
        rc, out, res = done.result()
        st = steps["reproducer"]
        st.seconds = (st.seconds or 0.0) + res.get("_seconds", 0.0)
        row["reproducer"] = {"script": str(script), "rc": rc, "seconds": round(res.get("_seconds", 0.0), 3),
                             "same_as_workbench": res.get("same_as_workbench"),
                             "not_reproduced": res.get("not_reproduced")}
        if rc != 0 or res.get("same_as_workbench") is not True or "IMPORTED" in out:
            st.status = "crash"
            st.detail = f"rc {rc}, same_as_workbench {res.get('same_as_workbench')}: {_last_error(out)}"
        row["features"]["reproducer"] = st.to_dict()
        row["seconds"] = round(sum(x.seconds or 0.0 for x in steps.values()), 3)

    return finish


def _launch_args(e: Any) -> tuple[Any, tuple, dict[str, Any]]:
    """(kernel, args, options) of the captured launch again, as it compiled (``tuners.resolved``: a direct
    ``workbench.compile(tuner, config=...)`` call's config applied): the kernel's parameters by position (a
    parameter may be named ``target``, as ``workbench.compile``'s keyword is), the rest (options) by name."""
    from workbench.compile.tuners import arg_names, resolved

    params = set(arg_names(e.kernel))
    bound = dict(e.bound)
    if "target" not in params:  # the target a direct workbench.compile call was given
        bound.pop("target", None)
    kernel, bound = resolved(e.kernel, bound)
    pos = []
    for n in arg_names(kernel):
        if n not in bound:
            break
        pos.append(n)
    return kernel, tuple(bound[n] for n in pos), {k: v for k, v in bound.items() if k not in pos}


def _compile_again(e: Any, target: str) -> Any:
    """The captured launch compiled for another target, from the same arguments."""
    from workbench.compile import compile as wb_compile

    kernel, args, kwargs = _launch_args(e)
    return wb_compile(kernel, *args, target=target, **kwargs)


def _report(e: Any, cap: Any, device: Any, target: str, findings: list[dict[str, Any]]) -> Any:
    from workbench.report.build import capture_report

    return capture_report(e, cap, device, _options(target), {}, findings=findings)


def _last_error(out: str) -> str:
    lines = [ln for ln in out.strip().splitlines() if ln.strip()]
    errs = [ln for ln in lines if re.match(r"\w*(Error|Exception)\b", ln.strip())]
    return (errs[-1] if errs else (lines[-1] if lines else ""))[:500]


def run_reproducer(script: str | Path, *flags: str, env: dict[str, str] | None = None,
                   timeout: float = 300) -> tuple[int, str, dict[str, Any]]:
    """(exit status, output, its ``--json`` result) of ``python script --json`` with no workbench importable."""
    script = Path(script)
    t0 = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, "-c", _WITHOUT_WORKBENCH, str(script), "--json", *flags],
                              capture_output=True, text=True, timeout=timeout, cwd=script.parent,
                              env={**os.environ, **(env or {})})
    except subprocess.TimeoutExpired:
        return 124, f"TimeoutExpired: the reproducer ran past {timeout} s", {"_seconds": time.perf_counter() - t0}
    out = proc.stdout + proc.stderr
    result: dict[str, Any] = {}
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("{"):
            with contextlib.suppress(ValueError):
                result = json.loads(line)
                break
    result["_seconds"] = time.perf_counter() - t0
    return proc.returncode, out, result


def _parse_trace(folder: Path, out: Path) -> tuple[str, str | None]:
    try:
        from tritonparse.parse.utils import unified_parse
    except ImportError:
        return "skipped", "tritonparse is not installed (pip install tlx-workbench[interop])"
    import gzip
    import logging

    log = logging.getLogger("tritonparse")
    level, log.level = log.level, logging.ERROR  # its per-callsite warnings and progress lines
    try:
        with open(os.devnull, "w") as null, contextlib.redirect_stdout(null):
            unified_parse(source=str(folder), out=str(out), overwrite=True)
    finally:
        log.setLevel(level)
    events = [json.loads(line) for f in out.glob("*_mapped.ndjson.gz") for line in gzip.open(f, "rt")]
    comps = [e for e in events if e.get("event_type") == "compilation"]
    if not comps:
        return "crash", "tritonparse parsed no compilation event from the trace"
    maps = comps[0].get("payload", {}).get("source_mappings") or {}
    if not (maps.get("python") and maps.get("ttgir")):
        return "crash", f"tritonparse mapped no source lines (have: {sorted(k for k, v in maps.items() if v)})"
    return "ok", None


# ------------------------------------------------------------------------------------------ the summary
STATUSES = ("ok", "clear", "limitation", "op-error", "crash", "skipped")


def summary(rows: Sequence[dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """{package: {feature: {tried, passed, clear, limitation, op_errors, crashes, skipped, median_s}, "all": ...}}.

    ``all``: the ops, the ops whose call failed before launching a kernel (``op_errors``: the package's own code
    raised on CPU inputs), the kernels launched, those compiled and given a Report (``report_rate`` of the kernels
    launched; ``report_rate_in_reach`` of those whose compile is not a documented limitation), the crashes (any
    feature), the false alarms (error-level findings on these kernels, which are
    correct) and the median seconds per kernel."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for pkg in dict.fromkeys(r["package"] for r in rows):
        mine = [r for r in rows if r["package"] == pkg]
        per: dict[str, dict[str, Any]] = {}
        for f in FEATURES:
            st = [r["features"].get(f) for r in mine if r.get("kernel") and r["features"].get(f)]
            counts = {s: sum(1 for x in st if x["status"] == s) for s in STATUSES}
            secs = [x["seconds"] for x in st if x["status"] == "ok" and x["seconds"] is not None]
            per[f] = {"tried": sum(counts[s] for s in STATUSES if s != "skipped"), "passed": counts["ok"],
                      "clear": counts["clear"], "limitation": counts["limitation"], "op_errors": counts["op-error"],
                      "crashes": counts["crash"], "skipped": counts["skipped"],
                      "median_s": round(statistics.median(secs), 3) if secs else None}
        kernels = [r for r in mine if r.get("kernel")]
        op_rows = [r for r in mine if not r.get("kernel")]
        reported = [r for r in kernels if r["features"].get("report", {}).get("status") == "ok"]
        per["all"] = {
            "ops": len({r["op"] for r in mine}), "op_errors": len(op_rows),
            "op_crashes": sum(1 for r in op_rows if r["op_call"]["status"] == "crash"),
            "kernels": len(kernels), "reported": len(reported),
            "report_rate": round(len(reported) / len(kernels), 4) if kernels else None,
            # of the kernels that Triton itself compiles (a compile failing as a documented limitation is not)
            "report_rate_in_reach": round(len(reported) / len(reach), 4) if (reach := [
                r for r in kernels if r["features"].get("compile", {}).get("status") != "limitation"]) else None,
            "crashes": sum(1 for r in mine for x in r["features"].values() if x["status"] == "crash"),
            "false_alarms": sum(r.get("findings", {}).get("error", 0) for r in kernels),
            "median_s_per_kernel": round(statistics.median([r["seconds"] for r in kernels if r.get("seconds")
                                                            is not None] or [0.0]), 3) if kernels else None}
        out[pkg] = per
    return out


def _percent(rate: float | None) -> str:
    return "-" if rate is None else f"{100 * rate:.1f}%"


def summary_table(rows: Sequence[dict[str, Any]]) -> str:
    """The summary as text: one block per package, one line per feature."""
    lines = []
    for pkg, per in summary(rows).items():
        a = per["all"]
        lines.append(f"{pkg}: {a['ops']} ops ({a['op_errors']} raised before launching a kernel, "
                     f"{a['op_crashes']} of them in the workbench), {a['kernels']} kernels launched, Report for "
                     f"{a['reported']} ({_percent(a['report_rate'])}; {_percent(a['report_rate_in_reach'])} of "
                     f"those Triton compiles), crashes {a['crashes']}, false alarms "
                     f"{a['false_alarms']}, median {a['median_s_per_kernel']} s per kernel")
        lines.append(f"  {'feature':16} {'tried':>5} {'passed':>6} {'clear':>5} {'limit':>5} {'op-err':>6} "
                     f"{'crash':>5} {'skip':>5} {'median s':>8}")
        for f in FEATURES:
            x = per[f]
            med = "-" if x["median_s"] is None else f"{x['median_s']:.3f}"
            lines.append(f"  {f:16} {x['tried']:5} {x['passed']:6} {x['clear']:5} {x['limitation']:5} "
                         f"{x['op_errors']:6} {x['crashes']:5} {x['skipped']:5} {med:>8}")
    return "\n".join(lines)
