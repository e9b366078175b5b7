"""One-line, plain-text summaries of a Report's payloads, shared by the text and HTML renderings.

Every measured figure comes with what measured it, on which device and when (``provenance``); a
payload that was not measured says why (``status: reason``).
"""

from __future__ import annotations

from typing import Any

from workbench.analyse.stalls import ISSUED

__all__ = ["check_line", "finding_line", "measurement_line", "provenance", "run_line"]


def _num(v: Any, fmt: str) -> str | None:
    return format(v, fmt) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _pct(v: Any) -> str | None:
    return f"{100 * v:.0f}%" if isinstance(v, (int, float)) else None


def run_line(run: dict[str, Any]) -> str:
    grid = run.get("grid")
    g = f" grid={tuple(grid)}" if grid else ""
    if run.get("mode") == "gpu" and run.get("ran"):
        return f"ran on {run.get('device') or 'GPU'}{g}"
    if run.get("mode") == "interpreter" and run.get("ran"):
        return f"ran in Triton's CPU interpreter{g} ({run.get('reason') or 'no GPU'})"
    return f"not run{g}: {run.get('reason') or 'compiled only'}"


def check_line(c: dict[str, Any]) -> str:
    return f"check {c['expr']}: {c['status']}" + (f" ({c['message']})" if c.get("message") else "")


def finding_line(f: dict[str, Any]) -> str:
    where = f"line {f['line']}: " if f.get("line") else ""
    return f"{f.get('severity', 'warning')} [{f.get('rule', '?')}] {where}{f.get('message', '')}"


def provenance(m: dict[str, Any]) -> str:
    """'measured by X on D at W' (the parts that are known)."""
    parts = []
    if m.get("measured_by"):
        parts.append(f"measured by {m['measured_by']}")
    if m.get("device"):
        parts.append(f"on {m['device']}")
    if m.get("when"):
        parts.append(f"at {m['when']}")
    return ", ".join(parts)


def _timing(t: dict[str, Any]) -> str:
    med = _num(t.get("median_ms"), ".4g")
    p10, p90 = _num(t.get("p10_ms"), ".4g"), _num(t.get("p90_ms"), ".4g")
    out = f"median {med} ms" if med else "no median"
    if p10 and p90:
        out += f" (p10 {p10}, p90 {p90}; {t.get('runs')} runs, {t.get('method')}, L2 {t.get('l2')})"
    # a rate of a count nobody gave (0: e.g. --flops without --bytes, in Reports recorded before that was fixed)
    if _num(t.get("tflops"), ".1f") and t.get("flops") != 0:
        out += f", {t['tflops']:.1f} TFLOP/s"
    if _num(t.get("tbs"), ".3f") and t.get("bytes") != 0:
        out += f", {t['tbs']:.3f} TB/s"
    if t.get("stable") is False:
        out += " [unstable]"
    return out


def _bench(m: dict[str, Any]) -> str:
    t = m.get("timing") or {}
    out = _timing(t)
    ref = m.get("reference")
    if isinstance(ref, dict):
        name = ref.get("name") or "reference"
        out += f"; {'reference' if name == 'reference' else f'reference {name}'}: {_timing(ref)}"
        if _num(m.get("ratio"), ".2f"):
            out += f"; {m['ratio']:.2f}x the reference's speed"
    return out


def _roofline(m: dict[str, Any]) -> str:
    known = _num(m.get("intensity"), ".1f") is not None  # a bound stored without a byte count (old Reports) is no bound
    bits = [f"{m['bound']}-bound" if m.get("bound") and known else None]
    bits.append(f"intensity {m['intensity']:.1f} FLOP/B" if _num(m.get("intensity"), ".1f")
                else "intensity unknown (no byte count: --bytes)")
    if _num(m.get("achieved_tflops"), ".1f"):
        frac = _pct(m.get("roof_fraction"))
        measured = m.get("measured_peak_tflops")
        vs = (f", {m['achieved_tflops'] / measured:.0%} of the measured ceiling"
              if m.get("bound") != "memory" and _num(measured, ".0f") else "")
        old = "measured_peak_tflops" not in m and (m.get("roof_fraction") or 0) > 1  # its roof was the measured one
        what = (f" ({frac} of the measured ceiling: cuBLAS's rate at the clock of its measurement)" if old
                else f" ({frac} of the roof{vs})")
        bits.append(f"achieved {m['achieved_tflops']:.1f} TFLOP/s" + (what if frac else ""))
    if _num(m.get("peak_tflops"), ".0f") and _num(m.get("bandwidth_tbs"), ".2f"):
        bits.append(f"roofs {m['peak_tflops']:.0f} TFLOP/s, {m['bandwidth_tbs']:.2f} TB/s")
    if m.get("reason"):
        bits.append(str(m["reason"]))
    return " · ".join(b for b in bits if b) or "no counts"


def _timeline(m: dict[str, Any]) -> str:
    roles = []
    for r in m.get("roles") or []:
        busy, wait = _pct(r.get("busy_fraction")), _pct(r.get("waiting_fraction"))
        roles.append(f"{r.get('role')} busy {busy or '?'}, waiting {wait or '?'}")
    out = "; ".join(roles) or "no roles"
    ov = (m.get("timing") or {}).get("overhead") if isinstance(m.get("timing"), dict) else None
    if _num(ov, "+.1%"):
        out += f"; instrumentation overhead {ov:+.1%}"
    return out


def _capture(m: dict[str, Any]) -> str:
    ks = m.get("kernels") or []
    dev = _num(m.get("device_ms"), ".4g")
    return f"{len(ks)} kernels" + (f", {dev} ms device time per call" if dev else "")


def _stalls(m: dict[str, Any]) -> str:
    mapped = (m.get("mapped") or {}).get("role_and_line")
    reasons = m.get("by_reason") or {}
    total = sum(reasons.values())
    top = sorted(((k, v) for k, v in reasons.items() if k != ISSUED), key=lambda kv: -kv[1])[:2]
    tops = ", ".join(f"{k} {v / total:.0%}" for k, v in top) if total else ""
    out = f"{m.get('samples', 0)} warp samples"
    if mapped is not None:
        out += f", {mapped:.1%} on a role and a line"
    return out + (f"; most: {tops}" if tops else "")


_BODY = {"bench": _bench, "roofline": _roofline, "timeline": _timeline, "capture": _capture, "stalls": _stalls}


def measurement_line(m: dict[str, Any]) -> str:
    """'bench: median 1.23 ms (...)' or 'bench: skipped, because <reason>'."""
    kind = str(m.get("kind", "?"))
    status = m.get("status", "ok")
    if status != "ok":
        because = f", because {m['reason']}" if m.get("reason") else ""
        return f"{kind}: {status}{because}"
    body = _BODY.get(kind)
    return f"{kind}: {body(m) if body else 'ok'}"
