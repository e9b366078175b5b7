"""One colour and one label per timeline category, in the notebook's plotly chart (workbench.measure.timeline.chart)
and in the JupyterLab viewer (extension/src/plots.ts CATEGORY_STYLES): a category looks the same everywhere."""

from __future__ import annotations

import re
from pathlib import Path

from workbench.measure.timeline.chart import COLORS, LABELS
from workbench.measure.timeline.trace import CATEGORIES

PLOTS_TS = Path(__file__).resolve().parents[3] / "extension" / "src" / "plots.ts"


def extension_styles() -> dict[str, tuple[str, str]]:
    block = re.search(r"CATEGORY_STYLES[^=]*=\s*\{(.*?)\n\};", PLOTS_TS.read_text(), re.S).group(1)
    entries = re.findall(r"(\w+): \{ color: '(#[0-9a-f]{6})', label: '([^']*)' \}", block)
    return {name: (color, label) for name, color, label in entries}


def test_the_viewer_and_the_python_chart_style_every_category_alike():
    styles = extension_styles()
    assert styles == {cat: (COLORS[cat], LABELS[cat]) for cat in COLORS}
    assert set(CATEGORIES) <= set(styles)  # every category a trace can hold has a style
