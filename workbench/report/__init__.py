"""Presentation: the JSON-serialisable Report of a ``%%tlx`` cell run, its schema and renderings.

``Report`` (report.py) is validated by ``schema.json`` (versioned: ``SCHEMA_VERSION``) and shown
through ``_repr_mimebundle_`` as ``application/vnd.tlx-workbench.report+json`` (the JupyterLab
extension), a script-free ``text/html`` fallback (html.py) and a ``text/plain`` summary (text.py).
"""

from __future__ import annotations

from workbench.report.diff import diff_reports
from workbench.report.report import (
    MIME_TYPE,
    SCHEMA_PATH,
    SCHEMA_VERSION,
    Report,
    jsonable,
    kernel_kind,
    load_schema,
    validate,
)

__all__ = [
    "MIME_TYPE",
    "SCHEMA_PATH",
    "SCHEMA_VERSION",
    "Report",
    "diff_reports",
    "jsonable",
    "kernel_kind",
    "load_schema",
    "validate",
]
