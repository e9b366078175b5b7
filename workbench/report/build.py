"""The one way a Report is built, for the ``%%tlx`` magic, the corpus runner, a search's candidates and the
walkthroughs: ``build_report`` from a compiled artifact (its stages, layouts and orchestration), the static
findings, the sections the options ask for (the registry of ``workbench.report.sections``) and a search's rows;
``capture_report`` from a kernel a cell captured (its runs, launches, the values the checks simulated with and the
launch record ``workbench.export`` needs). A Report compared with an earlier one gets its Changes last, from the
finished Report (``workbench.report.diff``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from workbench.check.values import launch_values
from workbench.report.export_launch import record_launch
from workbench.report.report import Report
from workbench.report.sections import Inputs, add_requested

__all__ = ["build_report", "capture_report"]


def build_report(artifact: Any, *, kernel: Any = None, findings: list[dict[str, Any]] | None = None,
                 requested: Inputs | None = None, note: Callable[[str], None] = lambda _: None,
                 search: dict[str, Any] | None = None, **context: Any) -> Report:
    """``artifact`` (a ``workbench.compile`` Artifact) as a Report with the static ``findings``, the sections the
    options of ``requested`` ask for (each said on ``note`` first: the progress line) and a search's rows (the Search
    tab's payload). ``context``: more of ``Report.from_artifact``'s arguments (runs, device, the cell, its options,
    diagnostics, the stages to show first)."""
    r = Report.from_artifact(artifact, kernel=kernel, **context)
    r.findings = list(findings or [])
    r.search = search
    if requested is not None:
        add_requested(r, requested, note)
    return r


def capture_report(entry: Any, cap: Any, device: Any, args: Any, ns: dict[str, Any], *,
                   findings: list[dict[str, Any]], diagnostics: list[dict[str, Any]] | None = None,
                   measure: bool = False, note: Callable[[str], None] = lambda _: None, **context: Any) -> Report:
    """``entry`` (a ``Captured`` kernel of ``cap``) as a Report: its artifact, runs and launches, the device, the
    options ``args``, the values the checks simulated with, the launch record ``workbench.export`` needs (from the
    namespace ``ns``) and the static ``findings``; with ``measure``, the sections the options ask for (``--bench``,
    ``--timeline``, ``--stalls``). ``context``: more of ``Report.from_artifact``'s arguments (the cell, its id and
    execution count, the stages to show first, the runs when the magic added checks to them)."""
    context.setdefault("runs", entry.runs)
    r = build_report(
        entry.artifact, kernel=entry.kernel, findings=findings, launches=entry.launches, compile_ms=entry.compile_ms,
        device=device.to_dict(), options=dict(vars(args)),
        diagnostics=list(cap.diagnostics) if diagnostics is None else diagnostics,
        # the values the checks simulated with (the magic's findings): one run serves both, and a cell that only
        # compiles (workbench.compile, warmup) has them though it records no launch
        launch_values=(launch_values(entry.kernel, (), entry.scalars), entry.grid) if entry.bound else None,
        requested=Inputs(entry, device, args, ns) if measure else None, note=note, **context)
    r.kernels = list(dict.fromkeys(x.name for x in cap.entries.values()))
    r.launch = record_launch(entry, args, ns)  # what workbench.export needs (not serialised)
    return r
