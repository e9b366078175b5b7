"""Reading what compute-sanitizer (and Triton's ConSan) print, as records tied to the user's lines.

compute-sanitizer prefixes its own lines with ``=========``; a report starts with a headline and
continues with indented lines (``at KERNEL+0xOFF in FILE:LINE``, ``by thread (x,y,z) in block
(x,y,z)``, ``and Read access at ...``, ``Address ... is out of bounds``). Two spellings of a
location are read: ``kernel+0x430 in file:46`` (2023 and later) and ``0x430 in file:46:kernel(...)``
(older), with or without ``in file:line`` (no line info in the cubin).

ConSan (``instrumentation_mode="consan"``) reports through a device-side assert, which CUDA prints
on the process's output as ``FILE:LINE: FUNC: block: [x,y,z], thread: [x,y,z] Assertion `MSG`
failed.``; the location is the instrumented operation's, i.e. the user's line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Access", "Record", "parse_consan", "parse_sanitizer", "summary_counts"]

_PREFIX = re.compile(r"^={5,} ?")
_SEVERITY = re.compile(r"^(Error|Warning|Info|Fatal):\s*", re.IGNORECASE)
_HAZARDS = re.compile(r"\s*\[(\d+) hazards?\]\s*$")
_LOC_NEW = re.compile(r"(?P<func>[^\s()]+?)\+0x(?P<off>[0-9a-fA-F]+)(?: in (?P<file>.+?):(?P<line>\d+))?\s*$")
_LOC_OLD = re.compile(r"0x(?P<off>[0-9a-fA-F]+) in (?P<file>[^:]+?):(?P<line>\d+):(?P<func>.+?)\s*$")
_LOC_NOLINE = re.compile(r"0x(?P<off>[0-9a-fA-F]+) in (?P<func>.+?)\s*$")
_RACE = re.compile(r"Race reported between (?P<role>\w+) access at (?P<loc>.+)$")
_AND = re.compile(r"^and (?P<role>\w+) access at (?P<loc>.+)$")
_HAZARD = re.compile(r"Potential (?P<kind>RAW|WAR|WAW) hazard detected at (?P<space>\S+) (?P<addr>0x[0-9a-fA-F]+)")
_THREAD_AT = re.compile(r"^(?P<role>Read|Write|Atomic)\s+Thread \((?P<thread>[\d,\s]+)\) at (?P<loc>.+)$")
_AT = re.compile(r"^at (?P<loc>.+)$")
_BY = re.compile(r"^by thread \((?P<thread>[\d,\s]+)\) in block \((?P<block>[\d,\s]+)\)")
_API = re.compile(r'Program hit (?P<err>\w+) \(error (?P<code>\d+)\) due to "(?P<why>[^"]*)" on CUDA API call to '
                  r"(?P<call>\S+?)\.?$")
_ERROR_SUMMARY = re.compile(r"ERROR SUMMARY: (\d+) errors?")
_RACE_SUMMARY = re.compile(r"RACECHECK SUMMARY: (\d+) hazards? displayed \((\d+) errors?, (\d+) warnings?\)")
_ASSERT = re.compile(r"(?P<file>[^\s:][^:]*?):(?P<line>\d+): (?P<func>[^:]*?): block: \[(?P<block>[\d,\s]+)\], "
                     r"thread: \[(?P<thread>[\d,\s]+)\] Assertion `(?P<msg>.*)` failed")
_SKIP = ("COMPUTE-SANITIZER", "ERROR SUMMARY", "RACECHECK SUMMARY", "LEAK SUMMARY", "Target application returned",
         "Saved host backtrace", "Host Frame", "Device Frame")


@dataclass
class Access:
    """One place the sanitizer named: a kernel, an offset in it, and a source line when it has one."""

    role: str | None = None  # "Write", "Read", ...
    function: str | None = None
    offset: int | None = None
    file: str | None = None
    line: int | None = None


@dataclass
class Record:
    tool: str
    kind: str  # race, hazard, invalid-access, misaligned, uninitialized, barrier, hardware, api-error, assert, other
    severity: str  # as the tool said it: error, warning, info
    headline: str
    accesses: list[Access] = field(default_factory=list)
    thread: str | None = None
    block: str | None = None
    hazards: int | None = None
    details: list[str] = field(default_factory=list)
    count: int = 1

    def key(self) -> tuple:
        return (self.kind, self.headline, tuple((a.role, a.function, a.offset, a.line) for a in self.accesses))


def parse_location(text: str, role: str | None = None) -> Access:
    text = _HAZARDS.sub("", text.strip())
    for rx in (_LOC_NEW, _LOC_OLD, _LOC_NOLINE):
        m = rx.search(text)
        if m:
            d = m.groupdict()
            return Access(role=role, function=d.get("func"), offset=int(d["off"], 16), file=d.get("file"),
                          line=int(d["line"]) if d.get("line") else None)
    return Access(role=role)


def _kind(headline: str) -> str:
    h = headline.lower()
    for words, kind in ((("race reported",), "race"), (("hazard detected",), "hazard"),
                        (("uninitialized",), "uninitialized"), (("misaligned",), "misaligned"),
                        (("invalid __", "invalid read", "invalid write", "out of bounds"), "invalid-access"),
                        (("barrier", "divergent", "syncwarp", "invalid arguments"), "barrier"),
                        (("warp ", "illegal", "out-of-range", "hardware"), "hardware"),
                        (("program hit",), "api-error")):
        if any(w in h for w in words):
            return kind
    return "other"


def _lines(text: str) -> list[str | None]:
    """The sanitizer's own lines without their prefix; None separates reports."""
    out: list[str | None] = []
    for raw in text.splitlines():
        m = _PREFIX.match(raw)
        if not m:
            continue  # the program's own output
        body = raw[m.end():]
        out.append(body if body.strip() else None)
    return out


def _start(tool: str, body: str) -> Record:
    sev_m = _SEVERITY.match(body)
    severity = (sev_m.group(1).lower() if sev_m else "error").replace("fatal", "error")
    headline = body[sev_m.end():] if sev_m else body
    rec = Record(tool=tool, kind=_kind(headline), severity=severity, headline=headline.strip())
    m = _RACE.search(headline)
    if m:
        rec.headline = "Race reported between accesses"
        rec.accesses.append(parse_location(m.group("loc"), m.group("role")))
        rec.hazards = _hazard_count(m.group("loc"))
    return rec


def _hazard_count(text: str) -> int | None:
    m = _HAZARDS.search(text)
    return int(m.group(1)) if m else None


def _continue(rec: Record, body: str) -> None:
    s = body.strip()
    for rx, role_key in ((_AND, "role"), (_THREAD_AT, "role"), (_AT, None)):
        m = rx.match(s)
        if m:
            rec.accesses.append(parse_location(m.group("loc"), m.group(role_key) if role_key else None))
            n = _hazard_count(m.group("loc"))
            rec.hazards = (rec.hazards or 0) + n if n else rec.hazards
            if rx is _THREAD_AT and rec.thread is None:
                rec.thread = m.group("thread").replace(" ", "")
            return
    m = _BY.match(s)
    if m:
        rec.thread, rec.block = m.group("thread").replace(" ", ""), m.group("block").replace(" ", "")
        return
    if not s.startswith(_SKIP):
        rec.details.append(s)


def parse_sanitizer(text: str, tool: str) -> list[Record]:
    """Every report in compute-sanitizer's output, identical ones merged (``count``)."""
    records: list[Record] = []
    current: Record | None = None
    for body in _lines(text):
        if body is None:
            current = None
            continue
        if body.startswith((" ", "\t")) and current is not None:
            _continue(current, body)
            continue
        stripped = body.strip()
        if stripped.startswith(_SKIP) or not stripped:
            current = None
            continue
        current = _start(tool, stripped)
        api = _API.search(stripped)
        if api:
            current.kind, current.severity = "api-error", "info"
            current.details.append(api.group("why"))
        records.append(current)
    return _merge(records)


def _merge(records: list[Record]) -> list[Record]:
    merged: dict[tuple, Record] = {}
    for r in records:
        k = r.key()
        if k in merged:
            merged[k].count += 1
        else:
            merged[k] = r
    return list(merged.values())


def summary_counts(text: str) -> dict[str, int]:
    """The tool's own totals (``ERROR SUMMARY``, ``RACECHECK SUMMARY``), when printed."""
    out: dict[str, int] = {}
    for body in _lines(text):
        if body is None:
            continue
        m = _ERROR_SUMMARY.search(body)
        if m:
            out["errors"] = int(m.group(1))
        m = _RACE_SUMMARY.search(body)
        if m:
            out.update(hazards=int(m.group(1)), errors=int(m.group(2)), warnings=int(m.group(3)))
    return out


def parse_consan(text: str) -> list[Record]:
    """ConSan's device-side assertions in a process's output, one record per (line, message)."""
    records = []
    for raw in text.splitlines():
        m = _ASSERT.search(raw)
        if not m:
            continue
        acc = Access(function=m.group("func").strip(), file=m.group("file").strip(), line=int(m.group("line")))
        records.append(Record(tool="consan", kind="assert", severity="error", headline=m.group("msg").strip(),
                              accesses=[acc], thread=m.group("thread").replace(" ", ""),
                              block=m.group("block").replace(" ", "")))
    return _merge(records)


def records_to_dicts(records: list[Record]) -> list[dict[str, Any]]:
    from dataclasses import asdict

    return [asdict(r) for r in records]
