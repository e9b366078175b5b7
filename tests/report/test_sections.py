"""The Report's sections as a registry (workbench.report.sections): one Python module per section, one row per tab in
the viewer's extension/src/tabs.ts, and nothing else to touch for a new one."""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path

from IPython.core.magic_arguments import parse_argstring

from workbench.magic.magic import TlxMagics
from workbench.report import sections
from workbench.report.report import SCHEMA_PATH
from workbench.report.summaries import measurement_line

ROOT = Path(__file__).resolve().parents[2]
TABS_TS = ROOT / "extension" / "src" / "tabs.ts"


def test_every_module_is_one_section_of_its_own_kind():
    regs = sections.registry()
    mods = sorted(p.stem for p in Path(sections.__file__).parent.glob("*.py") if not p.stem.startswith("_"))
    assert len(regs) == len(mods) >= 9
    kinds = [s.kind for s in regs]
    assert len(set(kinds)) == len(kinds), kinds


def test_the_python_tabs_are_the_viewer_rows_one_to_one():
    rows = re.findall(r"^\s*id: '([a-z_]+)',$", TABS_TS.read_text(), re.M)
    assert rows, "no rows found in tabs.ts"
    assert sorted(rows) == sorted(s.tab for s in sections.registry() if s.tab), (rows, sections.registry())


def test_every_option_a_section_answers_is_a_tlx_option():
    parser_args = parse_argstring(TlxMagics.tlx, "")
    for s in sections.registry():
        if s.option is not None:
            assert s.build is not None and hasattr(parser_args, s.option), s
            assert getattr(parser_args, s.option) in (None, False), f"--{s.option} is on by default"


def test_every_builder_named_exists():
    for s in sections.registry():
        if s.built_by:
            parts = s.built_by.split(".")
            for cut in range(len(parts), 0, -1):  # the longest importable module, then attributes
                try:
                    obj = importlib.import_module(".".join(parts[:cut]))
                except ImportError:
                    continue
                for attr in parts[cut:]:
                    obj = getattr(obj, attr)
                break
            else:
                raise AssertionError(f"{s.kind}: {s.built_by} does not import")
            assert callable(obj), s.built_by


def test_every_measurement_kind_of_the_schema_has_its_summary():
    schema = json.loads(SCHEMA_PATH.read_text())
    kinds = []
    for ref in schema["$defs"]["measurement"]["oneOf"]:
        kind = schema["$defs"][ref["$ref"].rsplit("/", 1)[1]]["properties"]["kind"]
        kinds += [kind["const"]] if "const" in kind else []
    assert {"bench", "roofline", "capture", "stalls"} <= set(kinds)
    for k in [*kinds, "timeline"]:
        s = sections.section(k)
        assert s is not None and s.summary is not None, k
    # a section words an ok payload itself; any not-ok one says its status and why
    assert measurement_line({"kind": "capture", "kernels": [1, 2], "device_ms": 0.5}) == \
        "capture: 2 kernels, 0.5 ms device time per call"
    assert measurement_line({"kind": "timeline", "status": "error", "reason": "boom"}) == \
        "timeline: error, because boom"
    assert measurement_line({"kind": "mystery"}) == "mystery: ok"


def test_the_json_form_carries_the_lines_the_viewer_shows():
    """Runs, checks and measurements carry their lines in words and measurements their provenance (2.7): the viewer
    words nothing itself (summary.ts only shows them)."""
    from workbench.report.report import Report

    d = json.loads((ROOT / "workbench" / "report" / "examples" / "gpu_h200_ws_coop_gemm.json").read_text())
    r = Report.from_dict(d).to_dict()
    run = r["runs"][-1]
    assert run["summary"] == "ran on NVIDIA H200 grid=(132,)"
    assert run["checks"][0]["summary"].startswith("check c3: a @ b: passed")
    bench = next(m for m in r["measurements"] if m["kind"] == "bench")
    assert bench["provenance"].startswith("measured by workbench.measure.bench") and "on NVIDIA H200" in \
        bench["provenance"]
    assert r["timeline"]["summary"].startswith("timeline: producer busy 31%")
    ts = re.sub(r"/\*.*?\*/", "", (ROOT / "extension" / "src" / "summary.ts").read_text(), flags=re.S)  # the code
    # the viewer words nothing: no twin of Python's wording (a Report from before 2.7 shows its stored fields)
    assert not any(w in ts for w in ("measured by", "ran on", "grid=", "because", "elements match"))


ROOF = {"kind": "roofline", "status": "ok", "reason": None, "dtype": "bf16", "intensity": 1000}


def test_the_roofline_view_draws_the_datasheet_roof_and_the_measured_ceiling_as_a_second_line():
    from workbench.report.sections.roofline import view

    v = view({**ROOF, "peak_tflops": 989, "bandwidth_tbs": 4.8, "measured_peak_tflops": 687,
              "measured_bandwidth_tbs": 4.2, "points": []})
    assert v["roofs"] == {"peak_tflops": 989, "bandwidth_tbs": 4.8, "measured_peak_tflops": 687,
                          "measured_bandwidth_tbs": 4.2}
    # a Report from before 2.1 stored its measured ceiling as the roof: the datasheet is the roof when drawn
    old = view({**ROOF, "peak_tflops": 687, "bandwidth_tbs": 4.2, "points": [],
                "ceilings": {"source": "measured", "datasheet": {"tflops": {"bf16": 989}, "bandwidth_tbs": 4.8}}})
    assert old["roofs"] == v["roofs"]
    assert view({**ROOF, "peak_tflops": None, "bandwidth_tbs": 4.8, "points": []})["roofs"] is None


def test_the_roofline_view_places_only_timed_points_and_moves_those_that_would_cover_each_other():
    from workbench.report.sections.roofline import view

    pts = [{"name": "k", "kind": "kernel", "intensity": 1000, "tflops": 700},
           {"name": "cuBLAS", "kind": "reference", "intensity": 1000, "tflops": 705},
           {"name": "untimed", "kind": "kernel", "intensity": 1000, "tflops": None}]
    v = view({**ROOF, "peak_tflops": 989, "bandwidth_tbs": 4.8, "points": pts})
    assert [p["name"] for p in v["placed"]] == ["k", "cuBLAS"] and v["timed"]
    assert v["placed"][1]["x"] > v["placed"][0]["x"] and v["placed"][1]["left"] and not v["placed"][0]["left"]
    only_ref = view({**ROOF, "peak_tflops": 989, "bandwidth_tbs": 4.8, "points": pts[1:]})
    assert not only_ref["timed"]  # the reference was timed, the kernel was not: its intensity is a dotted line


def test_an_ok_roofline_in_a_reports_json_form_carries_its_view():
    from workbench.report.report import Report

    d = json.loads((ROOT / "workbench" / "report" / "examples" / "tlx_ws_cooperative.json").read_text())
    roof = next(m for m in Report.from_dict(d).to_dict()["measurements"] if m["kind"] == "roofline")
    assert roof["view"]["roofs"]["peak_tflops"] > 0 and roof["view"]["timed"] is False
