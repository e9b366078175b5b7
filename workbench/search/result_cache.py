"""A search's rows kept on disk, one file per candidate, beside the workbench's compile cache: a later search of the
same candidate reuses what it has instead of compiling, checking and timing it again.

The key holds everything a row depends on: the kernel (Triton's own key of it: its source, the JIT functions it
calls and the global constexprs it reads, as Triton's cache does; so a notebook cell run again with the same
source finds its rows), the reference and the autotuner's pre_hook (as the search sends them), the arguments'
meta (dtypes, shapes, strides, storages; not their values: workers draw fresh ones), the outputs and tolerances,
the target, the candidate (its config, launch options, descriptor blocks and grid), the device that timed it
("compile-only" for a row nothing ran) and the versions (the workbench's own code, Triton, uTLX, torch). Only
outcomes that the key decides are kept: compiled, skipped, compile-error, ok and check-failed; a hang, a fault, a
lost worker, a compile process that died or a budget's skip is tried again. A row served from here says when and
where it was measured (``cached``: its date; ``device``).
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

from workbench.compile.cache import cache_dir, make_key

__all__ = ["KEPT", "load", "store"]

KEPT = {"compiled", "skipped", "compile-error", "ok", "check-failed"}
_CODE = ("compile", "analyse", "ir", "check", "run", "measure", "search")


def _dir() -> Path:
    return cache_dir() / "search-rows"


def _versions() -> list[str]:
    import torch
    import triton

    from workbench.compile.driver import code_fingerprint

    try:
        from importlib.metadata import version

        utlx = version("triton-utlx")
    except Exception:
        utlx = None
    return [code_fingerprint(_CODE), triton.__version__, str(utlx), torch.__version__]


def _key(problem: Any, cand: Any, device: str, versions: list[str]) -> str:
    rec = problem.record
    meta = [(k, repr(v)) for k, v in rec.args.items()], [(s.nbytes, s.dtype) for s in rec.storages]
    return make_key([problem.extras["kernel_key"], (problem.reference or b"").hex(),
                     (problem.tuner_pre_hook or b"").hex(), meta, problem.outputs, problem.atol, problem.rtol,
                     problem.rounds, problem.skip_on_error, problem.target, repr(cand.config),
                     repr(sorted(cand.options.items())), repr(sorted(cand.blocks.items())), cand.grid,
                     repr(cand.delay), device, versions])


def load(problem: Any, cands: list[Any], device: str) -> dict[int, dict[str, Any]]:
    """The kept rows of ``cands`` (by index) for a search on ``device``."""
    versions = _versions()
    out: dict[int, dict[str, Any]] = {}
    for c in cands:
        path = _dir() / f"{_key(problem, c, device, versions)}.json"
        try:
            row = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if row.get("status") in KEPT:
            out[c.index] = {**row, "index": c.index}
    return out


def store(problem: Any, cands: list[Any], rows: dict[int, dict[str, Any]], device: str) -> int:
    """Keep the rows of ``cands`` whose outcome the key decides; returns how many were written."""
    versions = _versions()
    now = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    d = _dir()
    d.mkdir(parents=True, exist_ok=True)
    n = 0
    for c in cands:
        row = rows.get(c.index) or {}
        if row.get("status") not in KEPT or row.get("transient"):  # a process that died: not the key's doing
            continue
        path = d / f"{_key(problem, c, device, versions)}.json"
        tmp = path.with_suffix(f".{id(row)}.tmp")
        tmp.write_text(json.dumps({**row, "cached": now, "device": device}, default=str))
        tmp.replace(path)  # whole or absent, with searches side by side
        n += 1
    return n
