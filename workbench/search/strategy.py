"""A budgeted search of a space too large to try all of: a sample on short timings, a pattern search around its
leaders (the configs one step away on one axis, as Helion's autotuner walks), then the leaders timed again in full
rounds (the second rung of a successive halving). Each step says what it tried and what it left out, and why.

``budgeted(cands, measure)`` is the strategy alone: ``measure(indices, rounds)`` runs those candidates (compile,
check, time) and returns each one's median ms (None: it did not pass). ``workbench.search(strategy="budgeted")``
gives it the search's pipeline; ``strategy="exhaustive"`` (the default) tries every candidate.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Budgeted", "budgeted", "neighbours"]

SAMPLE = 0.12  # of the space, on short timings (at least 4 per leader)
LEADERS = 4  # the pattern search walks around this many
SHARE = 0.25  # at most this share of the space is measured
SHORT_ROUNDS = 1  # timing rounds of the sample and the walk; the leaders get the search's own


@dataclass
class Budgeted:
    """What the strategy measured (index -> ms, None: did not pass), its steps, and what it left out."""

    times: dict[int, float | None] = field(default_factory=dict)
    steps: list[str] = field(default_factory=list)
    untried: str = ""  # why the rest were not tried


def _key(config: dict[str, Any]) -> tuple:
    return tuple(sorted((k, repr(v)) for k, v in config.items()))


def _ordered(values: Any) -> list[Any]:
    try:
        return sorted(values)
    except TypeError:
        return sorted(values, key=repr)


def neighbours(cands: list[Any]) -> Callable[[int], list[int]]:
    """For a candidate index, the candidates whose config differs from its config on one axis by one step (the
    axis's values in order)."""
    seen: dict[str, dict[str, Any]] = {}
    for c in cands:
        for k, v in c.config.items():
            seen.setdefault(k, {})[repr(v)] = v  # by repr: a value may be unhashable (a list)
    axes = {k: _ordered(v.values()) for k, v in seen.items()}
    by_config = {_key(c.config): c.index for c in cands}
    config = {c.index: c.config for c in cands}

    def around(i: int) -> list[int]:
        out = []
        for k, values in axes.items():
            if k not in config[i]:
                continue
            at = values.index(config[i][k])
            for step in (-1, 1):
                if 0 <= at + step < len(values):
                    j = by_config.get(_key({**config[i], k: values[at + step]}))
                    if j is not None:
                        out.append(j)
        return out

    return around


def _leaders(times: dict[int, float | None], n: int) -> list[int]:
    timed = sorted((ms, i) for i, ms in times.items() if ms is not None)
    return [i for _, i in timed[:n]]


def budgeted(cands: list[Any], measure: Callable[[list[int], int], dict[int, float | None]], *, rounds: int,
             seed: int = 0) -> Budgeted:
    """Sample, walk around the leaders, time the leaders again (see the module's docstring)."""
    n = len(cands)
    cap = max(LEADERS * 4, math.ceil(SHARE * n))
    out = Budgeted()
    rng = random.Random(seed)
    sample = rng.sample([c.index for c in cands], min(n, max(LEADERS * 4, math.ceil(SAMPLE * n))))
    out.times.update(measure(sample, SHORT_ROUNDS))
    out.steps.append(f"sample: {len(sample)} of {n} configs at random (seed {seed}), {SHORT_ROUNDS} timing round")
    around = neighbours(cands)
    walk = 0
    while len(out.times) < cap:
        ahead = [j for i in _leaders(out.times, LEADERS) for j in around(i) if j not in out.times]
        ahead = list(dict.fromkeys(ahead))[: cap - len(out.times)]
        if not ahead:
            break
        walk += 1
        out.times.update(measure(ahead, SHORT_ROUNDS))
        out.steps.append(f"pattern search step {walk}: {len(ahead)} neighbours of the {LEADERS} leaders")
    why = "no untried neighbour of the leaders is left" if len(out.times) < cap else \
        f"the budget of {SHARE:.0%} of the space ({cap} configs) is spent"
    leaders = _leaders(out.times, LEADERS)
    if leaders:
        out.times.update(measure(leaders, rounds))
        out.steps.append(f"the {len(leaders)} leaders timed again in {rounds} rounds")
    out.untried = (f"not tried by the budgeted search: {why} (strategy='exhaustive' tries every config)"
                   if len(out.times) < n else "")
    return out
