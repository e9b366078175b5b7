"""Report model, schema, renderings and diff: no kernel compile needed (a hand-made Artifact)."""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import jsonschema
import pytest

from workbench.ir.artifact import Artifact, DeclaredLayout, Layouts, Metadata, SourceInfo, ValueLayout, ValueUse
from workbench.report import MIME_TYPE, SCHEMA_VERSION, Report, diff_reports, load_schema, validate
from workbench.report.highlight import highlight_lines, language_of_stage

EVIL = '<script>alert(1)</script><img src=x onerror="alert(2)">'

CELL = """%%tlx --check "out: x + y"
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)  # {evil}
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, x, mask=mask)
""".replace("{evil}", EVIL)

TTGIR = """#blocked = #ttg.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>
module attributes {"ttg.num-warps" = 4 : i32} {
  tt.func public @add_kernel(%arg0: !tt.ptr<f32>) attributes {note = "{evil}"} {
    %0 = tt.get_program_id x : i32 loc(#loc1)
    %1 = tt.make_range {end = 256 : i32, start = 0 : i32} : tensor<256xi32, #blocked> loc(#loc2)
    %2 = tt.load %arg0 : tensor<256x!tt.ptr<f32>, #blocked> loc(#loc3)
    tt.return
  }
}""".replace("{evil}", EVIL)

PTX = """.version 8.4
.target sm_90a
.visible .entry add_kernel(
	.param .u64 add_kernel_param_0
)
{
	mov.u32 	%r1, %ctaid.x;
	@%p1 ld.global.v4.b32 { %r2, %r3, %r4, %r5 }, [ %rd1 + 0 ];
$L__BB0_2:
	ret;
}"""

SASS = """        /*0000*/                   MOV R1, c[0x0][0x28] ;   /* 0x00000a0000017a02 */
        /*0010*/                   S2R R0, SR_CTAID.X ;     /* 0x0000000000007919 */
        /*0020*/              @!P0 LDG.E.128 R4, desc[UR4][R2.64] ;
        /*0030*/                   EXIT ;"""


def make_artifact(key: str = "k1", ptx: str = PTX, registers: int = 16) -> Artifact:
    use = ValueUse(value="offs", ttgir_line=5, user_line=5, type="tensor<256xi32, #blocked>", shape=[256], dtype="i32")
    decl = DeclaredLayout(
        alias="#blocked",
        kind="blocked",
        attr="#ttg.blocked<{sizePerThread = [4]}>",
        params={"sizePerThread": [4]},
        shared=False,
        uses=[use],
    )
    value = ValueLayout(
        name="offs",
        line=5,
        shape=[256],
        dtype="i32",
        layout="BlockedLayout([4], [32], [4], [0])",
        ttgir=decl.attr,
        reason=f"chosen by Triton {EVIL}",
    )
    return Artifact(
        name="add_kernel",
        target="sm_90",
        key=key,
        stages={"ttgir": TTGIR, "ptx": ptx, "sass": SASS},
        metadata=Metadata(
            name="add_kernel",
            target="sm_90",
            triton_version="3.6.0",
            num_warps=4,
            num_stages=3,
            num_ctas=1,
            shared_bytes=0,
            registers=registers,
            spill_stores=0,
            spill_loads=0,
        ),
        layouts=Layouts(declared=[decl], values=[value]),
        source=SourceInfo(
            filename="<tlx-cell-test>", first_line=2, text=CELL, kernel_text="\n".join(CELL.splitlines()[1:]) + "\n"
        ),
        line_maps={"ttgir": {4: [4], 5: [5], 7: [6]}, "ptx": {4: [7], 7: [8]}, "sass": {4: [2], 7: [3]}},
        diagnostics=[{"severity": "warning", "message": f"a warning {EVIL}", "line": 7, "hint": "do x"}],
    )


def make_report(**kw) -> Report:
    runs = [
        {
            "mode": "compile",
            "ran": False,
            "reason": "no GPU",
            "device": None,
            "grid": [4],
            "elapsed_ms": 0.1,
            "arguments": [
                {
                    "name": "x_ptr",
                    "kind": "tensor",
                    "dtype": "float32",
                    "shape": [1000],
                    "strides": [1],
                    "device": "cpu",
                },
                {"name": "n", "kind": "int", "value": 1000},
                {"name": "BLOCK", "kind": "constexpr", "value": 256},
            ],
            "checks": [
                {
                    "expr": "out: x + y",
                    "actual": "out",
                    "expected": "x + y",
                    "status": "skipped",
                    "message": "nothing ran",
                    "atol": None,
                    "rtol": None,
                    "max_abs_err": None,
                    "max_rel_err": None,
                    "mismatched": None,
                    "total": None,
                    "first_mismatch": None,
                }
            ],
        }
    ]
    return Report.from_artifact(
        make_artifact(**kw),
        cell_source=CELL,
        cell_filename="<tlx-cell-test>",
        runs=runs,
        launches=1,
        stages_first=["ptx"],
    )


def test_schema_is_valid_json_schema():
    schema = load_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert SCHEMA_VERSION in schema["properties"]["schema_version"]["enum"] and SCHEMA_VERSION == "2.8"


def test_report_validates_and_round_trips():
    r = make_report()
    d = r.to_dict()
    validate(d)
    text = r.to_json()
    again = Report.from_json(text)
    assert again.to_dict() == d
    assert d["cell"]["kernel_first_line"] == 2 and d["kernel"]["source"]["in_cell"]
    assert [s["name"] for s in d["stages"]] == ["ttgir", "ptx", "sass"]
    assert [s["language"] for s in d["stages"]] == ["mlir", "ptx", "sass"]
    assert [s["line_count"] for s in d["stages"]] == [len(t.splitlines()) for t in (TTGIR, PTX, SASS)]
    assert d["stages"][1]["line_map"] == {"4": [7], "7": [8]}
    assert d["view"] == {"stages_first": ["ptx"], "selected_stage": "ptx"}
    assert r.stage("ptx") == PTX and r.line_map("ptx") == {4: [7], 7: [8]}
    assert again.stage("ptx") == PTX


def test_large_texts_are_stored_once_compressed():
    big = "\n".join(f"\tmov.u32 \t%r{i}, {i};" for i in range(5000))
    r = make_report(key="big", ptx=big)
    d = r.to_dict()
    validate(d)
    ptx = next(s for s in d["stages"] if s["name"] == "ptx")
    assert "text" not in ptx and ptx["line_count"] == 5000
    assert len(ptx["text_gz"]) < len(big) / 3
    small = next(s for s in d["stages"] if s["name"] == "sass")
    assert small["text"] == SASS and "text_gz" not in small
    assert Report.from_dict(d).stage("ptx") == big
    assert json.dumps(d).count("mov.u32") == 0  # the text is not also in the JSON in the clear
    # the previous run's stage diffs too
    a, b = make_report(key="a", ptx=big), make_report(key="b", ptx=big.replace("mov.u32", "mov.b32"))
    b.previous = diff_reports(a, b)
    d = b.to_dict()
    validate(d)
    sd = next(s for s in d["previous"]["stages"] if s["name"] == "ptx")
    assert "diff_gz" in sd and "diff" not in sd
    assert Report.from_dict(d).previous["stages"][1]["diff"] == b.previous["stages"][1]["diff"]
    assert diff_reports(d, b)["stages"][1]["status"] == "same"  # a JSON-form Report diffs like a Report


def test_a_schema_1_report_still_loads():
    d = make_report().to_dict()
    d["schema_version"] = "1.0"
    for s in d["stages"]:
        s.pop("line_count")
    r = Report.from_dict(d)
    assert r.stage("ptx") == PTX
    validate(r.to_dict())


def test_invalid_report_is_rejected():
    d = make_report().to_dict()
    d["stages"][0]["line_map"] = {"four": [1]}
    with pytest.raises(jsonschema.ValidationError):
        validate(d)
    d = make_report().to_dict()
    del d["kernel"]
    with pytest.raises(jsonschema.ValidationError):
        validate(d)


def test_nan_and_inf_become_null():
    r = make_report()
    r.runs[0]["checks"][0]["max_abs_err"] = float("inf")
    r.measurements.append({"kind": "bench", "status": "ok", "reason": None, "ratio": float("nan")})
    d = r.to_dict()
    validate(d)
    assert d["runs"][0]["checks"][0]["max_abs_err"] is None
    json.dumps(d, allow_nan=False)


def test_mimebundle_has_three_types():
    b = make_report()._repr_mimebundle_()
    assert set(b) == {MIME_TYPE, "text/html", "text/plain"}
    validate(b[MIME_TYPE])
    json.dumps(b[MIME_TYPE], allow_nan=False)
    assert "add_kernel" in b["text/plain"] and "sm_90" in b["text/plain"]
    assert len(b["text/plain"].splitlines()) < 12
    only = make_report()._repr_mimebundle_(include=["text/plain"])
    assert set(only) == {"text/plain"}


def _markup(h: str) -> tuple[set[str], set[str]]:
    from html.parser import HTMLParser

    tags: set[str] = set()
    attrs: set[str] = set()

    class P(HTMLParser):
        def handle_starttag(self, tag, a):
            tags.add(tag)
            attrs.update(k for k, _ in a)

    P().feed(h)
    return tags, attrs


def test_html_is_self_contained_escaped_and_linked():
    r = make_report()
    h = r.to_html()
    tags, attrs = _markup(h)
    assert tags <= {"div", "style", "span", "b", "details", "summary", "table", "tr", "td", "th", "a", "code", "pre"}, (
        tags
    )
    assert not {a for a in attrs if a.startswith("on") or a in ("src", "srcdoc")}, attrs
    assert "&lt;script&gt;" in h and EVIL not in h
    pre = f"t{r.id[:8]}"
    # every stage is a section; --stages' first is open and comes first
    for name in ("TTGIR", "PTX", "SASS"):
        assert f"<summary>{name} ·" in h
    assert h.index("<summary>PTX") < h.index("<summary>TTGIR")
    assert re.search(rf'<details open id="{pre}-ptx">', h)
    # user line 7 links to PTX line 8 and back
    assert f'href="#{pre}-ptx-L8"' in h and f'id="{pre}-ptx-L8"' in h
    assert f'id="{pre}-src-L7"' in h and f'href="#{pre}-src-L7"' in h
    # highlighted: pygments classes on the PTX register; the MLIR stage plain (its lexer is the viewer's)
    assert re.search(r'<span class="nv">\s*%r1</span>', h)
    assert "tt.load" in h and not re.search(r'<span[^>]*>\s*tt\.load', h)
    # layouts, diagnostics and the skipped check (with its reason) are shown
    assert "BlockedLayout([4], [32], [4], [0])" in h and "a warning" in h
    assert "nothing ran" in h
    # left-aligned code whatever the host's table style (nbconvert right-aligns td)
    assert ".tlxr *{text-align:left}" in h and "table.code td{padding:0 6px;vertical-align:top;white-space:pre;" \
        "text-align:left" in h


def test_html_shows_the_head_of_each_stage_and_where_the_rest_is():
    from workbench.report import html as html_mod

    big = "\n".join(f"\tmov.u32 %r{i}, {i};" for i in range(5000))
    r = make_report(key="big", ptx=big)
    h = r.to_html()
    assert f"{5000 - html_mod.STAGE_HEAD} more lines" in h
    assert re.search(rf">\s*%r{html_mod.STAGE_HEAD - 1}<", h) and not re.search(rf">\s*%r{html_mod.STAGE_HEAD}<", h)
    assert "report.stage(NAME)" in h and "application/vnd.tlx-workbench.report+json" in h
    assert len(h) < 60_000
    assert r.stage("ptx") == big  # the Report keeps everything


def test_text_and_html_show_findings_measurements_and_why_skipped():
    r = make_report()
    r.findings = [{"rule": "wait-never-completes", "severity": "error", "line": 7, "message": "nothing arrives",
                   "related": [{"line": 5, "message": "the barrier"}], "hint": "arrive on it"}]
    r.measurements = [{"kind": "bench", "status": "skipped", "reason": "no GPU here", "timing": None}]
    r.timeline = {"kind": "timeline", "status": "error", "reason": "Proton failed"}
    validate(r.to_dict())
    text, h = r.summary(), r.to_html()
    assert "bench: skipped, because no GPU here" in text and "bench: skipped, because no GPU here" in h
    assert "timeline: error, because Proton failed" in text
    assert "[wait-never-completes] line 7: nothing arrives" in text
    assert "wait-never-completes" in h and "the barrier" in h and "hint: arrive on it" in h


def test_diff_reports():
    a = make_report(key="a", registers=16)
    b = make_report(key="b", ptx=PTX.replace("ret;", "exit;"), registers=20)
    p = diff_reports(a, b)
    assert not p["same_key"]
    assert {"field": "registers", "before": 16, "after": 20} in p["metadata"]
    st = {s["name"]: s for s in p["stages"]}
    assert st["ptx"]["status"] == "changed" and st["ptx"]["added"] == 1 and st["ptx"]["removed"] == 1
    assert st["ttgir"]["status"] == "same"
    b.previous = p
    validate(b.to_dict())
    assert "Diff against report " in b.to_html() and "1 stage(s) changed" in b.to_html()
    assert "registers 16->20" in b.summary()
    assert b.diff(a) == p
    b.previous = diff_reports(a, b, label="r2")  # as the user named the earlier Report (--diff r2)
    assert "diff vs r2" in b.summary() and "Diff against r2" in b.to_html()


@pytest.mark.parametrize("path", sorted((Path(__file__).parents[2] / "workbench/report/examples").glob("*.json")))
def test_examples_validate(path):
    d = json.loads(path.read_text())
    validate(d)
    r = Report.from_dict(d)
    assert r._repr_mimebundle_()["text/html"]


@pytest.mark.parametrize(
    "name,language,text",
    [
        ("ttgir", "mlir", TTGIR),
        ("ptx", "ptx", PTX),
        ("sass", "sass", SASS),
        ("llir", "llvm", "define void @f(ptr %0) {\n  ret void\n}\n"),
        ("tlx", "python", 'def f(x):\n    """doc\n    more"""\n    return x\n'),
    ],
)
def test_highlight_one_fragment_per_line(name, language, text):
    """Pygments colours Python, LLVM IR and PTX; MLIR and SASS, whose lexers are the viewer's
    alone (extension/src/highlight.ts), are shown plain and escaped."""
    assert language_of_stage(name) == language
    lines = highlight_lines(text, language)
    assert len(lines) == len(text.rstrip("\n").split("\n"))
    for frag in lines:  # spans never cross lines
        assert frag.count("<span") == frag.count("</span>")
    assert 'class="err"' not in "".join(lines)
    if language in ("mlir", "sass"):
        assert lines == [html.escape(ln) for ln in text.rstrip("\n").split("\n")]
    else:
        assert "<span" in "".join(lines)


def test_diff_of_reports_ignores_moved_locations():
    """Moving a kernel down a line changes every loc(...) but no op: the stage diff says "same"."""
    from workbench.report.diff import diff_reports

    ttgir = ('tt.func @k() {\n  %0 = arith.constant 1 : i32 loc(#loc3)\n  tt.return loc(#loc4)\n}\n'
             '#loc3 = loc("c":LINE:5)\n')
    src = {"source": {"kernel_text": "x"}}
    old = {"kernel": src, "stages": [{"name": "ttgir", "text": ttgir.replace("LINE", "3")}]}
    new = {"kernel": src, "stages": [{"name": "ttgir", "text": ttgir.replace("LINE", "4")}]}
    [stage] = diff_reports(old, new)["stages"]
    assert stage["status"] == "same" and stage["diff"] == ""
    changed = {"kernel": {"source": {"kernel_text": "x"}},
               "stages": [{"name": "ttgir", "text": ttgir.replace("LINE", "4").replace("1 : i32", "2 : i32")}]}
    [stage] = diff_reports(old, changed)["stages"]
    assert stage["status"] == "changed" and stage["added"] == 1 and stage["removed"] == 1


def test_nbconvert_keeps_indentation_and_left_alignment():
    """nbconvert's HTML (which right-aligns table cells and collapses whitespace-only text between
    tags) shows the fallback's code indented and left-aligned."""
    nbformat = pytest.importorskip("nbformat")
    nbconvert = pytest.importorskip("nbconvert")
    r = make_report()
    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell(CELL)
    cell.outputs = [nbformat.v4.new_output("display_data", data=r._repr_mimebundle_())]
    nb.cells = [cell]
    body, _ = nbconvert.HTMLExporter().from_notebook_node(nb)
    pre = f"t{r.id[:8]}"
    for anchor, start in (("src-L4", "    pid = tl.program_id(0)"), ("ttgir-L4", "    %0 = tt.get_program_id x")):
        row = re.search(rf'<tr[^>]*id="{pre}-{anchor}"[^>]*>.*?<td class="code">(.*?)</td>', body, re.S)
        assert row, f"{anchor} is not in the exported HTML"
        text = re.sub(r"<[^>]+>", "", row.group(1))
        assert text.startswith(start), repr(text)
    assert ".tlxr *{text-align:left}" in body


def test_a_report_stays_within_its_budget():
    """Past the budget the largest stage keeps only its head, says how long it is, and its line
    map keeps only the lines stored; the Report in the session keeps everything."""
    from workbench.report.report import BUDGET_BYTES

    rng = __import__("random").Random(0)
    huge = "\n".join(f"  %{i} = call float @f{rng.getrandbits(64):x}(float %{i - 1})" for i in range(60_000))
    r = make_report(key="huge", ptx=huge)
    r.stages[1]["line_map"] = {"4": [7, 59_000], "7": [58_000]}
    b = r._repr_mimebundle_()
    assert sum(len(json.dumps(v)) if isinstance(v, dict) else len(v) for v in b.values()) <= BUDGET_BYTES
    validate(b[MIME_TYPE])
    ptx = next(s for s in b[MIME_TYPE]["stages"] if s["name"] == "ptx")
    assert ptx["full_line_count"] == 60_000 and 200 <= ptx["line_count"] < 60_000
    back = Report.from_dict(b[MIME_TYPE])
    assert back.line_map("ptx") == {4: [7]}
    assert back.stage("ptx") == "\n".join(huge.splitlines()[: ptx["line_count"]])
    assert r.stage("ptx") == huge  # the session's Report is whole
    assert "full_line_count" not in json.dumps(r.to_dict())  # no budget asked: everything


def test_header_line_names_register_budgets_only_where_tasks_have_them():
    from types import SimpleNamespace

    from workbench.report.text import _head

    def head(regs):
        tasks = [{"partition": None, "num_warps": 4, "registers": regs[0]},
                 {"partition": 0, "num_warps": 4, "registers": regs[1]}]
        return _head(SimpleNamespace(kernel={"name": "k", "kind": "tlx", "target": "sm_90"},
                                     metadata={"num_warps": 8, "registers": 56, "tasks": tasks}))

    assert "tasks 4w/40r, 4w/232r" in head((40, 232))
    assert "tasks 4w, 4w (no register budgets)" in head((None, None))  # no setmaxnreg: the launch's 56 each


def test_a_truncated_stage_diff_says_where_all_of_it_is_and_that_works_on_reports():
    """The Changes tab cuts a large stage diff; its last line names workbench.analyse.diff, which takes the two
    Reports themselves (every stage is stored whole) and gives the whole diff."""
    from workbench.analyse import diff as stage_diff
    from workbench.errors import WorkbenchError

    big = "\n".join(f"  %{i} = op : i32" for i in range(2000))
    a = make_report(key="a", ptx=big)
    b = make_report(key="b", ptx=big.replace(" op ", " other "))
    [ptx] = [s for s in diff_reports(a, b)["stages"] if s["name"] == "ptx"]
    assert ptx["truncated"] and ptx["diff"].splitlines()[-1].endswith(
        "all of them: workbench.analyse.diff(previous, this, 'ptx') with the two Reports or Artifacts)")
    whole = stage_diff(a, b, "ptx")
    assert whole.added == whole.removed == 2000 and whole.a_name == "add_kernel@a"
    with pytest.raises(WorkbenchError, match="no stage 'tlx'"):
        stage_diff(a, b, "tlx")
