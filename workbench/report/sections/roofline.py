"""The roofline: where the timed launch sits against the device's compute and memory roofs (the bench section
builds its payload from ``--flops``/``--bytes``; this module words it, and the viewer's Roofline tab draws it)."""

from __future__ import annotations

import math
from typing import Any

from workbench.ir.json_values import json_num
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


def roofs(m: dict[str, Any]) -> dict[str, Any] | None:
    """The roof (the datasheet's) and the measured ceiling. A Report from before 2.1 stored its measured ceiling as
    the roof: its datasheet figures are in its ``ceilings`` and are the roof here."""
    peak, bw = json_num(m.get("peak_tflops")), json_num(m.get("bandwidth_tbs"))
    mpeak, mbw = json_num(m.get("measured_peak_tflops")), json_num(m.get("measured_bandwidth_tbs"))
    c = m.get("ceilings") if isinstance(m.get("ceilings"), dict) else {}
    sheet = c.get("datasheet") if isinstance(c.get("datasheet"), dict) else None
    if "measured_peak_tflops" not in m and c.get("source") == "measured" and sheet:
        dpeak = json_num((sheet.get("tflops") or {}).get(m.get("dtype") or "bf16"))
        dbw = json_num(sheet.get("bandwidth_tbs"))
        if dpeak is not None and dbw is not None:
            peak, bw, mpeak, mbw = dpeak, dbw, peak, bw
    if peak is None or bw is None:
        return None
    return {"peak_tflops": peak, "bandwidth_tbs": bw, "measured_peak_tflops": mpeak, "measured_bandwidth_tbs": mbw}


def placed(m: dict[str, Any]) -> list[dict[str, Any]]:
    """The timed points, each moved a few percent along x from the ones it would cover (same counts, close rates),
    its label on the other side."""
    out: list[dict[str, Any]] = []
    for pt in m.get("points") or []:
        x, y = json_num(pt.get("intensity")), json_num(pt.get("tflops"))
        if x is None or y is None or y <= 0 or x <= 0:
            continue
        near = sum(1 for o in out if abs(math.log(o["x0"] / x)) < 0.1 and abs(math.log(o["y"] / y)) < 0.08)
        out.append({"name": str(pt.get("name") or "kernel"), "kind": str(pt.get("kind") or "kernel"), "x0": x,
                    "x": x * 1.08**near, "y": y, "left": near % 2 == 1})
    return [{k: v for k, v in o.items() if k != "x0"} for o in out]


def view(m: dict[str, Any]) -> dict[str, Any]:
    """What the Roofline tab draws: the roofs, the placed points, whether the kernel itself was timed."""
    timed = any(p.get("kind") != "reference" and json_num(p.get("tflops")) is not None for p in m.get("points") or [])
    return {"roofs": roofs(m), "placed": placed(m), "timed": timed}


SECTION = Section(kind="roofline", tab="roofline", summary=summary, view=view,
                  built_by="workbench.measure.report.report_items")
