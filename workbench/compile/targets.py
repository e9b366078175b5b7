"""Compilation targets: 'sm_90' and friends -> Triton GPUTarget."""

from __future__ import annotations

import re

from workbench.errors import TargetError

SUPPORTED = {80: "Ampere (A100)", 86: "Ampere (RTX 30)", 89: "Ada (L4, RTX 40)", 90: "Hopper (H100, H200)",
             100: "Blackwell (B200)", 120: "Blackwell (RTX 50)"}


def parse_target(target: str):
    """'sm_90' / 'sm_90a' / 'cuda:90' / 90 -> triton.backends.compiler.GPUTarget."""
    from triton.backends.compiler import GPUTarget

    text = str(target).strip().lower()
    m = re.fullmatch(r"(?:sm_?|cuda:?)?(\d{2,3})a?", text)
    if not m:
        raise TargetError(
            f"unsupported target {target!r}",
            hint="use an NVIDIA compute capability such as 'sm_90' (Hopper); AMD targets are not supported yet",
        )
    arch = int(m.group(1))
    if arch not in SUPPORTED:
        names = ", ".join(f"sm_{k} ({v})" for k, v in SUPPORTED.items())
        raise TargetError(f"unsupported target {target!r}", hint=f"supported targets: {names}")
    return GPUTarget("cuda", arch, 32)


def target_name(gpu_target) -> str:
    return f"sm_{gpu_target.arch}"


# Shared memory one block may use (bytes): sm_90/sm_100 227 KiB, sm_80 163 KiB, consumer parts 99 KiB.
_SMEM_LIMITS = (("sm_100", 232448), ("sm_103", 232448), ("sm_90", 232448), ("sm_80", 166912),
                ("sm_86", 101376), ("sm_87", 166912), ("sm_89", 101376), ("sm_120", 101376))


def smem_limit(target: str) -> int | None:
    """Bytes of shared memory one block may use on ``target`` (``sm_90``...); None when not known."""
    for prefix, limit in _SMEM_LIMITS:
        if target.startswith(prefix):
            return limit
    return None
