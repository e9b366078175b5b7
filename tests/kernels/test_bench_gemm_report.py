"""bench/gemm_report.py on a recorded H200 run: the rows and the summary against the targets, recomputed from
the run's per-round times and measurements, are the ones the run wrote."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[2]
RECORDED = ROOT / "bench" / "results" / "gemm-2026-12-03-t38.json"


@pytest.fixture(scope="module")
def report(bench_module):
    return bench_module("gemm_report")


@pytest.fixture(scope="module")
def run():
    return json.loads(RECORDED.read_text())


def _shape(key: str) -> tuple[int, ...]:
    return tuple(int(x) for x in key.split("x"))


def test_interleaved_rows_recomputed_match_the_recorded_ones(report, run):
    times = {_shape(k): v for k, v in run["interleaved"].items()}
    rows = report.rounds_rows(times, run["measurements"], SimpleNamespace(dtype="bf16"))
    key = lambda r: (r["kernel"], tuple(r["shape"]), r["baseline"])  # noqa: E731
    got, want = {key(r): r for r in rows}, {key(r): r for r in run["rows"]}
    assert got.keys() == want.keys()
    for k, r in want.items():
        assert got[k]["ratio"] == pytest.approx(r["ratio"], rel=1e-12), k
        assert got[k]["ms"] == pytest.approx(r["ms"], rel=1e-12), k


def test_summary_names_the_best_kernel_per_shape_against_its_target(report, run):
    shapes = [tuple(s) for s in run["shapes"]]
    summary = report.summary(run["rows"], shapes)
    assert summary == run["summary"]
    by_shape = {tuple(s["shape"]): s for s in summary}
    assert by_shape[(4096, 4096, 4096)]["met"] is True and by_shape[(8192, 8192, 8192)]["met"] is False
    assert all(s["best_kernel"] in report.OURS for s in summary)
