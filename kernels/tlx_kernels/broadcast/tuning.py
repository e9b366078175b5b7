"""The broadcast kernel's tuner: the library's (:mod:`tlx_kernels.tuner`), timing each config briefly."""

from __future__ import annotations

from dataclasses import dataclass

from tlx_kernels import tuner


@dataclass
class Tuner(tuner.Tuner):
    """``choose(key, configs, run, name)`` times ``run(cfg)`` per config and remembers the winner per key;
    ``TLX_KERNELS_NO_TUNE=1`` always takes the first config."""

    warmup_ms: int = 5
    rep_ms: int = 25


__all__ = ["Tuner"]
