"""The roofline: where the timed launch sits against the device's compute and memory roofs (the bench section
builds its payload from ``--flops``/``--bytes``; this module words it, and the viewer's Roofline tab draws it)."""

from __future__ import annotations

from typing import Any

from workbench.report.sections import Section
from workbench.report.sections._common import num, pct


def summary(m: dict[str, Any]) -> str:
    known = num(m.get("intensity"), ".1f") is not None  # a bound stored without a byte count (old Reports) is no bound
    bits = [f"{m['bound']}-bound" if m.get("bound") and known else None]
    bits.append(f"intensity {m['intensity']:.1f} FLOP/B" if num(m.get("intensity"), ".1f")
                else "intensity unknown (no byte count: --bytes)")
    if num(m.get("achieved_tflops"), ".1f"):
        frac = pct(m.get("roof_fraction"))
        measured = m.get("measured_peak_tflops")
        vs = (f", {m['achieved_tflops'] / measured:.0%} of the measured ceiling"
              if m.get("bound") != "memory" and num(measured, ".0f") else "")
        old = "measured_peak_tflops" not in m and (m.get("roof_fraction") or 0) > 1  # its roof was the measured one
        what = (f" ({frac} of the measured ceiling: cuBLAS's rate at the clock of its measurement)" if old
                else f" ({frac} of the roof{vs})")
        bits.append(f"achieved {m['achieved_tflops']:.1f} TFLOP/s" + (what if frac else ""))
    if num(m.get("peak_tflops"), ".0f") and num(m.get("bandwidth_tbs"), ".2f"):
        bits.append(f"roofs {m['peak_tflops']:.0f} TFLOP/s, {m['bandwidth_tbs']:.2f} TB/s")
    if m.get("reason"):
        bits.append(str(m["reason"]))
    return " · ".join(b for b in bits if b) or "no counts"


SECTION = Section(kind="roofline", tab="roofline", summary=summary, built_by="workbench.measure.report.report_items")
