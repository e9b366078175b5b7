"""Configs of the GEMM kernels: names, shared-memory budgets, sweep spaces, the key a tuned config is valid for."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tlx_kernels.hopper import SMEM_LIMIT

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
    "SKIP_EMPTY_HALF": "skip",
}
_DEFAULTS = {"EPI_SPLIT": 1, "EPI_BUFS": 1, "WARP_BAR": False, "CONSUMER_REGS": 232, "MMA_WAIT": 1,
             "SKIP_EMPTY_HALF": False}


_ORDER = ("PERSISTENT", "WS", "NUM_STAGES", "num_stages", "GROUP_M", "EPI_SPLIT", "EPI_BUFS", "WARP_BAR",
          "MMA_WAIT", "SKIP_EMPTY_HALF", "CONSUMER_REGS", "num_warps")


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


def problem_key(a, b) -> tuple:
    """What a tuned config is valid for: sizes, dtype, operand majorness."""
    return (a.shape[0], b.shape[1], a.shape[1], str(a.dtype), a.stride(0) == 1, b.stride(0) == 1)


__all__ = [
    "SMEM_LIMIT",
    "check_config",
    "config_name",
    "feasible",
    "problem_key",
    "smem_bytes",
    "variants",
]
