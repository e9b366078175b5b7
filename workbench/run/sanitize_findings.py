"""Sanitizer records -> findings on the user's lines, each with what it means and how far to trust it.

A location becomes a user line in this order: the sanitizer's own ``file:line`` when the file is the
kernel's (Triton's cubins carry ``-lineinfo``); else the offset inside the kernel, looked up in the
Artifact's SASS (``/*0430*/`` addresses) and mapped back with ``reverse_map("sass")``, when the
Artifact was compiled for the device that ran it.

The tools' limits are stated in each finding, never left for the reader to know:
- racecheck does not model mbarrier or TMA ordering, so on a kernel synchronised by mbarriers a race
  between two tasks can be a false positive. Such a report is a warning (an error when a static
  check found a slot reused before its release at the same lines), and a report attributed to the
  kernel's ``def`` line (no precise location; seen on a correct TMA ring on the H200) is "likely a
  false positive".
- a launch failure reported as a CUDA API error says only that the kernel failed.
"""

from __future__ import annotations

import re
from typing import Any

from workbench.run.sanitize_report import Access, Record

__all__ = ["clean_finding", "source_of", "to_findings"]

_SASS_OFFSET = re.compile(r"/\*([0-9a-f]{4,})\*/")
_SECTION = re.compile(r"^\s*\.section\s+\.text\.(\S+?),")

_CONSAN = {
    "outstanding writes": ("consan-unwaited-write",
                           "reads or writes a buffer while an asynchronous write to it (a TMA load, an async "
                           "copy, another task's store) has not been waited for",
                           "wait on the barrier that completes that write before this access"),
    "outstanding reads": ("consan-slot-reuse",
                          "writes a buffer that another task (or an asynchronous MMA) may still be reading",
                          "wait for the slot's release (its 'empty' barrier) before writing it again"),
    "deadlock": ("consan-deadlock", "every unfinished warp waits on an mbarrier: this wait can never complete",
                 "a barrier this wait needs is never arrived on (or its phase never flips): see the static checks"),
    "underflow": ("consan-arrive-underflow", "more arrives (or transaction bytes) than the barrier's count",
                  "check the barrier's arrive count and the expect-bytes against the copies that complete it"),
    "re-initialized": ("consan-barrier-reinit", "a barrier is initialised again without being invalidated", None),
    "before initialization": ("consan-barrier-uninit", "a barrier is used before it is initialised (or after "
                              "it is invalidated)", None),
}


def kernel_def_line(artifact: Any) -> int | None:
    src = getattr(artifact, "source", None)
    if src is None:
        return None
    lines = src.text.splitlines()
    for i in range(max(src.first_line - 1, 0), min(len(lines), src.first_line + 40)):
        if lines[i].lstrip().startswith("def "):
            return i + 1
    return src.first_line


def _sass_line(artifact: Any, function: str | None, offset: int) -> int | None:
    """The SASS stage line holding the instruction at ``offset`` of ``function``."""
    sass = getattr(artifact, "stages", {}).get("sass")
    if not sass:
        return None
    inside = function is None
    for i, text in enumerate(sass.splitlines(), start=1):
        m = _SECTION.match(text)
        if m:
            inside = function is None or m.group(1) == function
            continue
        if inside:
            o = _SASS_OFFSET.search(text)
            if o and int(o.group(1), 16) == offset:
                return i
    return None


def user_line(access: Access, artifact: Any, same_device: bool) -> int | None:
    from workbench.analyse.srcmap import same_file

    src = getattr(artifact, "source", None)
    if access.line is not None and access.file and src is not None and same_file(access.file, src.filename):
        return access.line
    if access.offset is not None and same_device and artifact is not None:
        stage_line = _sass_line(artifact, access.function, access.offset)
        if stage_line is not None:
            try:
                users = artifact.reverse_map("sass").get(stage_line)
            except Exception:
                users = None
            if users:
                return users[0]
    return None


def _where(rec: Record) -> str:
    parts = []
    if rec.thread:
        parts.append(f"thread ({rec.thread})")
    if rec.block:
        parts.append(f"block ({rec.block})")
    n = f"; {rec.count} reports" if rec.count > 1 else ""
    return (" [" + ", ".join(parts) + n + "]") if parts or n else ""


def _uses_mbarriers(artifact: Any) -> bool:
    ptx = getattr(artifact, "stages", {}).get("ptx", "") if artifact is not None else ""
    return "mbarrier" in ptx or "cp.async.bulk" in ptx


def _static_at(static: list[dict[str, Any]], lines: set[int]) -> dict[str, Any] | None:
    words = ("reuse", "race", "release", "slot")
    for f in static:
        rel = {r.get("line") for r in f.get("related", []) or []}
        if ({f.get("line")} | rel) & lines and any(w in f"{f.get('rule')} {f.get('message')}".lower() for w in words):
            return f
    return None


def _race(rec: Record, lines: list[int | None], artifact: Any, static: list[dict[str, Any]]) -> dict[str, Any]:
    known = [ln for ln in lines if ln is not None]
    def_line = kernel_def_line(artifact)
    roles = [f"{(a.role or 'access').lower()} at line {ln if ln is not None else '?'}"
             for a, ln in zip(rec.accesses, lines)]
    n = f" ({rec.hazards} hazards)" if rec.hazards else ""
    msg = f"racecheck: shared-memory race between {' and '.join(roles) or 'two accesses'}{n}{_where(rec)}"
    line = known[-1] if known else None
    if not known:
        return {"severity": "warning", "line": None, "message": msg,
                "hint": "racecheck named no source line (and the offsets could not be mapped): see the raw output"}
    if _uses_mbarriers(artifact):
        confirmed = _static_at(static, set(known))
        if set(known) <= {def_line}:
            return {"severity": "info", "line": def_line, "message": msg,
                    "hint": "likely a false positive: racecheck attributes this race to the kernel's entry and does "
                            "not model mbarrier/TMA ordering; the static checks of slot reuse carry the weight here"}
        if confirmed is not None:
            return {"severity": "error", "line": line, "message": msg,
                    "hint": f"confirmed by the static check [{confirmed.get('rule')}] at line {confirmed.get('line')}: "
                            f"{confirmed.get('message')}"}
        return {"severity": "warning", "line": line, "message": msg,
                "hint": "possibly a false positive: racecheck does not model mbarrier/TMA ordering. A real race "
                        "here means a slot is written again before its last read released it: check that the "
                        "reader arrives on the slot's 'empty' barrier only after it has read the slot"}
    return {"severity": "error", "line": line, "message": msg,
            "hint": "two threads access the same shared memory without a barrier between them"}


def _memory(rec: Record, line: int | None) -> dict[str, Any]:
    detail = "; ".join(d for d in rec.details[:2])
    msg = f"{rec.tool}: {rec.headline}{_where(rec)}" + (f": {detail}" if detail else "")
    hints = {"invalid-access": "an access outside its tensor: check the offsets and the mask of this load/store",
             "misaligned": "an access whose address is not aligned to its size (vector width or TMA alignment)",
             "uninitialized": "this read sees global memory nothing wrote (scratch, or an output read before "
                              "it is written)",
             "hardware": "the GPU stopped this warp: the line is where it happened"}
    return {"severity": "error", "line": line, "message": msg, "hint": hints.get(rec.kind)}


def _consan(rec: Record, line: int | None, static: list[dict[str, Any]]) -> dict[str, Any]:
    low = rec.headline.lower()
    rule, what, hint = next((v for k, v in _CONSAN.items() if k in low), ("consan-assert", rec.headline, None))
    f = {"rule": rule, "severity": "error", "line": line,
         "message": f"ConSan: line {line} {what} ({rec.headline}){_where(rec)}", "hint": hint}
    if rule == "consan-deadlock":
        # ConSan names the wait of whichever deadlocked thread it reports first (producer or consumer: it varies
        # from run to run); the static checks know which wait nothing completes, the one to fix.
        root = [s for s in static if s.get("rule") == "wait-never-completes" and s.get("line") not in (None, line)]
        if root:
            f["hint"] = (f"the wait nothing completes is at line {root[0]['line']} (static check "
                         f"[wait-never-completes]); the wait here waits on it")
            f["related"] = [{"line": s["line"], "message": "the wait nothing completes (static check)"} for s in root]
    return f


def to_findings(records: list[Record], tool: str, artifact: Any, *, same_device: bool = True,
                static: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Findings (the Report's finding shape) for the records of one sanitizer run."""
    out = []
    for rec in records:
        lines = [user_line(a, artifact, same_device) for a in rec.accesses]
        first = next((ln for ln in lines if ln is not None), None)
        if rec.kind in ("race", "hazard"):
            f = _race(rec, lines, artifact, static or [])
        elif rec.kind == "assert":
            f = _consan(rec, first, static or [])
        elif rec.kind == "api-error":
            why = rec.details[0] if rec.details else rec.headline
            f = {"severity": "info", "line": None, "message": f"{tool}: the launch failed ({why})",
                 "hint": "the sanitizer saw the failure but named no access; the reports above (if any) say where"}
        elif rec.kind in ("invalid-access", "misaligned", "uninitialized", "hardware"):
            f = _memory(rec, first)
        else:
            f = {"severity": "error" if rec.severity == "error" else "warning", "line": first,
                 "message": f"{tool}: {rec.headline}{_where(rec)}", "hint": None}
        f.setdefault("rule", f"{tool}-{rec.kind}")
        f["source"] = source_of(tool)
        accessed = [{"line": ln, "message": f"{(a.role or 'access').lower()} access"}
                    for a, ln in zip(rec.accesses, lines) if ln is not None and ln != f["line"]]
        f["related"] = accessed + f.get("related", [])  # a finding's own related lines (ConSan deadlock) after them
        out.append(f)
    return out


def source_of(tool: str) -> str:
    """What a sanitizer finding says produced it."""
    return "consan" if tool == "consan" else f"compute-sanitizer {tool}"


def clean_finding(tool: str, detail: str) -> dict[str, Any]:
    """The one finding of a run that reported nothing, saying what the tool does not see."""
    limits = {"racecheck": "racecheck checks shared memory only and does not model mbarrier/TMA ordering",
              "synccheck": "synccheck checks barrier usage (bar.sync, divergent barriers), not mbarrier phases",
              "memcheck": "memcheck checks global/shared/local accesses of this launch with these inputs",
              "initcheck": "initcheck checks reads of uninitialised global memory",
              "consan": "ConSan checks shared-memory and barrier ordering between the tasks that ran"}
    return {"rule": f"{tool}-clean", "severity": "info", "line": None, "source": source_of(tool),
            "message": f"{tool}: nothing reported ({detail})", "hint": limits.get(tool), "related": []}
