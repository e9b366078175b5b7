"""The live hang snapshot (``--snapshot``): where a running kernel's warps wait, read while it runs.

A snapshot build (``compile.snapshot``) has lane 0 of every warp write ``[site + 1, barrier, phase, state]`` into
its slot of a buffer around each mbarrier wait loop and named-barrier sync. In the worker, ``Buffer`` is that
buffer: pinned host memory the GPU writes through its mapped address (the module's global points at it), read
by the host while the launch runs without any CUDA call. ``summary`` folds the slots into groups (site, warp in
its CTA, barrier, phase, state) with a count of CTAs; the worker sends one every ``EVERY_S`` while the launch
runs, the watchdog keeps the last; ``waiting`` says per role where its warps wait (the Report's run and the
Orchestration tab's marks) and ``describe`` says it in words, for the hang's error.
"""

from __future__ import annotations

import ctypes
from collections import Counter
from typing import Any

from workbench.compile.snapshot import PASSED, RECORD_WORDS, SLOTS, SYMBOL, WAITING

__all__ = ["EVERY_S", "Buffer", "describe", "summary", "waiting"]

EVERY_S = 0.5
MAX_GROUPS = 200


class Buffer:
    """Worker side: the pinned buffer and pointing a loaded kernel's module at it."""

    def __init__(self) -> None:
        import torch

        self.words = torch.zeros(SLOTS * RECORD_WORDS, dtype=torch.int32, pin_memory=True)
        self._cuda = ctypes.CDLL("libcuda.so.1")

    def point(self, module: int) -> None:
        """Zero the records and write the buffer's address into the module's ``SYMBOL``."""
        self.words.zero_()
        dptr, size = ctypes.c_uint64(0), ctypes.c_size_t(0)
        rc = self._cuda.cuModuleGetGlobal_v2(ctypes.byref(dptr), ctypes.byref(size), ctypes.c_void_p(module),
                                             SYMBOL.encode())
        if rc != 0:
            raise RuntimeError(f"cuModuleGetGlobal({SYMBOL}) failed ({rc}): the kernel is not a snapshot build")
        address = ctypes.c_uint64(self.words.data_ptr())  # pinned memory is mapped at the same address (UVA)
        rc = self._cuda.cuMemcpyHtoD_v2(dptr, ctypes.byref(address), ctypes.c_size_t(8))
        if rc != 0:
            raise RuntimeError(f"cuMemcpyHtoD to {SYMBOL} failed ({rc})")

    def read(self, warps_per_cta: int) -> list[dict[str, Any]]:
        return summary(self.words.view(SLOTS, RECORD_WORDS).tolist(), warps_per_cta)


def summary(records: list[list[int]], warps_per_cta: int) -> list[dict[str, Any]]:
    """Groups of warps in the same state: ``site`` (the record's index), ``warp`` (in its CTA), ``barrier``,
    ``phase``, ``state`` (waiting/passed), ``ctas`` (how many), ``cta`` (the first). Waiting groups first."""
    groups: Counter[tuple[int, int, int, int, int]] = Counter()
    first: dict[tuple[int, int, int, int, int], int] = {}
    wpc = max(1, warps_per_cta)
    for slot, (site, barrier, phase, state) in enumerate(records):
        if not site:
            continue
        key = (site - 1, slot % wpc, barrier & 0xFFFFFFFF, phase, state)
        groups[key] += 1
        first.setdefault(key, slot // wpc)
    rows = [{"site": k[0], "warp": k[1], "barrier": k[2], "phase": k[3],
             "state": "waiting" if k[4] == WAITING else "passed" if k[4] == PASSED else str(k[4]),
             "ctas": n, "cta": first[k]} for k, n in groups.items()]
    rows.sort(key=lambda r: (r["state"] != "waiting", -r["ctas"], r["warp"]))
    return rows[:MAX_GROUPS]


def waiting(rows: list[dict[str, Any]], sites: list[Any], tasks: list[Any]) -> list[dict[str, Any]]:
    """The groups of ``rows`` that wait, one per (role, site, barrier, phase): ``role`` (its task's name, else
    "warp N"), ``task`` (the model's index, None when no task holds the warp), ``warps``, ``ctas``, ``site``,
    ``kind`` (wait or named-barrier), ``line`` (the user's, None when unknown), ``barrier`` and ``phase``.
    ``sites``: the build's sites (``snapshot_sites(...).sites``), ``tasks``: the orchestration model's."""
    by_index = {s.index: s for s in sites}

    def task_of(warp: int) -> int | None:
        for i, t in enumerate(tasks):
            start = getattr(t, "start_warp", None)
            if start is not None and start <= warp < start + t.num_warps:
                return i
        return None

    out: dict[tuple[Any, int, int, int], dict[str, Any]] = {}
    for r in rows:
        if r["state"] != "waiting":
            continue
        task = task_of(r["warp"])
        who = tasks[task].name if task is not None else f"warp {r['warp']}"
        s = by_index.get(r["site"])
        g = out.setdefault((who, r["site"], r["barrier"], r["phase"]), {
            "role": who, "task": task, "warps": [], "ctas": 0, "site": r["site"],
            "kind": s.kind if s else "wait", "line": s.line if s else None, "barrier": r["barrier"],
            "phase": r["phase"]})
        g["warps"] = sorted({*g["warps"], r["warp"]})
        g["ctas"] = max(g["ctas"], r["ctas"])
    return list(out.values())


def describe(rows: list[dict[str, Any]], sites: list[Any], tasks: list[Any], line_text: Any = None) -> list[str]:
    """One line per (role, site, barrier, phase) that warps wait at (``waiting``): who waits where, by line."""
    out = []
    for w in waiting(rows, sites, tasks):
        line = w["line"]
        where = f"line {line}" if line else f"site {w['site']}"
        text = f" `{line_text(line)}`" if line and line_text else ""
        what = (f"named barrier {w['barrier']} ({w['phase']} threads)" if w["kind"] == "named-barrier"
                else f"the mbarrier at shared address {w['barrier']:#x}, phase {w['phase']}")
        warps = ", ".join(map(str, w["warps"]))
        out.append(f"{w['role']}: warps {warps} of {w['ctas']} CTA(s) wait at {where}{text} on {what}")
    if not out and rows:
        out.append("no warp was waiting at a barrier when the snapshot was taken (a loop that does not end?)")
    return out
