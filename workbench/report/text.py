"""The short text/plain summary of a Report (terminals, nbconvert to text, logs)."""

from __future__ import annotations

from typing import Any


def _fmt_bytes(n: Any) -> str:
    if not isinstance(n, int):
        return "?"
    if n >= 1024:
        return f"{n / 1024:.1f} KiB"
    return f"{n} B"


def run_line(run: dict[str, Any]) -> str:
    grid = run.get("grid")
    g = f" grid={tuple(grid)}" if grid else ""
    if run.get("mode") == "gpu" and run.get("ran"):
        return f"ran on {run.get('device') or 'GPU'}{g}"
    if run.get("mode") == "interpreter" and run.get("ran"):
        return f"ran in Triton's CPU interpreter{g} ({run.get('reason') or 'no GPU'})"
    return f"not run{g}: {run.get('reason') or 'compiled only'}"


def check_line(c: dict[str, Any]) -> str:
    return f"check {c['expr']}: {c['status']}" + (f" ({c['message']})" if c.get("message") else "")


def summary(report: Any) -> str:
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
    bits.append("cache hit" if k.get("cache_hit") else "compiled")
    lines = [" · ".join(bits)]
    lines.append("stages: " + ", ".join(f"{s['name']} ({s['text'].count(chr(10)) + 1} lines)" for s in report.stages))
    runs = report.runs
    if runs:
        extra = f" (+{k.get('launches', len(runs)) - 1} more launches)" if k.get("launches", 0) > 1 else ""
        lines.append("run: " + run_line(runs[-1]) + extra)
    else:
        lines.append("run: none (compiled with workbench.compile)")
    for c in report.checks:
        lines.append(check_line(c))
    for m in report.measurements:
        status = m.get("status", "ok")
        lines.append(f"{m.get('kind')}: {status}" + (f" ({m['reason']})" if m.get("reason") else ""))
    if report.timeline:
        t = report.timeline
        lines.append(f"timeline: {t.get('status', 'ok')}" + (f" ({t['reason']})" if t.get("reason") else ""))
    for d in report.diagnostics:
        if d.get("source") == "run":
            continue  # the run line says it
        where = f"line {d['line']}: " if d.get("line") else ""
        lines.append(f"{d['severity']}: {where}{d['message']}")
    if report.previous:
        p = report.previous
        changed = [s["name"] for s in p["stages"] if s["status"] != "same"]
        md_changes = ", ".join(f"{m['field']} {m['before']}->{m['after']}" for m in p["metadata"])
        lines.append(
            "diff vs previous run: "
            + (
                "no change"
                if p["same_key"] and not changed
                else f"stages changed: {', '.join(changed) or 'none'}" + (f"; {md_changes}" if md_changes else "")
            )
        )
    return "\n".join(lines)
