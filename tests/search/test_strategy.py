"""The budgeted strategy alone, on a 500-config space whose time is a smooth function of its config with noise (what
a GEMM's tiles, stages, group and split do): it finds a config within 2% of the best while measuring at most a
quarter of the space, and says what it left out. The search on a GPU runs it over its pipeline
(``bench/search.py``); here ``measure`` is that function."""

from __future__ import annotations

import itertools
import math
import random

from workbench.search.space import Candidate
from workbench.search.strategy import budgeted, neighbours

AXES = {"BM": [64, 128, 256, 512, 1024], "BN": [32, 64, 128, 256, 512], "STAGES": [2, 3, 4, 5],
        "GROUP": [1, 4, 8, 16, 32]}  # 500 configs


def _space() -> list[Candidate]:
    keys = list(AXES)
    return [Candidate(i, dict(zip(keys, vals, strict=True))) for i, vals in
            enumerate(itertools.product(*AXES.values()))]


def _model(config: dict, noise: random.Random, rounds: int) -> float | None:
    if config["BM"] * config["BN"] * config["STAGES"] > 1024 * 512 * 4:
        return None  # does not fit: a failed candidate
    t = 1.0 + 0.3 * (math.log2(config["BM"]) - 7.6) ** 2 + 0.2 * (math.log2(config["BN"]) - 7.2) ** 2 \
        + 0.05 * (config["STAGES"] - 4) ** 2 + 0.02 * abs(math.log2(config["GROUP"]) - 3)
    return t * (1 + noise.gauss(0, 0.02 / math.sqrt(rounds)))  # short timings are noisier


def test_the_budgeted_strategy_finds_a_near_best_config_in_a_quarter_of_the_space():
    cands = _space()
    noise = random.Random(7)
    truth = {c.index: _model(c.config, random.Random(0), 10**6) for c in cands}
    best = min(t for t in truth.values() if t is not None)
    measured: list[int] = []

    def measure(indices: list[int], rounds: int) -> dict[int, float | None]:
        measured.extend(indices)
        return {i: _model(cands[i].config, noise, rounds) for i in indices}

    out = budgeted(cands, measure, rounds=3)
    winner = min((ms, i) for i, ms in out.times.items() if ms is not None)[1]
    assert truth[winner] <= 1.02 * best, (cands[winner].config, truth[winner], best)
    assert len(set(measured)) <= 0.25 * len(cands), len(set(measured))
    assert out.steps[0].startswith("sample:") and any(s.startswith("pattern search step") for s in out.steps)
    assert out.steps[-1].endswith("timed again in 3 rounds") and "strategy='exhaustive'" in out.untried


def test_neighbours_are_one_step_on_one_axis():
    cands = _space()
    around = neighbours(cands)
    i = next(c.index for c in cands if c.config == {"BM": 256, "BN": 128, "STAGES": 3, "GROUP": 8})
    got = [cands[j].config for j in around(i)]
    assert len(got) == 8 and {"BM": 128, "BN": 128, "STAGES": 3, "GROUP": 8} in got
    assert all(sum(g[k] != cands[i].config[k] for k in AXES) == 1 for g in got)
    corner = next(c.index for c in cands if c.config == {"BM": 64, "BN": 32, "STAGES": 2, "GROUP": 1})
    assert len(around(corner)) == 4
