"""workbench.evaluate on a CPU (Triton's interpreter runs the candidates): correct candidates pass with the
defaults; wrong and adversarial ones never do, each with its reason; the command line writes the same rows."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from workbench import evaluate

HERE = Path(__file__).parent
F = HERE / "candidates.py"

# candidate -> a phrase its reasons must hold (None: it passes)
EXPECTED = {
    "correct": None,
    "off_by_one": "1 of 1000 elements differ; first at [999]",
    "writes_nothing": "launched no Triton kernel",
    "uses_torch": "it computes the reference",
    "calls_reference": "called the reference",
    "caches_by_address": "a result cached by address",
    "caches_by_shape": "the same output for fresh inputs",
    "modifies_input": "modified input 1",
    "writes_past_input": "wrote outside input 0",
    "returns_input": "returned an input's tensor",
    "patches_time": "replaced time.perf_counter",
    "patches_torch": "replaced torch.add",
    "block_ptr_element_type": "hint: a block pointer from tl.make_block_ptr",  # a compile-error, with what to do
}


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    out = tmp_path_factory.mktemp("eval") / "rows.jsonl"
    res = evaluate([f"{F}:{n}" for n in EXPECTED], reference=f"{F}:reference", inputs=f"{F}:make_inputs",
                   shapes=[(1000,), (257,)], trials=3, rounds=1, json_path=out, progress=False)
    return res, out


def test_every_candidate_gets_the_verdict_it_deserves(result):
    res, _ = result
    rows = {r["candidate"].split(":")[1]: r for r in res.rows}
    assert set(rows) == set(EXPECTED)
    for name, phrase in EXPECTED.items():
        r = rows[name]
        if phrase is None:
            assert r["status"] == "passed", (name, r["reasons"])
            assert r["geomean_speedup"] and all(s["passed"] == 3 for s in r["shapes"])
            assert all(s["max_ulps"] is not None and s["max_ulps"] <= 8 for s in r["shapes"]), r["shapes"]
            assert all(s["judge_s"] > 0 and s["timing_s"] > 0 for s in r["shapes"]), r["shapes"]  # where time goes
            assert r["run_s"] >= sum(s["judge_s"] + s["timing_s"] for s in r["shapes"])
            for s in r["shapes"]:  # the judging's parts: the first call (the JIT's compile), the trials, the refill
                parts = s["judge_parts_s"]
                assert parts["trials_s"] > 0 and abs(sum(parts.values()) - s["judge_s"]) < 0.01, s
        else:
            assert r["status"] in ("failed", "rejected", "compile-error"), (name, r)
            assert any(phrase in why for why in r["reasons"]), (name, r["reasons"])


def test_rows_stream_as_json_lines(result):
    res, out = result
    assert 0 < res.info["connect_s"] <= res.info["compiled_by_s"] <= res.info["wall_s"]
    lines = [json.loads(x) for x in out.read_text().splitlines()]
    assert sorted(x["candidate"] for x in lines) == sorted(r["candidate"] for r in res.rows)
    assert all({"status", "reasons", "flags", "shapes", "findings", "geomean_speedup"} <= set(x) for x in lines)
    assert res.table.shape[0] == len(EXPECTED)


def test_the_command_line_reads_a_spec_and_says_what_is_wrong_with_one(tmp_path):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"reference": f"{F}:reference", "inputs": f"{F}:make_inputs", "shapes": [[300]],
                                "candidates": [f"{HERE}/cand*.py:correct", f"{F}:writes_nothing"], "trials": 2,
                                "rounds": 1}))
    p = subprocess.run([sys.executable, "-m", "workbench.cli", "eval", str(spec), "--quiet"], capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 1, p.stderr  # one candidate did not pass
    rows = [json.loads(x) for x in spec.with_suffix(".jsonl").read_text().splitlines()]
    assert sorted(r["status"] for r in rows) == ["passed", "rejected"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"reference": f"{F}:reference", "shapes": [[3]], "candidates": []}))
    p = subprocess.run([sys.executable, "-m", "workbench.cli", "eval", str(bad)], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 2 and "'inputs' is missing" in p.stderr


@pytest.mark.parametrize("op", ["rotate", "total", "mean16", "tf32mm"])
def test_a_correct_kernel_with_structured_inputs_or_a_scalar_output_passes(op):
    S = HERE / "shaped_ops.py"
    res = evaluate([f"{S}:{op}"], reference=f"{S}:{op}_reference", inputs=f"{S}:{op}_inputs", shapes=[(64,), (9,)],
                   trials=2, rounds=1, progress=False)
    (row,) = res.rows
    assert row["status"] == "passed", row["reasons"]


def test_the_input_maker_runs_once_per_shape_and_seed_and_every_call_gets_its_own_copy():
    """An evaluation asks every candidate for the same seeds: the maker runs once per (shape, seed) in a worker,
    each call gets fresh tensors of the same values (a write into one reaches neither the cache nor the next), and
    a maker whose inputs alias each other is called every time."""
    import torch

    from workbench.run.evaluation import _Inputs

    calls = []

    def make(shape, seed, device):
        calls.append((shape, seed))
        g = torch.Generator().manual_seed(seed)
        return torch.randn(shape, generator=g), torch.randn(shape, generator=g), 3

    inputs = _Inputs()
    a = inputs(make, "m", (8,), 1, "cpu")
    a[0].zero_()
    b = inputs(make, "m", (8,), 1, "cpu")
    c = inputs(make, "m", (8,), 2, "cpu")
    assert calls == [((8,), 1), ((8,), 2)] and (inputs.hits, inputs.misses) == (1, 2)
    fresh = make((8,), 1, "cpu")
    assert torch.equal(b[0], fresh[0]) and torch.equal(b[1], fresh[1]) and b[2] == 3
    assert b[0].data_ptr() != a[0].data_ptr() and not torch.equal(b[0], c[0])

    def aliased(shape, seed, device):
        x = torch.randn(2 * shape[0])
        return x[: shape[0]], x[shape[0]:]

    for _ in range(2):
        inputs(aliased, "v", (4,), 1, "cpu")
    assert inputs.misses == 4
