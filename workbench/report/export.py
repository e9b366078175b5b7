"""``workbench.export(report, path)``: what a ``%%tlx`` cell saw, written for use outside the workbench.

- ``*.py`` (or ``format="script"``): a standalone reproducer script (``export_script``);
- ``*.ndjson`` (or ``format="tritonparse"``): the compile and launch records in TritonParse's structured-log
  format (``export_tritonparse``), which ``tritonparse``'s parser and web viewer open; a folder (``traces/``):
  the same, named as TritonParse names its logs (its ``parse`` command reads a folder of those).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from workbench.errors import WorkbenchError
from workbench.report.export_launch import unquote

__all__ = ["FORMATS", "export", "format_of"]

FORMATS = {"script": ".py", "tritonparse": ".ndjson"}


def format_of(path: str | Path, format: str | None = None) -> str:  # noqa: A002 - the public keyword
    """The format asked for, or the one the file name says."""
    if format is not None:
        if format not in FORMATS:
            raise WorkbenchError(f"unknown export format {format!r}", hint=f"one of: {', '.join(FORMATS)}")
        return format
    if _folder(path):
        return "tritonparse"
    suffix = Path(path).suffix.lower()
    for name, ext in FORMATS.items():
        if suffix == ext:
            return name
    raise WorkbenchError(f"cannot tell what to export from the name {str(path)!r}",
                         hint="name a .py file (a reproducer script), a .ndjson file or a folder ending in / "
                              "(TritonParse's trace), or give format='script' or format='tritonparse'")


def export(report: Any, path: str | Path, format: str | None = None) -> Path:  # noqa: A002 - the public keyword
    """Write ``report`` (a ``%%tlx`` cell's Report) to ``path`` as a reproducer script or a TritonParse trace;
    the path written."""
    kind = format_of(path, format)
    if kind == "script":
        from workbench.report.export_script import write_script

        return write_script(report, path)
    from workbench.report.export_tritonparse import LOG_PREFIX, write_trace

    if _folder(path):  # the name tritonparse's parser picks up from a folder
        path = Path(path) / f"{LOG_PREFIX}{report.name}_{report.id[:8]}.ndjson"
    return write_trace(report, path)


def _folder(path: str | Path) -> bool:
    return str(path).endswith(("/", "\\")) or Path(path).is_dir()


def export_cell(reports: list[Any], paths: list[str], primary_artifact: Any) -> None:
    """``%%tlx --export PATH``: each path written from the cell's primary Report (its kernel launched last, else
    the last shown); what was written, or why not, becomes a diagnostic of that Report."""
    if not reports:
        return
    report = next((r for r in reports if r.artifact is primary_artifact), reports[-1])
    for raw in paths:
        path = os.path.expanduser(unquote(raw))  # a str: a trailing / says "a folder"
        try:
            kind = format_of(path)
            written = export(report, path)
            what = (f"a reproducer of {report.name}: python {written}" if kind == "script"
                    else f"{report.name}'s compile and launch records for TritonParse (tritonparse's parser and "
                         "viewer open it)")
            report.diagnostics.append(_note("info", f"--export: wrote {written}: {what}", None))
        except WorkbenchError as e:
            report.diagnostics.append(_note("warning", f"--export {raw}: {e.message}", e.hint))
        except Exception as e:  # an export never fails the cell: it says why it wrote nothing
            report.diagnostics.append(_note("warning", f"--export {raw}: {type(e).__name__}: {e}", None))


def _note(severity: str, message: str, hint: str | None) -> dict[str, Any]:
    return {"severity": severity, "source": "magic", "line": 1, "col": None, "hint": hint, "message": message}
