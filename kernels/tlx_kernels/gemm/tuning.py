"""Configs of the GEMM kernels (names, shared-memory budgets, sweep spaces) and the GPU tuner."""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

SMEM_LIMIT = 232448  # dynamic shared memory per CTA on sm_90 (227 KiB)

# ------------------------------------------------------------------------------------------------
# configs
# ------------------------------------------------------------------------------------------------

_SHORT = {
    "NUM_STAGES": "s",
    "num_stages": "ns",
    "GROUP_M": "g",
    "num_warps": "w",
    "EPI_SPLIT": "e",
    "EPI_BUFS": "b",
    "CONSUMER_REGS": "r",
    "WARP_BAR": "wb",
    "WS": "ws",
    "MMA_WAIT": "mw",
}
_DEFAULTS = {"EPI_SPLIT": 1, "EPI_BUFS": 1, "WARP_BAR": False, "CONSUMER_REGS": 232, "MMA_WAIT": 1}


_ORDER = ("PERSISTENT", "WS", "NUM_STAGES", "num_stages", "GROUP_M", "EPI_SPLIT", "EPI_BUFS", "WARP_BAR",
          "MMA_WAIT", "CONSUMER_REGS", "num_warps")


def config_name(cfg: dict[str, Any]) -> str:
    """A short name, the same for equal configs, e.g. ``128x256x64_s4_g8_e2_w4`` (default values left out)."""
    parts = ["x".join(str(cfg[k]) for k in ("BM", "BN", "BK") if k in cfg)]
    rest = sorted((k for k in cfg if k not in ("BM", "BN", "BK")), key=lambda k: (_ORDER + (k,)).index(k))
    for k in rest:
        v = cfg[k]
        if _DEFAULTS.get(k, object()) == v or (k == "num_stages" and cfg.get("NUM_STAGES") == v):
            continue
        if k == "PERSISTENT":
            parts.append("persistent" if v else "grid")
        else:
            parts.append(f"{_SHORT.get(k, k)}{int(v) if isinstance(v, bool) else v}")
    return "_".join(p for p in parts if p)


def smem_bytes(cfg: dict[str, Any], kind: str, elem: int = 2) -> int:
    """Shared memory a config's buffers need (ring + epilogue buffers + barriers), for static checks.

    ``kind``: "single-role" (one epilogue buffer set), "cooperative" (one per consumer, each half a
    tile tall), "pingpong" (one per consumer, each a whole tile)."""
    BM, BN, BK, S = cfg["BM"], cfg["BN"], cfg["BK"], cfg["NUM_STAGES"]
    split, bufs = cfg.get("EPI_SPLIT", 1), cfg.get("EPI_BUFS", 1)
    ring = S * (BM * BK + BK * BN) * elem
    sub = BM * (BN // split) * elem
    if kind == "single-role":
        epi = sub * bufs
    elif kind == "cooperative":
        epi = 2 * (sub // 2) * bufs
    elif kind == "pingpong":
        epi = 2 * sub * bufs
    else:
        raise ValueError(f"unknown kind {kind!r}")
    return ring + epi + 8 * 2 * S + 64


def check_config(cfg: dict[str, Any], kind: str) -> None:
    """Raise ValueError for a config that cannot work (before any compile)."""
    split, bufs = cfg.get("EPI_SPLIT", 1), cfg.get("EPI_BUFS", 1)
    if split not in (1, 2, 4) or bufs not in (1, 2) or split % bufs:
        raise ValueError(f"{config_name(cfg)}: EPI_SPLIT in (1, 2, 4), EPI_BUFS in (1, 2), EPI_BUFS | EPI_SPLIT")
    need = smem_bytes(cfg, kind)
    if need > SMEM_LIMIT:
        raise ValueError(f"{config_name(cfg)}: needs {need} B of shared memory, the limit is {SMEM_LIMIT}")


def variants(base: dict[str, Any], **choices: Sequence[Any]) -> list[dict[str, Any]]:
    """``base``, then ``base`` with one key changed to each of its listed values (one knob at a time)."""
    out = [dict(base)]
    for key, values in choices.items():
        out.extend(dict(base, **{key: v}) for v in values if base.get(key, _DEFAULTS.get(key)) != v)
    return out


def feasible(configs: Sequence[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    """``configs`` without duplicates (by name) and without those :func:`check_config` rejects, in order."""
    seen, out = set(), []
    for cfg in configs:
        name = config_name(cfg)
        try:
            check_config(cfg, kind)
        except ValueError:
            continue
        if name not in seen:
            seen.add(name)
            out.append(dict(cfg))
    return out


# ------------------------------------------------------------------------------------------------
# tuning and timing
# ------------------------------------------------------------------------------------------------


def bench_ms(fn: Callable[[], Any], warmup_ms: int = 25, rep_ms: int = 100) -> float:
    """Median ms of ``fn`` on the GPU with ``triton.testing.do_bench`` (L2 flushed before each run)."""
    import triton.testing as tt

    return float(tt.do_bench(fn, warmup=warmup_ms, rep=rep_ms, return_mode="median"))


def problem_key(a, b) -> tuple:
    """What a tuned config is valid for: sizes, dtype, operand majorness."""
    return (a.shape[0], b.shape[1], a.shape[1], str(a.dtype), a.stride(0) == 1, b.stride(0) == 1)


@dataclass
class Tuner:
    """Pick the fastest config per problem key on the GPU (configs that fail are skipped, not fatal).

    ``choose(key, configs, run)`` times ``run(cfg)`` for each config with :func:`bench_ms` and remembers
    the winner; set ``TLX_KERNELS_NO_TUNE=1`` to always use the first config.
    """

    cache: dict[Any, dict[str, Any]] = field(default_factory=dict)
    timings: dict[Any, list[tuple[str, float]]] = field(default_factory=dict)
    warmup_ms: int = 10
    rep_ms: int = 40

    def choose(self, key: Any, configs: Sequence[dict[str, Any]], run: Callable[[dict[str, Any]], Any]):
        if key in self.cache:
            return self.cache[key]
        if len(configs) == 1 or os.environ.get("TLX_KERNELS_NO_TUNE"):
            self.cache[key] = dict(configs[0])
            return self.cache[key]
        best, best_ms, rows, errors = None, math.inf, [], []
        for cfg in configs:
            try:
                run(cfg)  # compile outside the timed region
                ms = bench_ms(lambda cfg=cfg: run(cfg), warmup_ms=self.warmup_ms, rep_ms=self.rep_ms)
            except Exception as e:  # a config that does not compile or launch is skipped
                errors.append(f"{config_name(cfg)}: {type(e).__name__}: {str(e).splitlines()[0][:200]}")
                continue
            rows.append((config_name(cfg), ms))
            if ms < best_ms:
                best, best_ms = cfg, ms
        if best is None:
            raise RuntimeError("no config ran: " + "; ".join(errors))
        self.timings[key] = rows
        self.cache[key] = dict(best)
        return self.cache[key]


__all__ = [
    "SMEM_LIMIT",
    "Tuner",
    "bench_ms",
    "check_config",
    "config_name",
    "feasible",
    "problem_key",
    "smem_bytes",
    "variants",
]
