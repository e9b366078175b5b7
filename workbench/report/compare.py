"""Why one run is faster than another: two Reports' time, warp-stall samples per reason and per role, and the
instruction mix of their hottest SASS loop, with the differences ranked by the time they explain.

With ``--timeline`` in both, each role's busy and waiting shares of its span are set side by side. The ranking's
rule, stated with it: a stall reason's share of a launch's warp samples is taken as its share of
the launch's time, so a reason "explains" ``duration x share`` of each launch and the difference of the two.
Samples are of warp states, not of cycles, so the figure is an attribution, not a measurement: it ranks, it does
not add up to the time difference exactly. Each part is present only when both Reports have it (``--bench``,
``--stalls``, the SASS stage).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from workbench.analyse.loop_mix import instr_class
from workbench.analyse.stalls import ISSUED
from workbench.ir.sass import read_sass

__all__ = ["RULE", "comparison_html", "performance"]

RULE = ("a reason's share of the warp samples taken as its share of the launch's time (an attribution that ranks, "
        "not a measurement)")


def _measurement(r: dict[str, Any], kind: str) -> dict[str, Any] | None:
    return next((m for m in r.get("measurements") or [] if isinstance(m, dict) and m.get("kind") == kind
                 and m.get("status") == "ok"), None)


def _time(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any] | None:
    b, a = _measurement(before, "bench"), _measurement(after, "bench")
    bt, at = ((b or {}).get("timing") or {}).get("median_ms"), ((a or {}).get("timing") or {}).get("median_ms")
    if not bt or not at:
        return None
    return {"before_ms": bt, "after_ms": at, "speedup": round(bt / at, 4),
            "measured": "in one run" if b.get("when") == a.get("when") else "in separate runs"}


def _duration_ns(s: dict[str, Any], time_ms: float | None) -> float | None:
    return s.get("duration_ns") or (time_ms * 1e6 if time_ms else None)


def _shares(counts: dict[str, int]) -> dict[str, float]:
    total = sum(counts.values())
    return {k: v / total for k, v in counts.items()} if total else {}


def _stalls(before: dict[str, Any], after: dict[str, Any], time: dict[str, Any] | None) -> dict[str, Any] | None:
    b, a = _measurement(before, "stalls"), _measurement(after, "stalls")
    if b is None or a is None:
        return None
    bd = _duration_ns(b, time and time["before_ms"])
    ad = _duration_ns(a, time and time["after_ms"])
    bs, as_ = _shares(b.get("by_reason") or {}), _shares(a.get("by_reason") or {})
    rows = []
    for reason in sorted(set(bs) | set(as_)):
        row = {"reason": reason, "before_share": round(bs.get(reason, 0.0), 4),
               "after_share": round(as_.get(reason, 0.0), 4)}
        if bd and ad:
            row["before_ns"] = round(bd * bs.get(reason, 0.0), 1)
            row["after_ns"] = round(ad * as_.get(reason, 0.0), 1)
            row["delta_ns"] = round(row["after_ns"] - row["before_ns"], 1)
        rows.append(row)
    key = (lambda r: -abs(r["delta_ns"])) if bd and ad else (lambda r: -abs(r["after_share"] - r["before_share"]))
    rows.sort(key=key)
    roles = []
    for name in dict.fromkeys([r["role"] for r in (b.get("roles") or []) + (a.get("roles") or [])]):
        rb = next((r for r in b.get("roles") or [] if r["role"] == name), None)
        ra = next((r for r in a.get("roles") or [] if r["role"] == name), None)
        roles.append({"role": name, "before": _role(rb), "after": _role(ra)})
    return {"before": {"samples": b.get("samples"), "duration_ns": bd},
            "after": {"samples": a.get("samples"), "duration_ns": ad}, "reasons": rows, "roles": roles, "rule": RULE}


def _role(r: dict[str, Any] | None) -> dict[str, Any] | None:
    if r is None:
        return None
    shares = _shares(r.get("by_reason") or {})
    top = sorted(((k, v) for k, v in shares.items() if k != ISSUED), key=lambda kv: -kv[1])[:3]
    return {"samples": r.get("samples"), "stalled": r.get("stalled"), "top": [[k, round(v, 4)] for k, v in top]}


def hottest_loop_mix(sass_text: str, hot: list[dict[str, Any]] | None = None) -> dict[str, Any] | None:
    """The instruction classes (``loop_mix.instr_class``) of the innermost SASS loop with the most stall samples
    (``hot``: a stalls payload's rows), else of the one with the most HGMMA, else the longest."""
    code = read_sass(sass_text)
    loops = code.loops()
    if not loops:
        return None
    inner = [(h, b) for h, b in loops if not any(h <= h2 and b2 <= b and (h2, b2) != (h, b) for h2, b2 in loops)]
    by_addr = {h["address"]: h["samples"] for h in hot or []}

    def weight(loop: tuple[int, int]) -> tuple[int, int, int]:
        xs = code.instrs[loop[0]:loop[1] + 1]
        return (sum(by_addr.get(x.address, 0) for x in xs), sum(x.op.startswith("HGMMA") for x in xs), len(xs))

    head, back = max(inner, key=weight)
    xs = code.instrs[head:back + 1]
    return {"sass_lines": [xs[0].line, xs[-1].line], "instructions": len(xs),
            "classes": dict(Counter(instr_class(x) for x in xs).most_common())}


def _mix(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any] | None:
    def one(r: dict[str, Any]) -> dict[str, Any] | None:
        sass = next((s.get("text") for s in r.get("stages") or [] if s.get("name") == "sass"), None)
        return hottest_loop_mix(sass, (_measurement(r, "stalls") or {}).get("hot")) if sass else None

    b, a = one(before), one(after)
    if b is None or a is None:
        return None
    rows = [{"class": c, "before": b["classes"].get(c, 0), "after": a["classes"].get(c, 0)}
            for c in dict.fromkeys([*b["classes"], *a["classes"]])]
    for row in rows:
        row["delta"] = row["after"] - row["before"]
    rows.sort(key=lambda r: -abs(r["delta"]))
    return {"before": {k: b[k] for k in ("sass_lines", "instructions")},
            "after": {k: a[k] for k in ("sass_lines", "instructions")}, "rows": rows}


def _timeline(before: dict[str, Any], after: dict[str, Any]) -> list[dict[str, Any]] | None:
    """Per role (matched by name), the share of its span busy and waiting in each run's ``--timeline``."""
    b, a = before.get("timeline") or {}, after.get("timeline") or {}
    if b.get("status") != "ok" or a.get("status") != "ok":
        return None
    keys = ("busy_fraction", "waiting_fraction", "span_ns")
    rb = {r["role"]: r for r in b.get("roles") or []}
    ra = {r["role"]: r for r in a.get("roles") or []}
    return [{"role": name, "before": {k: rb[name].get(k) for k in keys} if name in rb else None,
             "after": {k: ra[name].get(k) for k in keys} if name in ra else None}
            for name in dict.fromkeys([*rb, *ra])]


def performance(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any] | None:
    """The Diff's performance part for two Reports' dicts (stage texts unpacked); None when neither time, stalls,
    timelines nor a SASS loop can be compared. ``ranked``: one sentence per difference, the largest first."""
    time = _time(before, after)
    stalls = _stalls(before, after, time)
    mix = _mix(before, after)
    timeline = _timeline(before, after)
    if not (time or stalls or mix or timeline):
        return None
    return {"time": time, "stalls": stalls, "loop_mix": mix, "timeline": timeline,
            "ranked": _ranked(time, stalls, mix, timeline)}


def _ranked(time: dict[str, Any] | None, stalls: dict[str, Any] | None, mix: dict[str, Any] | None,
            timeline: list[dict[str, Any]] | None = None) -> list[str]:
    out = []
    if time:
        out.append(f"time: {time['before_ms']:.4g} ms -> {time['after_ms']:.4g} ms ({time['speedup']:.3f}x, "
                   f"{time['measured']})")
    for r in (stalls or {}).get("reasons", [])[:5]:
        share = f"{100 * r['before_share']:.1f}% -> {100 * r['after_share']:.1f}% of warp samples"
        if "delta_ns" in r:
            out.append(f"{r['reason']}: {r['delta_ns'] / 1e3:+.2f} us ({share})")
        elif r["after_share"] != r["before_share"]:
            out.append(f"{r['reason']}: {share}")
    for r in (mix or {}).get("rows", [])[:3]:
        if r["delta"]:
            out.append(f"hottest loop (every path through it, counted in the SASS): {r['class']} {r['before']} -> "
                       f"{r['after']} instructions")
    for r in timeline or []:
        b, a = r["before"] or {}, r["after"] or {}
        if b.get("waiting_fraction") is not None and a.get("waiting_fraction") is not None:
            out.append(f"{r['role']}: waiting {100 * b['waiting_fraction']:.0f}% -> "
                       f"{100 * a['waiting_fraction']:.0f}% of its span (--timeline)")
    return out


def comparison_html(p: dict[str, Any] | None, before: str, after: str) -> str:
    """The comparison as HTML for front ends without the extension: the ranked sentences and the stall reasons."""
    from html import escape

    if p is None:
        return f"<p>{escape(before)} and {escape(after)}: nothing to compare</p>"
    items = "".join(f"<li>{escape(s)}</li>" for s in p["ranked"])
    def row(r: dict[str, Any]) -> str:
        ns = f"{r['delta_ns'] / 1e3:+.2f} us" if "delta_ns" in r else ""
        return (f"<tr><td>{escape(r['reason'])}</td><td>{100 * r['before_share']:.1f}%</td>"
                f"<td>{100 * r['after_share']:.1f}%</td><td>{ns}</td></tr>")

    rows = "".join(row(r) for r in (p.get("stalls") or {}).get("reasons", []))
    table = (f"<table><tr><th>stall reason</th><th>{escape(before)}</th><th>{escape(after)}</th><th>time it explains"
             f"</th></tr>{rows}</table><p><small>{escape(RULE)}</small></p>") if rows else ""
    return f"<p><b>{escape(before)} &rarr; {escape(after)}</b></p><ul>{items}</ul>{table}"
