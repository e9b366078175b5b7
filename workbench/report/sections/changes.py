"""``--diff`` / ``--compare``: how this Report differs from an earlier one (stages, metadata, layouts and, with
timings, where the time went: ``workbench.report.diff``); the viewer's Changes tab draws it."""

from __future__ import annotations

from typing import Any

from workbench.report.sections import Section


def summary(p: dict[str, Any]) -> str:
    changed = [s["name"] for s in p["stages"] if s["status"] != "same"]
    md_changes = ", ".join(f"{m['field']} {m['before']}->{m['after']}" for m in p["metadata"])
    what = p.get("label") or "previous run"
    if p["same_key"] and not changed:
        return f"diff vs {what}: no change"
    return f"diff vs {what}: stages changed: {', '.join(changed) or 'none'}" + (
        f"; {md_changes}" if md_changes else ""
    )


SECTION = Section(kind="previous", tab="changes", summary=summary, place="previous",
                  built_by="workbench.report.diff.diff_reports")
