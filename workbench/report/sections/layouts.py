"""The layouts of the kernel's values (``workbench.analyse.layouts``: every TTGIR value's encoding in its Gluon
form, the declared layouts, what each maps to registers, lanes and warps); the viewer's Layouts tab draws them."""

from __future__ import annotations

from workbench.report.sections import Section

SECTION = Section(kind="layouts", tab="layouts", place="layouts",
                  built_by="workbench.report.report.Report.from_artifact")
