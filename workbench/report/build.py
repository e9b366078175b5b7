"""One Report of one captured kernel: what the ``%%tlx`` magic and the corpus runner (a cell's launch run as the
magic would) both build. The magic adds its sections on top (checks, bench, timeline, stalls, diff)."""

from __future__ import annotations

from typing import Any

from workbench.check.values import launch_values
from workbench.report.export_launch import record_launch
from workbench.report.report import Report

__all__ = ["build_report"]


def build_report(entry: Any, cap: Any, device: Any, args: Any, ns: dict[str, Any], *,
                 findings: list[dict[str, Any]], diagnostics: list[dict[str, Any]] | None = None,
                 **context: Any) -> Report:
    """``entry`` (a ``Captured`` kernel of ``cap``) as a Report: its artifact, runs and launches, the device, the
    options ``args``, the values the checks simulated with, the launch record ``workbench.export`` needs (from the
    namespace ``ns``) and the static ``findings``. ``context``: more of ``Report.from_artifact``'s arguments (the
    cell, its id and execution count, the stages to show first)."""
    scalars = {k: v for k, v in entry.bound.items() if k not in ("artifact", "kernel", "grid")}
    r = Report.from_artifact(
        entry.artifact, kernel=entry.kernel, runs=entry.runs, launches=entry.launches, compile_ms=entry.compile_ms,
        device=device.to_dict(), options=dict(vars(args)),
        diagnostics=list(cap.diagnostics) if diagnostics is None else diagnostics,
        # the values the checks simulated with (the magic's findings): one run serves both, and a cell that only
        # compiles (workbench.compile, warmup) has them though it records no launch
        launch_values=(launch_values(entry.kernel, (), scalars), entry.grid) if entry.bound else None,
        **context)
    r.kernels = list(dict.fromkeys(x.name for x in cap.entries.values()))
    r.launch = record_launch(entry, args, ns)  # what workbench.export needs (not serialised)
    r.findings = findings
    return r
