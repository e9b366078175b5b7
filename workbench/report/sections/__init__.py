"""The Report's sections as a registry: one module of this package per section.

A section module holds ``SECTION``, a :class:`Section`: the payload ``kind`` it writes, its builder (the numbers,
computed here once, in Python), its one-line ``summary`` (the text and HTML renderings print it and the viewer
shows it as is), the ``%%tlx`` option that asks for it and the viewer tab that draws it (``tab``: a row's id in
extension/src/tabs.ts, whose drawing file only draws). A new section is one module here, one drawing file in
extension/src and one row in tabs.ts: the magic, the renderings and the viewer find it through this registry
(tests/report/test_sections.py keeps the modules and the rows one to one).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

__all__ = ["Inputs", "Section", "add_requested", "registry", "section", "summary_line"]


@dataclass(frozen=True)
class Inputs:
    """What an option's builder is given: the captured kernel (a ``run.capture.Captured``), the device, the magic's
    parsed options and the notebook's namespace."""

    entry: Any
    device: Any
    args: Any
    ns: dict[str, Any]


@dataclass(frozen=True)
class Section:
    """One section of a Report.

    ``kind``: the payload's kind (a measurement's ``kind``, or the Report field it fills). ``tab``: the viewer tab
    that draws it (None: a line in the header only). ``summary``: the payload in one line, without the kind.
    ``option``: the ``%%tlx`` option (an attribute of the parsed options) that asks for it; ``build`` then turns
    :class:`Inputs` into the payload, or a list of payloads for ``place == "measurements"``; ``place``: the Report
    field it goes to; ``progress``: what the progress line says while it builds (``{name}``: the kernel).
    ``built_by``: where a payload that no option asks for is built (the registry's index of builders). ``view``:
    what the viewer draws, computed from the payload (written into it as ``view``: the tab only draws it)."""

    kind: str
    tab: str | None = None
    summary: Callable[[dict[str, Any]], str] | None = None
    option: str | None = None
    build: Callable[[Inputs], Any] | None = None
    place: str = "measurements"
    progress: str | None = None
    built_by: str | None = None
    view: Callable[[dict[str, Any]], dict[str, Any]] | None = None


@cache
def registry() -> tuple[Section, ...]:
    """Every section, one per module of this package, in the modules' order."""
    out = []
    for mod in sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_")):
        sec = getattr(importlib.import_module(f"{__name__}.{mod}"), "SECTION", None)
        if not isinstance(sec, Section):
            raise TypeError(f"{__name__}.{mod} holds no SECTION (a Section)")
        out.append(sec)
    return tuple(out)


def section(kind: str) -> Section | None:
    """The section whose payloads are of ``kind``."""
    return next((s for s in registry() if s.kind == kind), None)


def summary_line(m: dict[str, Any]) -> str:
    """'bench: median 1.23 ms (...)' or 'bench: skipped, because <reason>'."""
    kind = str(m.get("kind", "?"))
    status = m.get("status", "ok")
    if status != "ok":
        because = f", because {m['reason']}" if m.get("reason") else ""
        return f"{kind}: {status}{because}"
    sec = section(kind)
    return f"{kind}: {sec.summary(m) if sec and sec.summary else 'ok'}"


def add_requested(report: Any, inputs: Inputs, note: Callable[[str], None] = lambda _: None) -> None:
    """Build every section the options ask for into ``report`` (in the registry's order), saying each on
    ``note`` (the progress line) first."""
    for sec in registry():
        if sec.option is None or sec.build is None or not getattr(inputs.args, sec.option, None):
            continue
        if sec.progress:
            note(sec.progress.format(name=inputs.entry.name))
        payload = sec.build(inputs)
        if sec.place == "measurements":
            report.measurements.extend(payload if isinstance(payload, list) else [payload])
        else:
            setattr(report, sec.place, payload)
