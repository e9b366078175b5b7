"""bench/attention.py's sweep space (CPU): trial configs, not yet run on a GPU, are swept but never tuned over."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")


@pytest.fixture(scope="module")
def bench(bench_module):
    return bench_module("attention")


def test_trials_are_swept_after_the_default_and_outside_configs(bench):
    from tlx_kernels.attention import ws_pipelined as W

    assert W.TRIALS and not any(t in W.CONFIGS for t in W.TRIALS)  # launch() and attention() never pick them
    trials = bench.sweep_space("ws_pipelined", 128, "trials")
    assert trials == [W.DEFAULT] + W.TRIALS
    configs = bench.sweep_space("ws_pipelined", 128, "configs")
    assert configs == W.CONFIGS + W.TRIALS
    grid = bench.sweep_space("ws_persistent", 128, "grid")
    assert len(grid) > len(bench.sweep_space("ws_persistent", 128, "configs"))


def test_variants_without_trials_sweep_their_default(bench):
    from tlx_kernels.attention import ws as W

    assert bench.sweep_space("ws", 128, "trials") == [W.DEFAULT]
