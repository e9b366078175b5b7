"""The Report's one-line summaries, written into each payload (``summary``) and shown by the viewer as they are:
a rate is shown only for a count that was given, a bound only with a byte count."""

from workbench.measure.timing import BenchResult
from workbench.report.sections.bench import timing_line as _timing
from workbench.report.sections.roofline import summary as _roofline

TIMING = {"median_ms": 1.637, "p10_ms": 1.48, "p90_ms": 1.644, "runs": 64, "method": "cuda-events", "l2": "flushed",
          "stable": True, "flops": 9.62e11, "bytes": 0.0, "tflops": 587.7, "tbs": 0.0}


def test_no_tb_per_s_for_bytes_nobody_counted():
    line = _timing(TIMING)
    assert "587.7 TFLOP/s" in line and "TB/s" not in line
    assert "587.7 TFLOP/s, 2.016 TB/s" in _timing(dict(TIMING, bytes=3.3e9, tbs=2.016))
    neither = _timing(dict(TIMING, flops=None, bytes=None, tflops=None, tbs=None))
    assert "TFLOP" not in neither and "TB/s" not in neither


def _timed(flops, bytes_):  # noqa: ANN001
    return BenchResult("k", 1.0, 0.9, 1.1, 1.0, 0.9, 10, 1, "cuda-events", "flushed", 0.2, True, 0.5,
                       flops=flops, bytes=bytes_)


def test_the_timer_gets_no_count_of_zero():
    """--flops without --bytes: the bytes count is 0, and the timing has no TB/s at all."""
    t = _timed(9.6e11, 0.0)
    assert t.tflops == 9.6e11 / 1e-3 / 1e12 and t.tbs is None and t.to_dict()["tbs"] is None
    assert _timed(None, None).tflops is None and _timed(None, None).tbs is None
    assert (_timed(1.0, 2.0).tflops, _timed(1.0, 2.0).tbs) == (1.0 / 1e-3 / 1e12, 2.0 / 1e-3 / 1e12)


def test_a_bound_stored_without_a_byte_count_is_not_shown():
    """Reports recorded before bounds needed bytes store "compute" with a null intensity: no bound is claimed."""
    old = {"kind": "roofline", "bound": "compute", "intensity": None, "peak_tflops": 989, "bandwidth_tbs": 4.8}
    assert "bound" not in _roofline(old) and "intensity unknown" in _roofline(old)
    assert _roofline(dict(old, intensity=1365.3)).startswith("compute-bound · intensity 1365.3 FLOP/B")


def test_without_a_byte_count_the_roofline_still_compares_with_the_measured_ceiling():
    line = _roofline({"kind": "roofline", "bound": None, "intensity": None, "achieved_tflops": 587.7,
                      "roof_fraction": 0.59, "measured_peak_tflops": 675, "peak_tflops": 989, "bandwidth_tbs": 4.8})
    assert "bound" not in line and "intensity unknown (no byte count: --bytes)" in line
    assert "87% of the measured ceiling" in line


def test_every_measurement_of_a_report_carries_its_line():
    from workbench.report.summaries import measurement_line

    stalls = {"kind": "stalls", "status": "ok", "reason": None, "samples": 1000, "mapped": {"role_and_line": 0.97},
              "by_reason": {"long_scoreboard": 600, "selected": 400}}
    assert measurement_line(stalls) == ("stalls: 1000 warp samples, 97.0% on a role and a line; most: "
                                        "long_scoreboard 60%")
    assert measurement_line({"kind": "stalls", "status": "skipped", "reason": "no GPU"}) == \
        "stalls: skipped, because no GPU"
