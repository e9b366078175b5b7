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

__all__ = ["PLAIN_MAX", "line_count", "pack_stage", "pack_stage_diff", "pack_text", "unpack_stage",
           "unpack_stage_diff", "unpack_text"]

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
    """A stage with its ``text`` and ``line_map`` (Reports of schema 1.0 have them already)."""
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
