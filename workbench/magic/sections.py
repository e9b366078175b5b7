"""What the ``%%tlx`` magic adds to a cell's Report, one small function each: checks of outputs, findings of the
static checks, the diff against an earlier run, and the diagnostics of the magic itself (the sections its options
ask for are built with the Report: ``workbench.report.build`` and the registry of ``workbench.report.sections``).
Each returns plain JSON-able data (the Report schema's payloads) and never raises for a missing GPU or an optional
layer: it says what was skipped and why.
"""

from __future__ import annotations

from typing import Any

from workbench.magic.options import magic_diagnostic, unquote
from workbench.report.report import kind_of
from workbench.run.capture import Capture, Captured, describe_arguments
from workbench.run.isolate import captured_findings
from workbench.run.verify import CheckSpec, evaluate, skipped

__all__ = ["after_bench", "diff", "findings", "isolation_note", "not_ran", "notes", "output_checks"]


def output_checks(specs: list[CheckSpec], args: Any, entries: list[Captured], ns: dict[str, Any],
                  sequence: list | None = None) -> list[dict]:
    """``--check`` expressions evaluated in the notebook's namespace after the cell ran, then (unless
    ``--no-fresh``) again after the cell's launches re-ran on fresh inputs with NaN-poisoned outputs."""
    if not specs:
        return []
    ran = [e for e in entries if e.ran]
    if entries and not ran:
        last = next((e.runs[-1] for e in reversed(entries) if e.runs), None)
        why = "nothing ran: " + (last["reason"] if last else "the cell only compiled (workbench.compile)")
        return [skipped(s, why) for s in specs]
    from workbench.run.fresh import combine, fresh_checks

    tf32 = uses_tf32(ran)
    checks = [evaluate(s, ns, args.atol, args.rtol, tf32=tf32) for s in specs]
    if sequence and not getattr(args, "no_fresh", False):
        fresh = fresh_checks(specs, ns, sequence, atol=args.atol, rtol=args.rtol, tf32=tf32)
        checks = [combine(c, f) for c, f in zip(checks, fresh)]
    return checks


def uses_tf32(entries: list[Captured]) -> bool:
    """Whether a kernel of the cell rounds fp32 dot operands to tf32 (the judge's working precision)."""
    from workbench.ir.mlir import dot_precisions

    return any("tf32" in dot_precisions(e.artifact.stages.get("ttir", "")) for e in entries)


def after_bench(specs: list[CheckSpec], checks: list[dict], args: Any, ns: dict[str, Any], reports: list,
                entries: list[Captured] = ()) -> None:
    """``--check`` again after ``--bench``'s timed launches rewrote the outputs (into ``checks``, in place)."""
    from workbench.run.fresh import combine

    timed = any(m.get("kind") == "bench" and m.get("status") == "ok" for r in reports for m in r.measurements)
    if not (specs and getattr(args, "bench", False) and timed):
        return
    tf32 = uses_tf32(list(entries))
    for s, c in zip(specs, checks):
        d = evaluate(s, ns, args.atol, args.rtol, tf32=tf32)
        d["message"] = f"after --bench's timed launches: {d['message']}"
        combine(c, d, key="after_bench")


def compile_only_run(entry: Captured) -> dict[str, Any]:
    """The run record of a kernel that was only compiled (so checks have a run to hang on)."""
    return {"mode": "compile", "ran": False, "grid": None, "elapsed_ms": None,
            "reason": "compiled with workbench.compile; nothing was launched", "device": None,
            "arguments": describe_arguments(entry.kernel, entry.bound), "checks": []}


def findings(entry: Captured, static: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """The static orchestration checks' findings on the compiled kernel (``workbench.check``; ``static``: already
    computed, as a failed launch's error carries them), then the ``--sanitize`` run's findings on the same lines."""
    sanitizer = list(getattr(entry, "sanitizer_findings", []))
    return list(captured_findings(entry) if static is None else static) + sanitizer


def diff(report: Any, how: Any, ns: dict[str, Any], history: dict, cell_id: str | None) -> dict | None:
    """``--diff``: the earlier Report to compare with (this cell's last run, or a variable); else a diagnostic."""
    from workbench.report.diff import diff_reports

    if how is True:
        prev = (history.get(("cell", cell_id, report.name)) if cell_id else None) or \
            history.get(("name", report.name))
        what = "no previous run of this cell to diff against"
    else:
        name = unquote(str(how))
        prev = ns.get(name)
        what = f"--diff {name}: no Report in variable {name!r}"
        if prev is None and not name.isidentifier():  # an expression, e.g. a search's candidate: s.report(3)
            try:
                prev = eval(compile(name, "<--diff>", "eval"), ns)  # noqa: S307 - the user's own expression
                what = f"--diff {name}: that is not a Report"
            except Exception as e:
                what = f"--diff {name} raised {type(e).__name__}: {e}"
        if isinstance(prev, list):
            prev = next((p for p in prev if getattr(p, "name", None) == report.name), None)
    if isinstance(prev, dict) or type(prev).__name__ == "Report":
        report.previous = diff_reports(prev, report, label=None if how is True else unquote(str(how)))
        return None
    return magic_diagnostic("info", what)


def notes(entry: Captured, args: Any) -> list[dict[str, Any]]:
    """The magic's notes on a kernel's launches: why it did not run, where it ran and what isolation cost, a
    ``--sanitize`` that could not watch anything."""
    kind = kind_of(entry.artifact, entry.kernel)
    found = (not_ran(entry, kind, args.compile_only), isolation_note(entry), sanitize_not_run(entry, args.sanitize))
    return [n for n in found if n]


def not_ran(entry: Captured, kind: str, compile_only: bool) -> dict[str, Any] | None:
    """Why a launched kernel did not run, and how it could."""
    if entry.ran or not entry.runs:
        return None
    hint = ("--check or --interpret runs plain Triton kernels in Triton's CPU interpreter" if kind == "triton"
            else f"{kind} kernels need a GPU to run; Triton's interpreter runs only plain tl.* kernels")
    if "not interpreted:" in (entry.runs[-1]["reason"] or ""):
        hint = "on a GPU the launch runs there and --check compares its outputs"
    return {"severity": "info", "source": "run", "line": None, "col": None,
            "message": f"nothing ran: {entry.runs[-1]['reason']}", "hint": None if compile_only else hint}


def sanitize_not_run(entry: Captured, sanitize: str | None) -> dict[str, Any] | None:
    """``--sanitize`` asked for a kernel that never ran on a GPU: say so (the viewer showed nothing)."""
    if not sanitize or any(r.get("mode") == "gpu" and r.get("ran") for r in entry.runs):
        return None
    hint = ("--check runs plain Triton kernels in Triton's interpreter here, which stops at an out-of-bounds "
            "access at its line; the static checks above flag unmasked accesses the launch proves out of bounds")
    return {"severity": "info", "source": "magic", "line": None, "col": None, "hint": hint,
            "message": f"--sanitize {sanitize}: not run, since nothing ran on a GPU (compute-sanitizer and ConSan "
                       "watch a GPU launch)"}


def isolation_note(entry: Captured) -> dict[str, Any] | None:
    """Where the launches ran and what isolation cost per launch (from the run records' ``isolation``)."""
    iso = [r["isolation"] for r in entry.runs if (r.get("isolation") or {}).get("mode") == "worker"
           and r["isolation"].get("overhead_ms") is not None]
    if not iso:
        return None
    over = sorted(i["overhead_ms"] for i in iso)
    kern = sorted(i["kernel_ms"] for i in iso if i.get("kernel_ms") is not None)
    n = len(iso)
    kernel = f", launch to GPU done {kern[len(kern) // 2]:.3g} ms" if kern else ""
    return {"severity": "info", "source": "run", "line": None, "col": None, "hint": "--no-isolate launches in the "
            "notebook's process (no watchdog)", "message": f"ran in the isolated worker (pid {iso[-1]['worker_pid']}): "
            f"isolation added {over[n // 2] * 1e3:.0f} us per launch (median of {n}){kernel}"}


def check_hint(c: dict[str, Any]) -> str | None:
    if c["status"] == "error":
        return "the expression is evaluated in the notebook's namespace after the cell ran"
    if c.get("max_abs_err") is not None and c.get("mismatched"):
        return (f"max abs error {c['max_abs_err']:.3g}, max rel error {c.get('max_rel_err') or 0:.3g}; "
                f"loosen with --atol/--rtol if that is expected")
    return None


def capture_for(args: Any, device: Any, checking: bool) -> Capture:
    return Capture(device=device, target=args.target, compile_only=args.compile_only, interpret=args.interpret,
                   auto_interpret=checking, isolate=not getattr(args, "no_isolate", False),
                   timeout=getattr(args, "timeout", None), sanitize=getattr(args, "sanitize", None),
                   snapshot=bool(getattr(args, "snapshot", False)),
                   timeline=bool(getattr(args, "timeline", False)))
