"""workbench.measure.compare: fastest records, same-round ratios against baselines, config rankings (no GPU)."""

from __future__ import annotations

import pytest

from workbench.measure.compare import fastest, rank_configs, rounds_records, versus, versus_rows


def test_fastest_matches_fields_and_skips_untimed_records():
    recs = [dict(kernel="a", kind="ours", ms=None), dict(kernel="a", kind="ours", ms=2.0),
            dict(kernel="b", kind="sdpa", ms=1.0), dict(kernel="a", kind="ours", ms=1.5)]
    assert fastest(recs) is recs[2]
    assert fastest(recs, kernel="a") is recs[3]
    assert fastest(recs, kind="meta") is None


def test_versus_takes_the_median_of_same_round_ratios_when_both_sides_have_rounds():
    # the clock slows in round 3 for both: per round, ours is 1.25x faster every time
    base = dict(ms=1.25, times=[1.25, 1.25, 2.5])
    ours = dict(ms=1.0, times=[1.0, 1.0, 2.0])
    assert versus(ours, base) == (1.0, 1.25, pytest.approx(1.25), "interleaved, 3 rounds")
    # without rounds on one side (or a different count): the single timings
    assert versus(dict(ms=1.0), base) == (1.0, 1.25, 1.25, "best single timings")
    assert versus(dict(ms=2.0, times=[2.0, 2.0]), base)[3] == "best single timings"


def test_rounds_records_and_rows_against_each_baseline_but_itself():
    recs = rounds_records({"cublas": [2.0, 2.2, 4.0], "ours": [1.0, 1.1, 2.1]}, flops=2e9)
    assert recs["ours"]["ms"] == 1.1 and recs["ours"]["times"] == [1.0, 1.1, 2.1]
    assert recs["ours"]["tflops"] == pytest.approx(2e9 / 1.1 / 1e9)
    recs["ours"]["config"] = "BM128"
    rows = versus_rows(recs, {"cublas": recs["cublas"]})
    assert [(r["kernel"], r["baseline"]) for r in rows] == [("ours", "cublas")]
    [row] = rows
    assert row["config"] == "BM128" and row["baseline_ms"] == 2.2 and row["method"] == "interleaved, 3 rounds"
    assert row["ratio"] == pytest.approx(2.0)  # per round 2.0, 2.0, 1.905: the median


def test_rank_configs_by_geometric_mean_of_speed_relative_to_each_shapes_best():
    s1, s2 = (1, 1, 1), (2, 2, 2)
    rec = lambda cfg, shape, ms: dict(kernel="k", config=cfg, cfg={"name": cfg}, shape=list(shape), ms=ms)  # noqa
    recs = [rec("fast-big", s1, 2.0), rec("fast-big", s2, 1.0), rec("fast-small", s1, 1.0), rec("fast-small", s2, 2.0),
            rec("even", s1, 1.2), rec("even", s2, 1.2), rec("even", s2, 1.2),  # timed twice at s2: the mean
            rec("partial", s1, 0.5), rec("broken", s1, None)]
    ranked = rank_configs(recs, [s1, s2], flops=lambda s: 1e9 * s[0])["k"]
    # "partial" sets s1's best (0.5 ms) but was not timed at s2, so it is not ranked
    assert [r["config"] for r in ranked] == ["even", "fast-big", "fast-small"]
    assert ranked[0]["score"] == pytest.approx(((0.5 / 1.2) * (1.0 / 1.2)) ** 0.5)
    assert ranked[1]["score"] == pytest.approx(ranked[2]["score"])
    assert ranked[0]["cfg"] == {"name": "even"} and ranked[0]["tflops"] == {"1x1x1": 0.8, "2x2x2": 1.7}
