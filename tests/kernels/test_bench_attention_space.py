"""The attention family's sweep spaces (``tlx_kernels.attention.family``, what ``bench/attention.py --sweep
--space`` times): trial configs, not yet run on a GPU, are swept but never tuned over."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")


@pytest.fixture(scope="module")
def space():
    from tlx_kernels.attention.family import ATTENTION

    return lambda variant, D, which: ATTENTION.configs(variant, which, (4, 32, 4096, D, False))


def test_trials_are_swept_after_the_default_and_outside_configs(space):
    from tlx_kernels.attention import ws_pipelined as W

    assert W.TRIALS and not any(t in W.CONFIGS for t in W.TRIALS)  # launch() and attention() never pick them
    trials = space("ws_pipelined", 128, "trials")
    assert trials == [W.DEFAULT] + W.TRIALS
    configs = space("ws_pipelined", 128, "listed")
    assert configs == W.CONFIGS + W.TRIALS
    grid = space("ws_persistent", 128, "candidates")
    assert len(grid) > len(space("ws_persistent", 128, "listed"))


def test_variants_without_trials_sweep_their_default(space):
    from tlx_kernels.attention import ws as W

    assert space("ws", 128, "trials") == [W.DEFAULT]
