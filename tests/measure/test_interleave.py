"""workbench.measure.interleave: every item once per round, the order rotated each round; ratios per round, median."""

from __future__ import annotations

from workbench.measure import interleave


def test_rounds_rotate_the_order_and_time_every_item_once_per_round():
    order: list[str] = []
    clock = iter(range(100))
    seen_rounds: list[int] = []
    times = interleave.rounds({"cublas": "c", "ours": "o", "meta": "m"}, 4,
                              lambda run: order.append(run) or float(next(clock)), seen_rounds.append)
    assert order == ["c", "o", "m", "o", "m", "c", "m", "c", "o", "c", "o", "m"]
    assert seen_rounds == [0, 1, 2, 3]
    assert times == {"cublas": [0.0, 5.0, 7.0, 9.0], "ours": [1.0, 3.0, 8.0, 10.0], "meta": [2.0, 4.0, 6.0, 11.0]}


def test_ratio_is_the_median_of_per_round_ratios():
    # the clock drifts: ours is 5% faster than the baseline in every round, whatever the round's speed
    base = [1.00, 1.20, 1.10, 1.50, 1.05]
    ours = [b / 1.05 for b in base]
    assert abs(interleave.ratio(base, ours) - 1.05) < 1e-12
    assert interleave.ratio([1.0, 2.0, 4.0], [1.0, 1.0, 1.0]) == 2.0
