"""Pick the fastest candidate per problem on the GPU: the tuner every public call of the library uses.

Candidates that fail to compile, launch or (with a check) give a wrong result are skipped, not fatal;
``TLX_KERNELS_NO_TUNE=1`` takes the first candidate without timing anything.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any


def bench_ms(fn: Callable[[], Any], warmup_ms: int = 25, rep_ms: int = 100) -> float:
    """Median ms of ``fn`` on the GPU with ``triton.testing.do_bench`` (L2 flushed before each run)."""
    import triton.testing as tt

    return float(tt.do_bench(fn, warmup=warmup_ms, rep=rep_ms, return_mode="median"))


def _first_line(e: Exception) -> str:
    return str(e).splitlines()[0][:200] if str(e) else ""


@dataclass
class Tuner:
    """The fastest candidate per problem key, timed with :func:`bench_ms` (``warmup_ms``, ``rep_ms``) once and
    remembered in ``cache``; ``timings`` and ``errors`` keep, per key, each candidate's time and each failure.
    ``label`` starts the message of the error raised when no candidate ran."""

    cache: dict[Any, Any] = field(default_factory=dict)
    timings: dict[Any, list[tuple[str, float]]] = field(default_factory=dict)
    errors: dict[Any, list[str]] = field(default_factory=dict)
    warmup_ms: int = 10
    rep_ms: int = 40
    label: str = ""

    def pick(self, key: Any, candidates: Sequence[tuple[str, Any]], run: Callable[[Any], Any],
             check: Callable[[Any], bool] | None = None, what: str = "candidate") -> Any:
        """The fastest of ``candidates`` (``(name, candidate)`` pairs) for ``key``: ``run(candidate)`` launches one
        and returns its output, which ``check`` (if given) must accept for the candidate to count."""
        if key in self.cache:
            return self.cache[key]
        if len(candidates) == 1 or os.environ.get("TLX_KERNELS_NO_TUNE"):
            self.cache[key] = candidates[0][1]
            return self.cache[key]
        best, best_ms, rows, errors = None, math.inf, [], []
        for name, cand in candidates:
            try:
                out = run(cand)  # compile outside the timed region
                if check is not None and not check(out):
                    errors.append(f"{name}: wrong result")
                    continue
                ms = bench_ms(lambda cand=cand: run(cand), warmup_ms=self.warmup_ms, rep_ms=self.rep_ms)
            except Exception as e:  # noqa: BLE001 - a candidate that does not compile or launch is skipped
                errors.append(f"{name}: {type(e).__name__}: {_first_line(e)}")
                continue
            rows.append((name, ms))
            if ms < best_ms:
                best, best_ms = cand, ms
        self.errors[key] = errors
        if best is None:
            raise RuntimeError(f"{self.label}no {what} ran: " + "; ".join(errors))
        self.timings[key], self.cache[key] = rows, best
        return best

    def choose(self, key: Any, configs: Sequence[dict[str, Any]], run: Callable[[dict[str, Any]], Any],
               name: Callable[[dict[str, Any]], str] = str) -> dict[str, Any]:
        """:meth:`pick` over configs (dicts, each named by ``name``); the chosen config is a copy."""
        if key not in self.cache:
            self.pick(key, [(name(c), dict(c)) for c in configs], run, what="config")
        return self.cache[key]


__all__ = ["Tuner", "bench_ms"]
