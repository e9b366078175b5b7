"""Pick the fastest config per problem on the GPU (configs that fail to compile or launch are skipped)."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Tuner:
    """``choose(key, configs, run, name)`` times ``run(cfg)`` per config with ``triton.testing.do_bench``
    and remembers the winner per key; ``TLX_KERNELS_NO_TUNE=1`` always takes the first config."""

    cache: dict[Any, dict[str, Any]] = field(default_factory=dict)
    timings: dict[Any, list[tuple[str, float]]] = field(default_factory=dict)
    errors: dict[Any, list[str]] = field(default_factory=dict)
    warmup_ms: int = 5
    rep_ms: int = 25

    def choose(
        self,
        key: Any,
        configs: Sequence[dict[str, Any]],
        run: Callable[[dict[str, Any]], Any],
        name: Callable[[dict[str, Any]], str] = str,
    ) -> dict[str, Any]:
        if key in self.cache:
            return self.cache[key]
        if len(configs) == 1 or os.environ.get("TLX_KERNELS_NO_TUNE"):
            self.cache[key] = dict(configs[0])
            return self.cache[key]
        import triton.testing as tt

        best, best_ms, rows, errors = None, math.inf, [], []
        for cfg in configs:
            try:
                run(cfg)  # compile outside the timed region
                ms = float(
                    tt.do_bench(lambda cfg=cfg: run(cfg), warmup=self.warmup_ms, rep=self.rep_ms, return_mode="median")
                )
            except Exception as e:  # noqa: BLE001 - a config that does not compile or launch is skipped
                errors.append(f"{name(cfg)}: {type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}")
                continue
            rows.append((name(cfg), ms))
            if ms < best_ms:
                best, best_ms = cfg, ms
        self.errors[key] = errors
        if best is None:
            raise RuntimeError("no config ran: " + "; ".join(errors))
        self.timings[key] = rows
        self.cache[key] = dict(best)
        return self.cache[key]
