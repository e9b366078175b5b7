"""A recording whose profile buffer overflowed is made again, large enough: the size comes from libproton's own
overflow warnings (here the lines the H200 printed for tutorial 05's grouped GEMM, 2026-12-04)."""

from __future__ import annotations

import json
from pathlib import Path

from workbench.measure.timeline.drops import MAX_EVENTS_PER_WARP, events_needed, events_per_warp_for_rerecord
from workbench.measure.timeline.instrument import ModeSpec
from workbench.measure.timeline.run import EVENTS_PER_WARP, _after_overflow, default_spec

ROOT = Path(__file__).resolve().parents[3]
RECORDED = ROOT / "bench" / "results" / "notebooks" / "05-grouped-gemm-h200-2026-12-04.ipynb"


def recorded_warnings() -> list[str]:
    """libproton's lines in the recorded tutorial 05 notebook (its step 3 cell, --timeline)."""
    nb = json.loads(RECORDED.read_text())
    text = "".join("".join(o["text"]) for c in nb["cells"] for o in c.get("outputs", [])
                   if o.get("output_type") == "stream")
    return [ln for ln in text.splitlines() if "events are dropped" in ln]


def test_the_recorded_overflow_asks_for_the_next_power_of_two_above_a_quarter_more():
    lines = recorded_warnings()
    assert lines and all("(8192/" in ln for ln in lines)  # 8192 records held; up to 12234 wanted (CTA 0 ran longest)
    assert events_needed(lines) == 6117  # a start and an end record per scope instance
    assert events_per_warp_for_rerecord(lines, EVENTS_PER_WARP) == 8192  # 6117 * 1.25 = 7646 -> 8192


def test_no_overflow_no_rerecord_and_never_past_the_cap():
    assert events_needed(["Warning (cta3, warp4): something else"]) is None
    assert events_per_warp_for_rerecord([], EVENTS_PER_WARP) is None
    huge = ["Warning (cta0, warp0): first 9999999 events are dropped due to insufficient buffer size (8192/10000000)"]
    assert events_per_warp_for_rerecord(huge, EVENTS_PER_WARP) == MAX_EVENTS_PER_WARP
    assert events_per_warp_for_rerecord(huge, MAX_EVENTS_PER_WARP) is None  # nothing larger to try


def test_the_second_recording_gets_a_buffer_that_holds_it():
    spec = default_spec(None, num_warps=12)  # three role regions recorded: warps 0, 4, 8
    assert spec.sampled_warps == (0, 4, 8) and spec.capacity_events_per_warp() == EVENTS_PER_WARP
    bigger = _after_overflow(spec, recorded_warnings())
    assert bigger is not None and bigger.capacity_events_per_warp() == 8192
    assert bigger.buffer_size == 16 * 8192 * 3 and bigger.sampled_warps == spec.sampled_warps
    assert _after_overflow(bigger, []) is None
    assert _after_overflow(ModeSpec(buffer_type="shared"), recorded_warnings()) is None  # sized by Proton itself


def test_overflow_warnings_are_kept_for_the_timeline_and_not_echoed():
    """What C++ writes to fd 2 during a recording is captured; libproton's per-warp overflow lines (hundreds, in
    tutorial 05) go to the timeline's drop report, not back to the notebook; anything else is echoed. (In a
    subprocess: pytest's own capture replaces fd 2.)"""
    import subprocess
    import sys

    overflow = recorded_warnings()[0]
    code = (
        "import json, os\n"
        "from workbench.measure.timeline.instrument import capture_stderr_fd\n"
        "with capture_stderr_fd() as lines:\n"
        f"    os.write(2, {(overflow + chr(10) + 'something else from C++' + chr(10)).encode()!r})\n"
        "print(json.dumps(lines))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == [overflow, "something else from C++"]
    assert "something else from C++" in proc.stderr and "events are dropped" not in proc.stderr
