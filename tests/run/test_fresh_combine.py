"""workbench.run.fresh.combine: one check result for the as-run, fresh-input and after-bench runs."""

from workbench.run.fresh import combine


def test_combined_twice_says_as_the_cell_ran_once():
    as_run = {"status": "passed", "message": "10 elements match"}
    fresh = {"status": "passed", "message": "fresh inputs: 10 elements match"}
    after = {"status": "passed", "message": "after --bench's timed launches: 10 elements match"}
    out = combine(combine(as_run, fresh), after, key="after_bench")
    assert out["message"].count("as the cell ran:") == 1
    assert out["message"].endswith("after --bench's timed launches: 10 elements match")
    assert out["fresh"]["status"] == "passed" and out["after_bench"]["status"] == "passed"


def test_a_worse_rerun_decides_the_status():
    out = combine({"status": "passed", "message": "ok"}, {"status": "failed", "message": "fresh: 3 differ",
                                                          "mismatched": 3})
    assert out["status"] == "failed" and out["mismatched"] == 3
