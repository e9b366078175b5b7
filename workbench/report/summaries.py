"""One-line, plain-text summaries of what a Report ran, checked, found and measured, shared by the text and HTML
renderings and written into the payloads the viewer shows as they are (``summary``, ``provenance``).

Every measured figure comes with what measured it, on which device and when (``provenance``); a
payload that was not measured says why (``status: reason``).
"""

from __future__ import annotations

from typing import Any

from workbench.report.sections import section
from workbench.report.sections import summary_line as measurement_line  # the payload's section words it

__all__ = ["check_line", "finding_line", "measurement_line", "provenance", "run_line", "write_shown"]


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


def finding_line(f: dict[str, Any]) -> str:
    where = f"line {f['line']}: " if f.get("line") else ""
    return f"{f.get('severity', 'warning')} [{f.get('rule', '?')}] {where}{f.get('message', '')}"


def provenance(m: dict[str, Any]) -> str:
    """'measured by X on D at W' (the parts that are known)."""
    parts = []
    if m.get("measured_by"):
        parts.append(f"measured by {m['measured_by']}")
    if m.get("device"):
        parts.append(f"on {m['device']}")
    if m.get("when"):
        parts.append(f"at {m['when']}")
    return ", ".join(parts)


def write_shown(d: dict[str, Any]) -> None:
    """Into a Report's JSON form ``d``: each run's, check's and measurement's line in words (``summary``), each
    measurement's ``provenance`` and, where its section draws one, its ``view``: what the viewer shows as it is (it
    words and computes nothing itself)."""
    for m in [*(d.get("measurements") or []), d.get("timeline")]:
        if isinstance(m, dict) and m.get("kind"):
            m["summary"], m["provenance"] = measurement_line(m), provenance(m)
            sec = section(str(m["kind"]))
            if sec is not None and sec.view is not None and m.get("status", "ok") == "ok":
                m["view"] = sec.view(m)
    for run in d.get("runs") or []:
        run["summary"] = run_line(run)
        for c in run.get("checks") or []:
            c["summary"] = check_line(c)
