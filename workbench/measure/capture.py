"""`capture`: torch.profiler around a Python function, as a per-kernel table."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from workbench.ir.json_values import json_num
from workbench.measure._env import environment, require_gpu


def kernel_kind(name: str) -> str:
    low = name.lower()
    if low.startswith("memcpy"):
        return "memcpy"
    if low.startswith("memset"):
        return "memset"
    return "kernel"


def kernel_table(events: Iterable[tuple[str, float]], repeat: int = 1):
    """A DataFrame from (name, device microseconds) pairs: name, kind, calls, device time
    (total and per call, microseconds), share of the total; sorted by device time."""
    import pandas as pd

    rows: dict[str, list[float]] = {}
    for name, us in events:
        rows.setdefault(name, []).append(float(us))
    total = sum(sum(v) for v in rows.values())
    data = [
        {
            "name": name,
            "kind": kernel_kind(name),
            "calls": len(v) / repeat,
            "device_us": sum(v) / repeat,
            "mean_us": sum(v) / len(v),
            "share": (sum(v) / total) if total > 0 else 0.0,
        }
        for name, v in rows.items()
    ]
    cols = ["name", "kind", "calls", "device_us", "mean_us", "share"]
    df = pd.DataFrame(data, columns=cols)
    return df.sort_values("device_us", ascending=False, ignore_index=True)


@dataclass
class Capture:
    """What a function launched. Times are per call of the function (averaged over ``repeat``)."""

    table: Any  #: pandas DataFrame from kernel_table
    device_ms: float  #: sum of all kernel device times
    span_ms: float  #: first kernel start to last kernel end
    event_ms: float | None  #: CUDA-event time of the call, measured inside the profiled region
    repeat: int
    env: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def busy_fraction(self) -> float | None:
        """Kernel device time over the event-timed duration (1.0 = no gaps)."""
        return None if not self.event_ms else self.device_ms / self.event_ms

    def to_dict(self) -> dict[str, Any]:
        return {
            "kernels": self.table.to_dict(orient="records"),
            "device_ms": json_num(self.device_ms),
            "span_ms": json_num(self.span_ms),
            "event_ms": json_num(self.event_ms),
            "busy_fraction": json_num(self.busy_fraction),
            "repeat": self.repeat,
            "env": self.env,
            "notes": self.notes,
        }

    def __str__(self) -> str:
        head = f"{len(self.table)} kernels, {self.device_ms * 1e3:.1f} us device time per call"
        if self.event_ms:
            head += f" of {self.event_ms * 1e3:.1f} us event-timed ({self.busy_fraction:.0%} busy)"
        return head + "\n" + self.table.to_string(index=False)

    def _repr_html_(self) -> str:
        import html

        head = html.escape(str(self).splitlines()[0])
        return f"<p>{head}</p>" + self.table.to_html(index=False, float_format=lambda v: f"{v:.4g}")


def _device_events(prof) -> list[tuple[str, float, float]]:
    from torch.autograd import DeviceType

    out = []
    for e in prof.events():
        if e.device_type != DeviceType.CUDA:
            continue
        # record_function ranges also show up on the GPU timeline: they are not kernels
        if getattr(e, "is_user_annotation", False) or "annotation" in str(getattr(e, "activity_type", "")):
            continue
        name = getattr(e, "trace_name", None) or e.name
        out.append((name, float(e.time_range.start), float(e.time_range.end)))
    return out


def capture(fn: Callable[..., Any], *args: Any, warmup: int = 1, repeat: int = 1) -> Capture:
    """Run ``fn(*args)`` under torch.profiler (CPU + CUDA activities) and tabulate every kernel,
    memcpy and memset it launched: name, calls, device time, share. ``warmup`` calls run first,
    unprofiled; ``repeat`` calls are profiled and the table is per call. Raises
    GPURequiredError without a CUDA GPU."""
    torch = require_gpu("Kernel capture (torch.profiler with CUDA activities)")
    from torch.profiler import ProfilerActivity, profile

    for _ in range(warmup):
        fn(*args)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        start.record()
        for _ in range(repeat):
            fn(*args)
        end.record()
        torch.cuda.synchronize()
    event_ms = start.elapsed_time(end) / repeat
    events = _device_events(prof)
    notes = []
    if not events:
        notes.append("the profiler saw no device activity (did fn launch anything on the GPU?)")
    table = kernel_table(((n, e - s) for n, s, e in events), repeat=repeat)
    span_ms = (max(e for _, _, e in events) - min(s for _, s, _ in events)) / 1e3 / repeat if events else 0.0
    return Capture(
        table=table,
        device_ms=float(table["device_us"].sum()) / 1e3,
        span_ms=span_ms,
        event_ms=event_ms,
        repeat=repeat,
        env=environment(),
        notes=notes,
    )
