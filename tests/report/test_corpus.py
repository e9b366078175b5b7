"""Kernels nobody here wrote, on a CPU: a fixed sample of the corpus of ``bench/corpus.py`` (Liger-Kernel, FlagGems,
flash-linear-attention, Meta's TLX tutorials), each op called with CPU tensors inside the launch capture as a
``%%tlx`` cell would (``workbench.report.corpus.run_op``).

The packages are data, not dependencies: installed ``--no-deps`` (pinned versions) into ``$WB_CORPUS_DIR``, else the
checkout's ``.corpus/`` when ``bench/corpus.py --install`` filled it, else a cache folder
(``~/.cache/tlx-workbench/corpus``) that the fixture fills from PyPI; with no way to PyPI the test skips and says so.

Wanted: no step crashes, no error-level finding on these (correct) kernels, every kernel that compiled has a
Report, layouts and line maps for every stage, a TritonParse trace that parses; a reproducer per package runs with
no workbench importable; the TLX tutorials' timeline builds compile; what failed says why (a ``WorkbenchError`` or
the package's own code) and is one of the failures known here.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "testbed"))

from corpus_ops import REPRODUCE, SAMPLE  # noqa: E402

pytestmark = pytest.mark.slow

# FlagGems 5.0.2's pointwise code generator reads ``block_ptr.type.element_ty``; in Triton 3.8 ``tl.make_block_ptr``
# returns an aggregate without it: those kernels do not compile with Triton 3.8 (on a GPU neither)
KNOWN_COMPILE_ERRORS = {("flag-gems", "exp"): "object has no attribute 'element_ty'"}


def _corpus_dir() -> Path:
    import corpus_ops as co

    if os.environ.get("WB_CORPUS_DIR"):
        return Path(os.environ["WB_CORPUS_DIR"])
    if all(co.installed(ROOT / ".corpus").values()):
        return ROOT / ".corpus"
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "tlx-workbench" / "corpus"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    import corpus_ops as co

    root = _corpus_dir()
    if not all(co.installed(root).values()):
        try:
            errors = co.install(root, timeout=300)
        except Exception as e:  # no pip, a timeout
            errors = {"pip": f"{type(e).__name__}: {e}"}
        failed = {k: v for k, v in errors.items() if v}
        if failed:
            said = "; ".join(f"{k}: {(v.strip().splitlines() or [''])[-1]}" for k, v in failed.items())
            pytest.skip(f"the corpus packages could not be installed from PyPI into {root} (no network?): {said}")
    co.CORPUS = root
    with co.on_path(root):
        yield co, root


@pytest.fixture(scope="module")
def rows(corpus, tmp_path_factory):
    from workbench.report.corpus import FEATURES, run_op

    co, root = corpus
    work = tmp_path_factory.mktemp("corpus")
    out = []
    for pkg in dict.fromkeys(p for p, _ in SAMPLE):
        ops = {o.name: o for o in co.ops(pkg)}
        for p, name in SAMPLE:
            if p != pkg:
                continue
            features = [f for f in FEATURES if f != "reproducer" or (p, name) in REPRODUCE]
            out += run_op(ops[name], work, features=features, reproducer_env=co.reproducer_env(root))
    return out


def test_every_sample_op_launches_kernels(rows):
    ops = {(r["package"], r["op"]) for r in rows if r.get("kernel")}
    assert ops == set(SAMPLE), f"launched nothing: {sorted(set(SAMPLE) - ops)}"
    assert len([r for r in rows if r.get("kernel")]) >= 40


def test_nothing_crashes_and_each_failure_says_why(rows):
    crashes = [(r["op"], r.get("kernel"), f, s["detail"]) for r in rows for f, s in r["features"].items()
               if s["status"] == "crash"]
    crashes += [(r["op"], None, "call", r["op_call"]["detail"]) for r in rows if r["op_call"]["status"] == "crash"]
    assert not crashes, crashes
    for r in rows:
        if r["features"]["compile"]["status"] != "ok":
            known = KNOWN_COMPILE_ERRORS.get((r["package"], r["op"]))
            assert known and known in (r["features"]["compile"]["detail"] or ""), (r["op"], r["features"]["compile"])
            assert r["features"]["compile"]["status"] == "limitation", r["features"]["compile"]


def test_every_compiled_kernel_gets_a_report_layouts_line_maps_and_a_trace(rows):
    compiled = [r for r in rows if r.get("kernel") and r["features"]["compile"]["status"] == "ok"]
    for r in compiled:
        where = (r["package"], r["op"], r["kernel"])
        for f in ("compile_sm100a", "layouts", "line_maps", "findings", "report", "tritonparse"):
            status = r["features"][f]["status"]
            assert status in ("ok", "skipped"), (where, f, r["features"][f])
        assert r["layouts"] > 0 and all(r["line_maps"].values()), where
        assert set(r["line_maps"]) >= {"ttir", "ttgir", "llir", "ptx", "sass"}, where
        assert r["features"]["report"]["status"] == "ok" and r["features"]["tritonparse"]["status"] == "ok", where
    kernels = [r for r in rows if r.get("kernel")]
    assert len(compiled) / len(kernels) >= 0.95


def test_no_false_alarms_on_these_kernels(rows):
    alarms = [(r["op"], r["kernel"], r["error_findings"]) for r in rows if r.get("error_findings")]
    assert not alarms, alarms


def test_sm100a_where_the_kernel_allows(rows):
    blackwell = [r for r in rows if r.get("kernel") and r["features"]["compile"]["status"] == "ok"
                 and r["package"] != "meta-tlx"]
    assert blackwell and all(r["features"]["compile_sm100a"]["status"] == "ok" for r in blackwell)
    meta = {r["op"]: r for r in rows if r["package"] == "meta-tlx"}
    assert meta["blackwell_gemm_ws"]["target"] == "sm_100a" and meta["hopper_gemm_ws"]["target"] == "sm_90"


def test_tlx_tutorials_timeline_builds_compile(rows):
    tlx = [r for r in rows if r["package"] == "meta-tlx"]
    assert tlx and all(r["kind"] == "tlx" for r in tlx)
    for r in tlx:
        assert r["features"]["timeline"]["status"] == "ok", (r["op"], r["features"]["timeline"])


def _reproducers(rows, meta: bool):
    ran = [r for r in rows if r["features"]["reproducer"]["status"] != "skipped" and (r["package"] == "meta-tlx")
           == meta]
    assert {(r["package"], r["op"]) for r in ran} == {x for x in REPRODUCE if (x[0] == "meta-tlx") == meta}
    for r in ran:
        assert r["features"]["reproducer"]["status"] == "ok", (r["op"], r["features"]["reproducer"])
        assert r["reproducer"]["same_as_workbench"] is True and r["reproducer"]["not_reproduced"] == []


def test_reproducers_compile_standalone(rows):
    _reproducers(rows, meta=False)


def test_a_meta_tutorial_reproducer_compiles_standalone(rows):
    _reproducers(rows, meta=True)


def test_the_summary_counts_what_the_rows_say(rows):
    from workbench.report.corpus import summary, summary_table

    s = summary(rows)
    assert set(s) == {p for p, _ in SAMPLE}
    for pkg, per in s.items():
        mine = [r for r in rows if r["package"] == pkg and r.get("kernel")]
        assert per["all"]["kernels"] == len(mine)
        assert per["compile"]["passed"] + per["compile"]["clear"] + per["compile"]["limitation"] == len(mine)
        assert per["all"]["false_alarms"] == 0 and per["all"]["crashes"] == 0
    assert "liger-kernel:" in summary_table(rows)
