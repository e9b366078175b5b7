"""One colour and one label per timeline category, in the notebook's plotly chart (workbench.measure.timeline.chart)
and in the JupyterLab viewer, which draws the categories the timeline section's view gives it
(workbench.report.sections.timeline): a category looks the same everywhere, and the viewer keeps no styles of its
own."""

from __future__ import annotations

from pathlib import Path

from workbench.measure.timeline.chart import COLORS, LABELS
from workbench.measure.timeline.trace import CATEGORIES
from workbench.report.sections.timeline import OTHER, view

PLOTS_TS = Path(__file__).resolve().parents[3] / "extension" / "src" / "plots.ts"


def test_the_view_styles_every_category_as_the_python_chart_does_in_its_order():
    lanes = [{"category": c} for c in ["mma", "custom", "untracked", "waiting", "mma", "task"]]
    cats = view({"lanes": lanes})["categories"]
    assert [c["category"] for c in cats] == ["task", "waiting", "mma", "untracked", "custom"]
    for c in cats:
        want = (COLORS[c["category"]], LABELS[c["category"]]) if c["category"] in COLORS else (OTHER, "custom")
        assert (c["color"], c["label"]) == want
    assert set(CATEGORIES) <= set(COLORS) and set(CATEGORIES) <= set(LABELS)  # every category a trace holds


def test_the_viewer_keeps_no_styles_of_its_own():
    ts = PLOTS_TS.read_text()
    assert "CATEGORY_STYLES" not in ts and not any(label in ts for label in LABELS.values())
