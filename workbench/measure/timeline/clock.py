"""The SM clock, measured: Proton records cycles, and a timeline in nanoseconds needs the real clock.

Two measurements (both need a GPU):

- :func:`probe_clock`: a small Triton kernel, one warp per SM, reads ``%globaltimer`` (ns) and
  ``%clock64`` (cycles) around a ~4 ms dependent-FMA loop; MHz = cycles / ns * 1000 (median over SMs);
- :class:`ClockSampler`: NVML's (or ``nvidia-smi``'s) SM clock, sampled in a thread while the kernel
  under study runs, so it reflects the clock under that kernel's power draw.

``measure`` picks the sampler's median when it has samples (the clock the kernel itself ran at) and
reports both.
"""

from __future__ import annotations

import statistics
import subprocess
import threading
import time
from dataclasses import dataclass, field
from typing import Any


@dataclass
class ClockReading:
    mhz: float | None
    source: str
    probe_mhz: float | None = None
    sampled_mhz: list[float] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    trace_mhz: float | None = None  #: cycles over globaltimer inside the trace (a lower bound, a cross-check)

    def to_dict(self) -> dict[str, Any]:
        s = self.sampled_mhz
        return {
            "mhz": self.mhz,
            "source": self.source,
            "probe_mhz": self.probe_mhz,
            "sampled_mhz": {
                "n": len(s),
                "median": statistics.median(s) if s else None,
                "min": min(s) if s else None,
                "max": max(s) if s else None,
            },
            "trace_mhz": self.trace_mhz,
            "notes": self.notes,
        }


_PROBE: Any = None


def _probe_kernel() -> Any:
    global _PROBE
    if _PROBE is not None:
        return _PROBE
    import triton
    import triton.language as tl

    @triton.jit
    def clock_probe(out_ptr, n_iter, seed):
        pid = tl.program_id(0)
        x = seed + pid.to(tl.float32)
        t0 = tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l,f", [x], dtype=tl.int64, is_pure=False, pack=1)
        c0 = tl.inline_asm_elementwise("mov.u64 $0, %clock64;", "=l,f", [x], dtype=tl.int64, is_pure=False, pack=1)
        y = x + (c0 & 1).to(tl.float32) * 0.0
        for _ in range(n_iter):
            y = y * 0.999999 + 0.5
        c1 = tl.inline_asm_elementwise("mov.u64 $0, %clock64;", "=l,f", [y], dtype=tl.int64, is_pure=False, pack=1)
        t1 = tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l,f", [y], dtype=tl.int64, is_pure=False, pack=1)
        base = out_ptr + pid * 5
        tl.store(base + 0, t0)
        tl.store(base + 1, c0)
        tl.store(base + 2, t1)
        tl.store(base + 3, c1)
        tl.store(base + 4, y.to(tl.int64))

    _PROBE = clock_probe
    return _PROBE


def probe_clock(n_iter: int = 1_000_000, programs: int | None = None) -> float:
    """SM clock in MHz from ``%clock64`` over ``%globaltimer`` (median over one warp per SM)."""
    import torch

    k = _probe_kernel()
    dev = torch.cuda.current_device()
    n = programs or torch.cuda.get_device_properties(dev).multi_processor_count
    out = torch.zeros(n * 5, dtype=torch.int64, device="cuda")
    k[(n,)](out, 1000, 1.0, num_warps=1)  # compile + warm
    torch.cuda.synchronize()
    k[(n,)](out, n_iter, 1.0, num_warps=1)
    torch.cuda.synchronize()
    v = out.view(n, 5).cpu().tolist()
    rates = [(c1 - c0) / (t1 - t0) * 1000.0 for t0, c0, t1, c1, _ in v if t1 > t0 and c1 > c0]
    if not rates:
        raise RuntimeError("clock probe read no usable %globaltimer/%clock64 pairs")
    return float(statistics.median(rates))


def _nvml_reader() -> Any:
    try:
        import pynvml  # type: ignore[import-not-found]

        pynvml.nvmlInit()
        import torch

        h = pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())
        return lambda: float(pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM)), "nvml"
    except Exception:
        return None


def _smi_reader() -> Any:
    def read() -> float | None:
        try:
            import torch

            idx = torch.cuda.current_device()
            out = subprocess.run(
                ["nvidia-smi", "-i", str(idx), "--query-gpu=clocks.sm", "--format=csv,noheader,nounits"],
                capture_output=True,
                text=True,
                timeout=5,
            )
            return float(out.stdout.strip().splitlines()[0]) if out.returncode == 0 else None
        except Exception:
            return None

    return read, "nvidia-smi"


class ClockSampler:
    """``with ClockSampler() as s: run the kernel for a while`` -> ``s.samples`` (SM MHz)."""

    def __init__(self, interval_s: float = 0.02) -> None:
        self.interval_s = interval_s
        self.samples: list[float] = []
        self.source = "none"
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> ClockSampler:
        reader = _nvml_reader() or _smi_reader()
        read, self.source = reader

        def loop() -> None:
            while not self._stop.is_set():
                v = read()
                if v:
                    self.samples.append(v)
                self._stop.wait(self.interval_s)

        self._thread = threading.Thread(target=loop, daemon=True)
        self._thread.start()
        time.sleep(0.005)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)


def measure(sampled: list[float] | None = None, sampler_source: str = "nvml", probe: bool = True) -> ClockReading:
    """Combine the samples taken while the kernel ran with a probe-kernel reading."""
    notes: list[str] = []
    probe_mhz = None
    if probe:
        try:
            probe_mhz = probe_clock()
        except Exception as e:  # pragma: no cover - GPU only
            notes.append(f"clock probe failed: {type(e).__name__}: {e}")
    s = [x for x in (sampled or []) if x > 0]
    if s:
        mhz, source = float(statistics.median(s)), f"{sampler_source} SM clock while the kernel ran (median)"
        if probe_mhz and abs(probe_mhz / mhz - 1) > 0.03:
            notes.append(
                f"the probe kernel saw {probe_mhz:.0f} MHz, {100 * (probe_mhz / mhz - 1):+.1f}% from the clock "
                "sampled under the kernel (power or thermal clock changes)"
            )
    elif probe_mhz:
        mhz, source = probe_mhz, "probe kernel (%clock64 over %globaltimer)"
    else:
        mhz, source = None, "none (times assume Proton's 1000 MHz)"
    return ClockReading(mhz=mhz, source=source, probe_mhz=probe_mhz, sampled_mhz=s, notes=notes)


def trace_clock(trace: Any) -> float | None:
    """SM MHz seen in the trace itself: per CTA, the cycles between its first and last record over the
    globaltimer time between its start and the start of Proton's finalization (Proton 3.8 writes both
    into every event); median over CTAs. A lower bound (the records start after, and end before,
    the globaltimer stamps), close for CTAs that run long: a cross-check of the measured clock."""
    rates = []
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    for e in trace.events:
        first[e.cta] = min(first.get(e.cta, e.start), e.start)
        last[e.cta] = max(last.get(e.cta, e.end), e.end)
    for cta, (init, post, fin) in trace.cta_init_ns.items():
        ns = post - fin - init
        if cta in first and ns > 0 and last[cta] > first[cta]:
            rates.append((last[cta] - first[cta]) / ns * 1000.0)
    return float(statistics.median(rates)) if rates else None
