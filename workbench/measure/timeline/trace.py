"""Reading Proton's chrome trace (instrumentation backend) into per-CTA, per-warp events in cycles.

What Triton 3.8's libproton writes (``StreamChromeTraceWriter::writeKernel``): ``{"displayTimeUnit":
"ns", "traceEvents": [...]}`` with one complete event (``"ph": "X"``) per scope instance:

- ``pid``: ``"<kernel> Core<sm> CTA<block id>"``, ``tid``: ``"warp <w> (line <l>)"`` (lines separate
  overlapping, i.e. nested, scopes of one warp), ``name``: the scope name, ``cat``: the kernel name;
- ``ts = (cycle + (init_time - min_init_time) - cta_min_cycle) / 1000`` and ``dur = (end - start) /
  1000`` (int64 cycles divided as doubles by an assumed 1000 MHz: "microseconds" that are really
  kilocycles); ``init_time`` is the CTA's ``%globaltimer`` (ns) when it started, ``min_init_time``
  the earliest over the trace;
- ``args``: ``{"Init Time (ns)", "Post Final Time (ns)", "Finalization Time (ns)", "Frequency (MHz)":
  1000.0, "call_stack": [...]}``: the CTA's globaltimer at start and after Proton's finalization.

So within one CTA, ``(ts - ts_min) * 1000`` are exact cycles since the CTA's first event, and
``ts_min * 1000`` is the CTA's start in real nanoseconds (globaltimer) relative to the first CTA.
:func:`read_trace` keeps those two apart; times in ns come from ``Trace.clock_mhz`` (measured), never
from the assumed 1 GHz.
"""

from __future__ import annotations

import gzip
import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

PROTON_ASSUMED_MHZ = 1000.0

_PID = re.compile(r"^(?P<kernel>.*) Core(?P<core>\d+) CTA(?P<cta>\d+)$")
_TID = re.compile(r"^warp (?P<warp>\d+)(?: \(line (?P<line>\d+)\))?$")

#: activity (from the scope name, see ``scopes.py``) -> category used for colour and stats
CATEGORY = {
    "task": "task",
    "wait": "waiting",
    "tma_load": "tma",
    "load": "tma",
    "mma": "mma",
    "mma_wait": "mma_wait",
    "epilogue": "epilogue",
    "tma_store": "epilogue",
    "store": "epilogue",
    "store_wait": "store_wait",
}
CATEGORIES = ("waiting", "tma", "mma", "mma_wait", "epilogue", "store_wait", "other")
#: categories in which a warp waits (on another role, the tensor cores, or its own TMA stores)
WAITING = ("waiting", "mma_wait", "store_wait")
#: categories in which a warp issues work
ISSUING = ("tma", "mma", "epilogue")


@dataclass
class Event:
    cta: int
    warp: int
    name: str
    role: str
    activity: str
    detail: str | None
    start: int  #: cycles since the CTA's first event
    dur: int  #: cycles
    line: int = 0
    category: str = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        self.category = category_of(self.activity)

    @property
    def end(self) -> int:
        return self.start + self.dur


def category_of(activity: str) -> str:
    if activity in CATEGORY:
        return CATEGORY[activity]
    a = activity.lower()
    if a.endswith("_wait") and ("mma" in a or "dot" in a):
        return "mma_wait"
    if "wait" in a:
        return "waiting"
    if "tma" in a or "load" in a or "copy" in a:
        return "tma"
    if "mma" in a or "dot" in a or "wgmma" in a:
        return "mma"
    if "store" in a or "epilogue" in a:
        return "epilogue"
    return "other"


def parse_scope_name(name: str, warp: int) -> tuple[str, str, str | None]:
    """(role, activity, detail) of a scope name; names without ``role/`` get the warpgroup as role."""
    if "/" in name:
        role, rest = name.split("/", 1)
    else:
        role, rest = f"wg{warp // 4}", name
    activity, _, detail = rest.partition(":")
    return role or f"wg{warp // 4}", activity or rest, (detail or None)


@dataclass
class Trace:
    """One kernel launch's instrumentation trace."""

    kernel: str
    events: list[Event]
    cta_start_ns: dict[int, float]  #: CTA start (globaltimer) relative to the first CTA, ns
    cta_core: dict[int, int]  #: CTA -> SM it ran on
    cta_init_ns: dict[int, tuple[int, int, int]] = field(default_factory=dict)
    #: CTA -> (globaltimer at init, after finalization, finalization time) in ns (Proton 3.8's args)
    clock_mhz: float | None = None  #: measured SM clock (None: not measured; ns fall back to 1 GHz)
    clock_source: str | None = None
    total_ctas: int | None = None  #: CTAs in the launch (the file may hold a sample)
    source: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    cache: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)  #: derived views
    warnings: list[str] = field(default_factory=list)

    # -- views ------------------------------------------------------------------------------------
    @property
    def ctas(self) -> list[int]:
        return sorted(self.cta_start_ns)

    @property
    def mhz(self) -> float:
        return self.clock_mhz or PROTON_ASSUMED_MHZ

    def ns(self, cycles: float) -> float:
        return cycles * 1000.0 / self.mhz

    def roles(self) -> list[str]:
        """Roles in warp order (the trunk task's warps first)."""
        first: dict[str, int] = {}
        for e in self.events:
            first[e.role] = min(first.get(e.role, e.warp), e.warp)
        return sorted(first, key=lambda r: (first[r], r))

    def role_warps(self) -> dict[str, list[int]]:
        out: dict[str, set[int]] = defaultdict(set)
        for e in self.events:
            out[e.role].add(e.warp)
        return {r: sorted(out[r]) for r in self.roles()}

    def lanes(self) -> dict[tuple[int, str], list[Event]]:
        """(CTA, role) -> the events of the role's first recorded warp in that CTA, by start (computed once)."""
        key = (id(self.events), len(self.events))
        if self.cache.get("lanes_key") != key:
            self.cache.clear()
            self.cache["lanes_key"], self.cache["lanes"] = key, self._lanes()
        return self.cache["lanes"]

    def _lanes(self) -> dict[tuple[int, str], list[Event]]:
        rep: dict[tuple[int, str], int] = {}
        for e in self.events:
            k = (e.cta, e.role)
            rep[k] = min(rep.get(k, e.warp), e.warp)
        out: dict[tuple[int, str], list[Event]] = defaultdict(list)
        for e in self.events:
            if rep[(e.cta, e.role)] == e.warp:
                out[(e.cta, e.role)].append(e)
        for v in out.values():
            v.sort(key=lambda e: (e.start, -e.dur))
        return dict(out)

    def scope_counts(self) -> dict[tuple[int, int, str], int]:
        """(CTA, warp, scope name) -> events recorded."""
        c: dict[tuple[int, int, str], int] = defaultdict(int)
        for e in self.events:
            c[(e.cta, e.warp, e.name)] += 1
        return dict(c)

    def sample(self, ctas: list[int]) -> Trace:
        keep = set(ctas)
        return Trace(
            kernel=self.kernel,
            events=[e for e in self.events if e.cta in keep],
            cta_start_ns={c: t for c, t in self.cta_start_ns.items() if c in keep},
            cta_core={c: s for c, s in self.cta_core.items() if c in keep},
            cta_init_ns={c: v for c, v in self.cta_init_ns.items() if c in keep},
            clock_mhz=self.clock_mhz,
            clock_source=self.clock_source,
            total_ctas=self.total_ctas or len(self.cta_start_ns),
            source=self.source,
            meta=dict(self.meta),
            warnings=list(self.warnings),
        )


def load_json(path: str | Path) -> dict[str, Any]:
    p = Path(path)
    raw = p.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    data = json.loads(raw)
    if isinstance(data, list):  # the JSON-array form of the trace format
        data = {"traceEvents": data}
    return data


def _rows_by_kernel(data: dict[str, Any]) -> dict[str, list[tuple[dict[str, Any], int, int]]]:
    """kernel name -> [(event, SM, CTA)] of Proton's instrumentation events (``pid`` "kernel CoreN CTAm")."""
    by_kernel: dict[str, list[tuple[dict[str, Any], int, int]]] = defaultdict(list)
    for ev in data.get("traceEvents", []):
        m = _PID.match(str(ev.get("pid", ""))) if ev.get("ph") == "X" else None
        if m:
            by_kernel[m.group("kernel")].append((ev, int(m.group("core")), int(m.group("cta"))))
    if not by_kernel:
        raise ValueError("no Proton instrumentation events (pid 'kernel CoreN CTAm') in this trace")
    return by_kernel


def read_trace(src: str | Path | dict[str, Any], kernel: str | None = None) -> Trace:
    """Parse a Proton chrome trace (path, ``.gz`` path or loaded dict) into a :class:`Trace`.

    ``kernel`` picks one kernel when the file holds several (default: the one with most events).
    A file that holds several launches of one kernel cannot be told apart and is reported in
    ``Trace.warnings``.
    """
    data = src if isinstance(src, dict) else load_json(src)
    other = data.get("otherData") or {}
    by_kernel = _rows_by_kernel(data)
    name = kernel if kernel is not None else max(by_kernel, key=lambda k: len(by_kernel[k]))
    if name not in by_kernel:
        raise ValueError(f"kernel {name!r} is not in this trace (has {sorted(by_kernel)})")
    rows = by_kernel[name]
    freq = PROTON_ASSUMED_MHZ
    for ev, _, _ in rows[:1]:
        freq = float((ev.get("args") or {}).get("Frequency (MHz)", PROTON_ASSUMED_MHZ))
    ts_min: dict[int, float] = {}
    cores: dict[int, set[int]] = defaultdict(set)
    init: dict[int, tuple[int, int, int]] = {}
    for ev, core, cta in rows:
        t = float(ev["ts"])
        ts_min[cta] = min(ts_min.get(cta, t), t)
        cores[cta].add(core)
        if cta not in init:
            init[cta] = _init_times(ev.get("args") or {})
    warnings: list[str] = []
    multi = [c for c, s in cores.items() if len(s) > 1]
    if multi:
        warnings.append(
            f"{len(multi)} CTAs appear on several SMs: the trace holds more than one launch of {name}; "
            "record one launch per Proton session"
        )
    events: list[Event] = []
    for ev, _core, cta in rows:
        tm = _TID.match(str(ev.get("tid", "")))
        warp = int(tm.group("warp")) if tm else -1
        line = int(tm.group("line") or 0) if tm else 0
        sname = str(ev.get("name", ""))
        role, activity, detail = parse_scope_name(sname, max(warp, 0))
        start = int(round((float(ev["ts"]) - ts_min[cta]) * freq))
        dur = int(round(float(ev.get("dur", 0.0)) * freq))
        events.append(Event(cta, warp, sname, role, activity, detail, start, max(dur, 0), line))
    # Proton added the CTA's globaltimer offset (ns) to the cycle count before dividing by freq.
    t0 = min(ts_min.values())
    cta_start_ns = {c: (t - t0) * freq for c, t in ts_min.items()}
    tr = Trace(
        kernel=name,
        events=events,
        cta_start_ns=cta_start_ns,
        cta_core={c: min(s) for c, s in cores.items()},
        cta_init_ns={c: v for c, v in init.items() if v[0]},
        clock_mhz=other.get("clock_mhz"),
        clock_source=other.get("clock_source"),
        total_ctas=other.get("total_ctas"),
        source=str(src) if not isinstance(src, dict) else None,
        meta=dict(other),
        warnings=warnings,
    )
    return tr


def _init_times(args: dict[str, Any]) -> tuple[int, int, int]:
    """(init, post-final, finalization) globaltimer ns of a CTA, 0s when the trace has none (Proton < 3.8)."""
    try:
        return (int(args.get("Init Time (ns)", 0)), int(args.get("Post Final Time (ns)", 0)),
                int(args.get("Finalization Time (ns)", 0)))
    except (TypeError, ValueError):
        return (0, 0, 0)


def pick_ctas(trace: Trace, n: int = 8) -> list[int]:
    """A spread sample of ``n`` CTAs: first, last, and evenly spaced ids between (by block id)."""
    ctas = trace.ctas
    if len(ctas) <= n:
        return ctas
    if n <= 1:
        return ctas[:1]
    idx = sorted({round(i * (len(ctas) - 1) / (n - 1)) for i in range(n)})
    return [ctas[i] for i in idx]


def write_proton_trace(
    trace: Trace,
    path: str | Path,
    ctas: list[int] | None = None,
    other: dict[str, Any] | None = None,
) -> Path:
    """Write (a CTA sample of) ``trace`` back in Proton's chrome-trace form (``.gz`` if the name says so).

    The per-CTA offsets and cycle counts are kept exactly as Proton wrote them (ts in kilocycles
    since the CTA's first event plus its globaltimer start), so :func:`read_trace` reads it back the
    same; ``otherData`` carries the measured clock and what was sampled.
    """
    keep = set(ctas if ctas is not None else trace.ctas)
    f = PROTON_ASSUMED_MHZ
    out = []
    for e in trace.events:
        if e.cta not in keep:
            continue
        base = trace.cta_start_ns[e.cta] / 1000.0  # ns offset expressed the way Proton adds it
        args: dict[str, Any] = {"Frequency (MHz)": f}
        if e.cta in trace.cta_init_ns:
            i0, post, fin = trace.cta_init_ns[e.cta]
            args = {"Init Time (ns)": i0, "Post Final Time (ns)": post, "Finalization Time (ns)": fin, **args}
        out.append(
            {
                "cname": "generic_work",
                "name": e.name,
                "cat": trace.kernel,
                "ph": "X",
                "pid": f"{trace.kernel} Core{trace.cta_core.get(e.cta, 0)} CTA{e.cta}",
                "tid": f"warp {e.warp} (line {e.line})",
                "ts": round(base + e.start / f, 3),
                "dur": round(e.dur / f, 3),
                "args": args,
            }
        )
    meta = {
        "writer": "workbench.measure.timeline (a CTA sample of a Proton instrumentation trace)",
        "clock_mhz": trace.clock_mhz,
        "clock_source": trace.clock_source,
        "total_ctas": trace.total_ctas or len(trace.cta_start_ns),
        "sampled_ctas": sorted(keep),
        **(other or {}),
    }
    doc = {"displayTimeUnit": "ns", "traceEvents": out, "otherData": meta}
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(doc, separators=(",", ":"))
    if p.suffix == ".gz":
        p.write_bytes(gzip.compress(text.encode(), mtime=0))
    else:
        p.write_text(text)
    return p
