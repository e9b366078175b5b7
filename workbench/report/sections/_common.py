"""What the section modules share: number formatting for summaries, a measured payload's head, and why a
section that needs the kernel run on the GPU has nothing."""

from __future__ import annotations

import datetime as _dt
from typing import Any


def num(v: Any, fmt: str) -> str | None:
    return format(v, fmt) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def pct(v: Any) -> str | None:
    return f"{100 * v:.0f}%" if isinstance(v, (int, float)) else None


def now() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def base(kind: str, by: str, device: Any) -> dict[str, Any]:
    """A measured payload's head: what, by what, on which device, when."""
    return {"kind": kind, "measured_by": by, "device": device.name, "when": now()}


def why_not_on_gpu(entry: Any, device: Any) -> str:
    """Why a section that needs the kernel run on the GPU has nothing: what its launch said (``--compile-only``,
    an interpreter run, ...) when it said it, else the device."""
    reason = next((r.get("reason") for r in reversed(entry.runs) if not r.get("ran") and r.get("reason")), None)
    if reason and (device.available or "no GPU" not in reason):
        return reason
    return f"no GPU ({device.reason})" if not device.available else "the kernel did not run on the GPU"
