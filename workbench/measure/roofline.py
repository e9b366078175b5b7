"""Roofline: intensity, bound, ridge, achieved fractions, and a plotly roofline chart."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from workbench.ir.json_values import json_num
from workbench.measure._env import gpu_available
from workbench.measure.ceilings import DTYPES, Ceilings, ceilings, normalize_dtype
from workbench.measure.charts import roofline_figure
from workbench.measure.counts import Counts, resolve_counts
from workbench.measure.timing import BenchResult

#: The datasheet used when no device is named and there is no GPU: the device the kernels are written for,
#: ``TLX_WORKBENCH_DEVICE`` (a name ``ceilings`` knows: "H100", "H200", ...), else the H200 this workbench targets.
DEFAULT_DEVICE = "H200"


def default_device() -> str:
    import os

    return os.environ.get("TLX_WORKBENCH_DEVICE") or DEFAULT_DEVICE


def _seconds(t: float | BenchResult | None) -> float | None:
    if t is None:
        return None
    if isinstance(t, BenchResult):
        return t.median_s
    return float(t)


@dataclass
class Point:
    """One kernel or reference on the chart."""

    name: str
    flops: float
    bytes: float
    seconds: float | None = None
    kind: str = "kernel"  #: "kernel" or "reference"

    @property
    def intensity(self) -> float:
        if self.bytes <= 0:
            return math.inf
        return self.flops / self.bytes

    @property
    def tflops(self) -> float | None:
        return None if not self.seconds else self.flops / self.seconds / 1e12

    @property
    def tbs(self) -> float | None:
        return None if not self.seconds else self.bytes / self.seconds / 1e12

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "flops": json_num(self.flops),
            "bytes": json_num(self.bytes),
            "seconds": json_num(self.seconds),
            "intensity": json_num(self.intensity),
            "tflops": json_num(self.tflops),
            "tbs": json_num(self.tbs),
        }


@dataclass
class Roofline:
    """Where one kernel sits against a device's roofs. Rates in TFLOP/s and TB/s."""

    name: str
    counts: Counts
    ceilings: Ceilings
    dtype: str
    seconds: float | None = None
    references: list[Point] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    # -- arithmetic -------------------------------------------------------------------------
    @property
    def flops(self) -> float:
        return self.counts.flops

    @property
    def bytes(self) -> float:
        return self.counts.bytes

    @property
    def intensity(self) -> float:
        """FLOP per byte of device-memory traffic."""
        return self.point.intensity

    @property
    def roofs(self) -> Ceilings:
        """The top roofs: the device's datasheet peaks where known (nothing runs above them), else the
        ceilings as they are."""
        ds = self.ceilings.datasheet
        return ds if self.ceilings.source == "measured" and ds is not None else self.ceilings

    @property
    def peak_tflops(self) -> float:
        return self.roofs.peak_tflops(self.dtype)

    @property
    def bandwidth_tbs(self) -> float:
        return self.roofs.bandwidth

    @property
    def measured_peak_tflops(self) -> float | None:
        """The measured compute ceiling (what cuBLAS reached), drawn as a second line; None when not measured."""
        if self.ceilings.source != "measured":
            return None
        v = self.ceilings.tflops.get(self.dtype)
        return None if v is None else float(v)

    @property
    def measured_bandwidth_tbs(self) -> float | None:
        return self.ceilings.bandwidth_tbs if self.ceilings.source == "measured" else None

    def label(self) -> str:
        """What the roofs are, in one line."""
        if self.measured_peak_tflops is not None and self.roofs is not self.ceilings:
            return f"{self.roofs.describe()} roofs; {self.ceilings.describe()} as a second line"
        return self.ceilings.describe()

    @property
    def ridge(self) -> float:
        """Intensity (FLOP/byte) where the memory roof meets the compute roof."""
        return self.peak_tflops / self.bandwidth_tbs

    @property
    def bound(self) -> str:
        return "compute" if self.intensity >= self.ridge else "memory"

    @property
    def known_bound(self) -> str | None:
        """:attr:`bound` when there is a byte count to place the kernel by; None without one (the intensity is
        unknown, and nothing is claimed)."""
        return self.bound if self.bytes > 0 else None

    @property
    def attainable_tflops(self) -> float:
        """The roof at this kernel's intensity: min(peak, bandwidth * intensity)."""
        return min(self.peak_tflops, self.bandwidth_tbs * self.intensity)

    @property
    def point(self) -> Point:
        return Point(self.name, self.flops, self.bytes, self.seconds, "kernel")

    @property
    def achieved_tflops(self) -> float | None:
        return self.point.tflops

    @property
    def achieved_tbs(self) -> float | None:
        return self.point.tbs

    @property
    def compute_fraction(self) -> float | None:
        t = self.achieved_tflops
        return None if t is None else t / self.peak_tflops

    @property
    def memory_fraction(self) -> float | None:
        t = self.achieved_tbs
        return None if t is None else t / self.bandwidth_tbs

    @property
    def roof_fraction(self) -> float | None:
        """Achieved over attainable: how close to the roof that binds it."""
        if self.seconds is None:
            return None
        if self.bound == "memory":
            return self.memory_fraction
        return self.compute_fraction

    # -- points -----------------------------------------------------------------------------
    def add_reference(
        self,
        name: str,
        seconds: float | BenchResult,
        flops: float | None = None,
        bytes: float | None = None,  # noqa: A002
    ) -> Roofline:
        """A reference point (e.g. cuBLAS on the same shape: same counts unless given)."""
        self.references.append(
            Point(
                name,
                self.flops if flops is None else float(flops),
                self.bytes if bytes is None else float(bytes),
                _seconds(seconds),
                "reference",
            )
        )
        return self

    # -- output -----------------------------------------------------------------------------
    def summary(self) -> str:
        c = self.counts
        est = " (estimated from the arguments)" if c.is_estimate else ""
        where = (f"intensity {self.intensity:.3g} FLOP/byte, {self.known_bound}-bound" if self.known_bound
                 else "intensity unknown (no byte count)")
        lines = [
            f"{self.name}: {self.flops:.4g} FLOP, {self.bytes:.4g} bytes{est}; {where} against "
            f"{self.ceilings.describe()} ({self.dtype} peak {self.peak_tflops:.0f} TFLOP/s, "
            f"{self.bandwidth_tbs:.2f} TB/s, ridge {self.ridge:.0f} FLOP/byte)"
        ]
        if self.seconds is not None:
            lines.append(
                f"  achieved {self.achieved_tflops:.1f} TFLOP/s ({self.compute_fraction:.0%} of peak), "
                f"{self.achieved_tbs:.3f} TB/s ({self.memory_fraction:.0%} of bandwidth)"
            )
        for r in self.references:
            if r.seconds:
                lines.append(f"  {r.name}: {r.tflops:.1f} TFLOP/s, {r.tbs:.3f} TB/s")
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)

    __str__ = summary

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form for the Report: numbers, ceilings, and the chart's data."""
        return {
            "name": self.name,
            "dtype": self.dtype,
            "flops": json_num(self.flops),
            "bytes": json_num(self.bytes),
            "counts": self.counts.to_dict(),
            "intensity": json_num(self.intensity),
            "bound": self.known_bound,
            "ridge": json_num(self.ridge),
            "peak_tflops": json_num(self.peak_tflops),
            "bandwidth_tbs": json_num(self.bandwidth_tbs),
            "attainable_tflops": json_num(self.attainable_tflops),
            "seconds": json_num(self.seconds),
            "achieved_tflops": json_num(self.achieved_tflops),
            "achieved_tbs": json_num(self.achieved_tbs),
            "compute_fraction": json_num(self.compute_fraction),
            "memory_fraction": json_num(self.memory_fraction),
            "roof_fraction": json_num(self.roof_fraction),
            "measured_peak_tflops": json_num(self.measured_peak_tflops),
            "measured_bandwidth_tbs": json_num(self.measured_bandwidth_tbs),
            "ceilings": self.ceilings.to_dict(),
            "ceilings_label": self.label(),
            # only what was timed is a point: an untimed kernel has no place under the roof
            "points": [p.to_dict() for p in [self.point, *self.references] if p.seconds],
            "notes": list(self.notes),
        }

    def figure(self, other_dtypes: bool = True):
        """A plotly log-log roofline chart: both roofs, the ridge, the kernel and reference points."""
        return roofline_figure(self, other_dtypes=other_dtypes)

    def _repr_html_(self) -> str:  # notebooks: the summary, charts are opt-in via .figure()
        import html

        return f"<pre>{html.escape(self.summary())}</pre>"


def _above_measured_roof(r: Roofline) -> str | None:
    """Why a kernel can sit above the measured compute ceiling (under the datasheet roof), when it does."""
    t, measured = r.achieved_tflops, r.measured_peak_tflops
    if t is None or measured is None or r.bound != "compute" or t <= measured:
        return None
    return (f"achieved {t:.0f} TFLOP/s is above the measured compute ceiling ({measured:.0f} TFLOP/s, the dashed "
            "line): that ceiling is what cuBLAS reached when it was measured, at that moment's clock (an H100/H200 "
            f"clock moves with temperature and power by 10% and more); the roof is the datasheet's {r.peak_tflops:.0f}")


def roofline(
    flops: float | None = None,
    bytes: float | None = None,  # noqa: A002
    seconds: float | BenchResult | None = None,
    *,
    device: Any = None,
    dtype: Any = "bf16",
    counts: Counts | Mapping[str, Any] | None = None,
    kernel: Any = None,
    grid: Any = (1, 1, 1),
    args: Any = None,
    name: str = "kernel",
    references: Mapping[str, float | BenchResult] | Sequence[Point] | None = None,
) -> Roofline:
    """Roofline of one kernel.

    Counts come from ``flops``/``bytes`` (per call), else ``counts`` (a Counts from
    ``gemm_counts``/``elementwise_counts``, shown as an estimate), else the ``launch_metadata``
    hook of ``kernel`` called with ``grid`` and ``args``. ``seconds`` (a float or a BenchResult)
    adds achieved TFLOP/s, TB/s and fractions. ``device``: None = the local GPU's measured
    ceilings, or the datasheet of ``default_device()`` when there is no GPU; a name (``"H100"``) = datasheet;
    a Ceilings object as is. ``references``: {"cuBLAS": seconds or BenchResult} on the same shape,
    or Point objects. No GPU is needed.
    """
    c = resolve_counts(flops, bytes, counts, kernel, grid, args)
    if c is None:
        raise ValueError(
            "roofline needs FLOP and byte counts: pass flops= and bytes=, counts=gemm_counts(a, b) "
            "or elementwise_counts(...), or a kernel with a launch_metadata hook."
        )
    notes: list[str] = []
    if c.is_estimate:
        notes.append(f"counts are an estimate from the arguments: {c.note}")
    if device is None and not gpu_available():
        device = default_device()
        notes.append(f"no GPU here: placed against the {device} datasheet (TLX_WORKBENCH_DEVICE names another)")
    ceil = ceilings(device)
    key = normalize_dtype(dtype)
    if key not in DTYPES:  # pragma: no cover - normalize_dtype guarantees it
        raise ValueError(dtype)
    r = Roofline(name=name, counts=c, ceilings=ceil, dtype=key, seconds=_seconds(seconds), notes=notes)
    above = _above_measured_roof(r)
    if above:
        r.notes.append(above)
    t = r.achieved_tflops
    if t is not None and t > r.peak_tflops * 1.001:
        r.notes.append(f"achieved {t:.0f} TFLOP/s is above the {r.peak_tflops:.0f} TFLOP/s peak "
                       f"({r.roofs.describe()}), which no kernel reaches: the FLOP count (--flops) or the timing is "
                       "wrong")
    if isinstance(references, Mapping):
        for ref_name, t in references.items():
            r.add_reference(ref_name, t)
    elif references:
        for p in references:
            r.references.append(Point(p.name, p.flops, p.bytes, p.seconds, "reference"))
    return r
