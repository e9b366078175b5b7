"""What `%%tlx --bench` puts in the Report: timing, roofline, comparison to a reference."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from workbench.ir.schema_types import MeasureError, Measurement
from workbench.measure._env import GPURequiredError, environment, gpu_available
from workbench.measure.counts import Counts, resolve_counts
from workbench.measure.roofline import roofline
from workbench.measure.timing import bench

SCHEMA = "tlx-workbench.measure/1"


def _error(exc: BaseException) -> MeasureError:
    return {"type": type(exc).__name__, "message": getattr(exc, "message", None) or str(exc)}


def bench_section(
    fn: Callable[[], Any],
    *,
    reference: Callable[[], Any] | None = None,
    reference_name: str = "reference",
    flops: float | None = None,
    bytes: float | None = None,  # noqa: A002
    counts: Counts | Mapping[str, Any] | None = None,
    kernel: Any = None,
    grid: Any = (1, 1, 1),
    args: Any = None,
    device: Any = None,
    dtype: Any = "bf16",
    name: str = "kernel",
    bench_options: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The Report's profile section as a JSON-serialisable dict; never raises for a missing GPU.

    ``fn`` (and ``reference``) are zero-argument callables that launch the kernel. Keys:
    ``schema``, ``timed`` (bool), ``message`` (why not timed, e.g. "Timing needs a CUDA GPU, ..."),
    ``timing`` and ``reference`` (BenchResult.to_dict() or None), ``ratio`` (reference median /
    kernel median: above 1 = faster than the reference), ``roofline`` (Roofline.to_dict() or None
    without counts; static, against ``device`` or the H100 datasheet, when not timed),
    ``errors`` (list of {type, message, where}), ``env``.
    """
    out: dict[str, Any] = {
        "schema": SCHEMA,
        "timed": False,
        "message": None,
        "timing": None,
        "reference": None,
        "ratio": None,
        "roofline": None,
        "errors": [],
        "env": environment(),
    }
    opts = dict(bench_options or {})
    try:
        c = resolve_counts(flops, bytes, counts, kernel, grid, args)
    except Exception as exc:
        c = None
        out["errors"].append({**_error(exc), "where": "counts"})
    t = ref = None
    if not gpu_available():
        try:
            bench(fn)
        except GPURequiredError as exc:
            out["message"] = exc.message
    else:
        try:
            t = bench(fn, name=name, flops=c.flops if c else None, bytes=c.bytes if c else None, **opts)
            out["timing"], out["timed"] = t.to_dict(), True
        except Exception as exc:
            out["errors"].append({**_error(exc), "where": "timing"})
        if reference is not None and t is not None:
            try:
                ref = bench(reference, name=reference_name, flops=c.flops if c else None,
                            bytes=c.bytes if c else None, **opts)
                out["reference"] = ref.to_dict()
                out["ratio"] = ref.median_ms / t.median_ms
            except Exception as exc:
                out["errors"].append({**_error(exc), "where": "reference"})
    if c is not None:
        try:
            refs = {reference_name: ref} if ref is not None else None
            r = roofline(counts=c, seconds=t, device=device, dtype=dtype, name=name, references=refs)
            out["roofline"] = r.to_dict()
        except Exception as exc:
            out["errors"].append({**_error(exc), "where": "roofline"})
    return out


def report_items(section: Mapping[str, Any]) -> list[Measurement]:
    """``bench_section``'s dict as items of the Report's ``profile`` list (schema 1.0 payloads:
    kind, status ok/skipped/error, reason, measured_by, device, when, then kind-specific fields)."""
    env = section.get("env") or {}
    timing = section.get("timing")
    errors = [e for e in section.get("errors", []) if e.get("where") in ("timing", "reference")]
    if timing is not None:
        status, reason = "ok", None
        measured_by = (
            f"workbench.measure.bench: {timing['method']}, L2 {timing['l2']}, median of {timing['runs']} runs"
        )
        device, when = timing["env"].get("device"), timing["env"].get("measured_at")
    else:
        status = "error" if errors else "skipped"
        reason = section.get("message") or ("; ".join(e["message"] for e in errors) or None)
        measured_by, device, when = None, env.get("device"), env.get("measured_at")
    items: list[Measurement] = [
        {
            "kind": "bench",
            "status": status,
            "reason": reason,
            "measured_by": measured_by,
            "device": device,
            "when": when,
            "timing": timing,
            "reference": section.get("reference"),
            "ratio": section.get("ratio"),
            "errors": list(section.get("errors", [])),
        }
    ]
    roof = section.get("roofline")
    if roof is not None:
        timed = roof.get("seconds") is not None
        items.append(
            {
                "kind": "roofline",
                "status": "ok",
                "reason": None if timed else "static: not timed",
                # what measured the kernel's point; an untimed kernel has none (its roofs are the datasheet's)
                "measured_by": measured_by if timed else None,
                "device": device if timed else None,
                "when": when if timed else None,
                **roof,
            }
        )
    return items
