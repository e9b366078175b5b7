"""A captured call's kernels (``workbench.measure.capture``: torch.profiler's per-kernel table of a Python call)."""

from __future__ import annotations

from typing import Any

from workbench.report.sections import Section
from workbench.report.sections._common import num


def summary(m: dict[str, Any]) -> str:
    ks = m.get("kernels") or []
    dev = num(m.get("device_ms"), ".4g")
    return f"{len(ks)} kernels" + (f", {dev} ms device time per call" if dev else "")


SECTION = Section(kind="capture", summary=summary, built_by="workbench.measure.capture.Capture.to_dict")
