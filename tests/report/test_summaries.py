"""The Report's one-line summaries (the viewer's TypeScript twin: extension/src/summary.ts): a rate is shown only
for a count that was given."""

from workbench.measure.counts import Counts
from workbench.measure.report import _rate_counts
from workbench.report.summaries import _timing

TIMING = {"median_ms": 1.637, "p10_ms": 1.48, "p90_ms": 1.644, "runs": 64, "method": "cuda-events", "l2": "flushed",
          "stable": True, "flops": 9.62e11, "bytes": 0.0, "tflops": 587.7, "tbs": 0.0}


def test_no_tb_per_s_for_bytes_nobody_counted():
    line = _timing(TIMING)
    assert "587.7 TFLOP/s" in line and "TB/s" not in line
    assert "587.7 TFLOP/s, 2.016 TB/s" in _timing(dict(TIMING, bytes=3.3e9, tbs=2.016))


def test_the_timer_gets_no_count_of_zero():
    """--flops without --bytes: the timer is given bytes=None, so the timing has no TB/s at all."""
    assert _rate_counts(Counts(flops=9.6e11, bytes=0.0)) == {"flops": 9.6e11, "bytes": None}
    assert _rate_counts(None) == {"flops": None, "bytes": None}
    assert _rate_counts(Counts(flops=1.0, bytes=2.0)) == {"flops": 1.0, "bytes": 2.0}
