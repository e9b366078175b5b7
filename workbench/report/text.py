"""The short text/plain summary of a Report (terminals, nbconvert to text, logs)."""

from __future__ import annotations

from typing import Any

from workbench.report.sections import section
from workbench.report.summaries import check_line, finding_line, measurement_line, provenance, run_line

__all__ = ["check_line", "run_line", "summary"]


def _fmt_bytes(n: Any) -> str:
    if not isinstance(n, int):
        return "?"
    if n >= 1024:
        return f"{n / 1024:.1f} KiB"
    return f"{n} B"


def _head(report: Any) -> str:
    k = report.kernel
    md = report.metadata or {}
    bits = [str(k.get("name")), str(k.get("kind")), str(k.get("target"))]
    if md.get("num_warps") is not None:
        bits.append(f"{md['num_warps']} warps")
    if md.get("num_stages") is not None:
        bits.append(f"{md['num_stages']} stages")
    bits.append(f"{_fmt_bytes(md.get('shared_bytes'))} shared")
    if md.get("registers") is not None:
        bits.append(f"{md['registers']} regs")
    if md.get("spills") is not None:
        bits.append(f"{md['spills']} B spilled")
    tasks = md.get("tasks") or []
    if tasks and all(t.get("registers") is None for t in tasks):  # no setmaxnreg: every warp keeps the launch's
        bits.append("tasks " + ", ".join(f"{t.get('num_warps')}w" for t in tasks) + " (no register budgets)")
    elif tasks:
        bits.append("tasks " + ", ".join(f"{t.get('num_warps')}w/{t.get('registers') or '?'}r" for t in tasks))
    bits.append("cache hit" if k.get("cache_hit") else "compiled")
    return " · ".join(bits)


def _measured(report: Any) -> list[str]:
    lines = []
    items = list(report.measurements) + ([report.timeline] if report.timeline else [])
    for m in items:
        line = measurement_line(m)
        where = provenance(m) if m.get("status", "ok") == "ok" else ""
        lines.append(line + (f"\n  ({where})" if where else ""))
    return lines


def summary(report: Any) -> str:
    k = report.kernel
    lines = [_head(report)]
    lines.append("stages: " + ", ".join(f"{s['name']} ({len(s['text'].splitlines())} lines)" for s in report.stages))
    runs = report.runs
    if runs:
        extra = f" (+{k.get('launches', len(runs)) - 1} more launches)" if k.get("launches", 0) > 1 else ""
        lines.append("run: " + run_line(runs[-1]) + extra)
    else:
        lines.append("run: none (compiled with workbench.compile)")
    lines += [check_line(c) for c in report.checks]
    lines += [finding_line(f) for f in report.findings]
    lines += _measured(report)
    for d in report.diagnostics:
        if d.get("source") == "run":
            continue  # the run line says it
        where = f"line {d['line']}: " if d.get("line") else ""
        lines.append(f"{d['severity']}: {where}{d['message']}")
    if report.previous:
        lines.append(section("previous").summary(report.previous))
    return "\n".join(lines)
