"""``--bench``: the kernel re-launched under ``workbench.measure``, with the ``--bench-ref`` expression timed beside it
in the same run; a ``bench`` payload (the timing, or why there is none) and, with FLOP/byte counts, a ``roofline``
payload (static when not timed: the roofline section draws it)."""

from __future__ import annotations

from typing import Any

from workbench.errors import WorkbenchError
from workbench.measure import bench_section, report_items
from workbench.report.export_launch import option_number, unquote
from workbench.report.sections import Inputs, Section
from workbench.report.sections._common import base, num, why_not_on_gpu


def build(inp: Inputs) -> list[dict[str, Any]]:
    entry, args, ns = inp.entry, inp.args, inp.ns
    head = base("bench", "workbench.measure", inp.device)

    def nothing() -> None:
        raise WorkbenchError("nothing to time: the kernel did not run on a GPU")

    ref = None
    if args.bench_ref:
        ref_code = compile(unquote(args.bench_ref), "<--bench-ref>", "eval")

        def ref() -> Any:
            return eval(ref_code, ns)  # noqa: S307 - the user's own expression

    try:
        kw = {opt: option_number(f"--{opt}", expr, ns) for opt in ("flops", "bytes") if (expr := getattr(args, opt))}
        section = bench_section(entry.relaunch or nothing, reference=ref, kernel=entry.kernel,
                                grid=entry.grid or (1, 1, 1), args=entry.bound, name=entry.name, **kw)
    except WorkbenchError as ex:
        return [{**head, "status": "error", "reason": ex.message}]
    except Exception as ex:
        return [{**head, "status": "error", "reason": f"{type(ex).__name__}: {ex}"}]
    items = report_items(section)
    if entry.relaunch is None and items[0]["timing"] is None:  # nothing ran to time: skipped, and why (not an error)
        items[0].update(status="skipped", reason=why_not_on_gpu(entry, inp.device), errors=[])
    return items


def timing_line(t: dict[str, Any]) -> str:
    """A BenchResult's dict in words: median, spread, rates."""
    med = num(t.get("median_ms"), ".4g")
    p10, p90 = num(t.get("p10_ms"), ".4g"), num(t.get("p90_ms"), ".4g")
    out = f"median {med} ms" if med else "no median"
    if p10 and p90:
        out += f" (p10 {p10}, p90 {p90}; {t.get('runs')} runs, {t.get('method')}, L2 {t.get('l2')})"
    # a rate of a count nobody gave (0: e.g. --flops without --bytes, in Reports recorded before that was fixed)
    if num(t.get("tflops"), ".1f") and t.get("flops") != 0:
        out += f", {t['tflops']:.1f} TFLOP/s"
    if num(t.get("tbs"), ".3f") and t.get("bytes") != 0:
        out += f", {t['tbs']:.3f} TB/s"
    if t.get("stable") is False:
        out += " [unstable]"
    return out


def summary(m: dict[str, Any]) -> str:
    out = timing_line(m.get("timing") or {})
    ref = m.get("reference")
    if isinstance(ref, dict):
        name = ref.get("name") or "reference"
        out += f"; {'reference' if name == 'reference' else f'reference {name}'}: {timing_line(ref)}"
        if num(m.get("ratio"), ".2f"):
            out += f"; {m['ratio']:.2f}x the reference's speed"
    return out


SECTION = Section(kind="bench", summary=summary, option="bench", build=build, progress="timing {name}")
