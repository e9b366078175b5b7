"""A TLX kernel's orchestration: its roles, buffers and barriers, and a simulated run's rounds and slot states, with
the static findings, a hang's live snapshot and a stress run's telling delays marked on it
(``workbench.report.orchestration``); the viewer's Orchestration tab draws it."""

from __future__ import annotations

from workbench.report.sections import Section

SECTION = Section(kind="orchestration", tab="orchestration", place="orchestration",
                  built_by="workbench.report.orchestration.build")
