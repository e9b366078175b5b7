"""How the GEMM and attention benches time one call (``--timing``), in one place.

- ``calls`` (the default): the call as a user makes it in a loop: back to back, L2 warm, CUDA events around each
  call (``workbench.measure.bench(..., flush_l2=False, graph=False)``), median. A call whose host work takes
  longer than its kernel shows that time (the GPU waits for the host), as it would in the user's program.
- ``flush``: ``triton.testing.do_bench`` (L2 flushed before each call, median): the kernel's time; the flush
  keeps the GPU busy while the host prepares the call, so host time hides unless it is longer than the flush.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

TIMINGS = {
    "calls": "back-to-back calls, L2 warm, CUDA events around each call, median (workbench.measure.bench)",
    "flush": "triton.testing.do_bench median, L2 flushed before each call",
}


def time_call(fn: Callable[[], Any], rep_ms: int, timing: str = "calls") -> float:
    """Milliseconds per call of ``fn`` (about ``rep_ms`` of timed calls after a quarter of that of warm-up)."""
    warmup = max(5, rep_ms // 4)
    if timing == "flush":
        import triton.testing as tt

        return float(tt.do_bench(fn, warmup=warmup, rep=rep_ms, return_mode="median"))
    if timing != "calls":
        raise ValueError(f"timing must be one of {sorted(TIMINGS)}, got {timing!r}")
    from workbench.measure.timing import bench

    return bench(fn, warmup_ms=warmup, rep_ms=rep_ms, flush_l2=False, graph=False).median_ms
