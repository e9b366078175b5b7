"""Large Report texts stored once, compressed: gzip + base64 in the JSON (``text_gz``, ``diff_gz``, and
``line_map_gz`` for a stage's line map, the JSON of the map).

The JupyterLab extension inflates them with the browser's ``DecompressionStream('gzip')``; nothing
needs a kernel, so a saved notebook renders the same when reopened. Short texts stay plain.
"""

from __future__ import annotations

import base64
import gzip
import json
from typing import Any

__all__ = ["PLAIN_MAX", "line_count", "pack_stage", "pack_stage_diff", "pack_stages", "pack_text",
           "unpack_stage", "unpack_stage_diff", "unpack_text"]

PLAIN_MAX = 2048  # texts up to this many characters are stored as they are


def pack_text(text: str) -> str:
    """base64 of the gzip-compressed UTF-8 text (mtime 0: the same text gives the same bytes)."""
    return base64.b64encode(gzip.compress(text.encode("utf-8"), compresslevel=9, mtime=0)).decode("ascii")


def unpack_text(data: str) -> str:
    return gzip.decompress(base64.b64decode(data)).decode("utf-8")


def line_count(text: str) -> int:
    return len(text.splitlines())


def _packed(d: dict[str, Any], key: str) -> dict[str, Any]:
    text = d.get(key)
    if not isinstance(text, str) or len(text) <= PLAIN_MAX:
        return d
    out = {k: v for k, v in d.items() if k != key}
    out[f"{key}_gz"] = pack_text(text)
    return out


def _unpacked(d: dict[str, Any], key: str) -> dict[str, Any]:
    if f"{key}_gz" not in d:
        return d
    out = {k: v for k, v in d.items() if k != f"{key}_gz"}
    out[key] = unpack_text(d[f"{key}_gz"])
    return out


def pack_stage(stage: dict[str, Any]) -> dict[str, Any]:
    """A stage as the JSON stores it: ``line_count``, ``text`` or ``text_gz``, ``line_map`` or ``line_map_gz``."""
    d = dict(stage)
    d["line_count"] = line_count(d.get("text") or "")
    lmap = json.dumps(d.get("line_map") or {}, separators=(",", ":"))
    if len(lmap) > PLAIN_MAX:
        del d["line_map"]
        d["line_map_gz"] = pack_text(lmap)
    return _packed(d, "text")


def unpack_stage(stage: dict[str, Any]) -> dict[str, Any]:
    """A stage with its ``text`` and ``line_map`` (Reports of schema 1.0 have them already); a stage
    stored as a head keeps ``full_line_count``."""
    d = _unpacked(stage, "text")
    if "line_map_gz" in d:
        d = {k: v for k, v in d.items() if k != "line_map_gz"}
        d["line_map"] = json.loads(unpack_text(stage["line_map_gz"]))
    d.setdefault("line_count", line_count(d.get("text") or ""))
    return d


def pack_stage_diff(sd: dict[str, Any]) -> dict[str, Any]:
    return _packed(dict(sd), "diff")


def unpack_stage_diff(sd: dict[str, Any]) -> dict[str, Any]:
    return _unpacked(dict(sd), "diff")


MIN_HEAD_LINES = 200


def _head(stage: dict[str, Any], keep: int) -> dict[str, Any]:
    lines = (stage.get("text") or "").splitlines()
    lmap = {u: [t for t in ts if t <= keep] for u, ts in (stage.get("line_map") or {}).items()}
    head = {**stage, "text": "\n".join(lines[:keep]), "line_map": {u: ts for u, ts in lmap.items() if ts}}
    return {**pack_stage(head), "full_line_count": len(lines)}


def pack_stages(stages: list[dict[str, Any]], max_bytes: int | None = None) -> list[dict[str, Any]]:
    """The stages as the JSON stores them, within ``max_bytes`` of JSON when given: past it, the
    largest stages (LLVM IR first, in practice) keep only their first lines, and ``full_line_count``
    says how many the stage has (the Report in the kernel's session keeps every line)."""
    packed = [pack_stage(s) for s in stages]
    if max_bytes is None:
        return packed
    sizes = [len(json.dumps(p)) for p in packed]
    for _ in range(12):
        over = sum(sizes) - max_bytes
        if over <= 0:
            break
        i = max(range(len(packed)), key=sizes.__getitem__)
        kept = packed[i]["line_count"]
        keep = max(MIN_HEAD_LINES, int(kept * (sizes[i] - over - 1024) / sizes[i]))
        if keep >= kept:
            break  # nothing left to cut
        packed[i] = _head(stages[i], keep)
        sizes[i] = len(json.dumps(packed[i]))
    return packed
