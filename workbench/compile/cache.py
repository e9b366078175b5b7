"""Artifact cache: in memory and on disk, keyed by content."""

from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path
from typing import Any

from workbench.ir.artifact import Artifact

_MEMORY: dict[str, Artifact] = {}
_LOCK = threading.Lock()


def cache_dir() -> Path:
    env = os.environ.get("TLX_WORKBENCH_CACHE_DIR")
    if env:
        return Path(env)
    try:
        import platformdirs

        return Path(platformdirs.user_cache_dir("tlx-workbench"))
    except ImportError:
        return Path.home() / ".cache" / "tlx-workbench"


def make_key(parts: list[Any]) -> str:
    blob = json.dumps(parts, sort_keys=True, default=repr)
    return hashlib.sha256(blob.encode()).hexdigest()


def get(key: str) -> Artifact | None:
    with _LOCK:
        art = _MEMORY.get(key)
    if art is not None:
        return art
    path = cache_dir() / "artifacts" / f"{key}.json"
    if path.exists():
        try:
            art = Artifact.from_dict(json.loads(path.read_text()))
        except Exception:
            return None  # a corrupt or old entry is a miss, not an error
        with _LOCK:
            _MEMORY[key] = art
        return art
    return None


def put(art: Artifact, key: str | None = None) -> None:
    """Keep ``art`` under ``key`` (default: its own key)."""
    key = key or art.key
    with _LOCK:
        _MEMORY[key] = art
    d = cache_dir() / "artifacts"
    try:
        d.mkdir(parents=True, exist_ok=True)
        tmp = d / f".{key}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps(art.to_dict()))
        tmp.replace(d / f"{key}.json")
    except OSError:
        pass  # a read-only cache dir only costs the disk tier


def clear(memory: bool = True, disk: bool = False) -> None:
    if memory:
        with _LOCK:
            _MEMORY.clear()
    if disk:
        d = cache_dir() / "artifacts"
        for p in d.glob("*.json") if d.exists() else []:
            p.unlink(missing_ok=True)
