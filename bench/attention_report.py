"""Rows, targets and the table of bench/attention.py, from its measurement records.

A record: {kind ("sdpa", "ours", "meta"), kernel, config, shape [B, H, S, D], causal, phase ("1", "2", "tune",
"final", "rounds"), ms, tflops, times (per interleaved round, phase "rounds")}. When a shape has "rounds"
records, its rows and targets come from them: ratio = the median of the per-round ratios.
"""

from __future__ import annotations

from typing import Any

from workbench.measure.compare import fastest, versus, versus_rows

# (shape, against: a kind ("meta": Meta's best kernel there) or a kernel ("sdpa_cudnn"), ratio): issue 24's targets
TARGETS = [((4, 32, 4096, 128, False), "meta", 1.00), ((2, 32, 8192, 128, False), "meta", 1.00),
           ((1, 32, 16384, 128, False), "meta", 1.00), ((1, 32, 32768, 128, False), "meta", 1.00),
           ((4, 32, 4096, 128, True), "sdpa_cudnn", 1.05), ((4, 32, 4096, 64, False), "sdpa_cudnn", 1.00)]


def log(*a: Any) -> None:
    print(*a, flush=True)


def baseline_rows(recs: list[dict], shapes, args) -> list[dict]:
    """Per shape, one row per (our kernel, SDPA backend or Meta kernel), each side its fastest record: from the
    interleaved rounds when the shape has them (ratio: the median of the per-round ratios)."""
    rows = []
    timing = getattr(args, "timing", None)
    for shape in shapes:
        here = [r for r in recs if r["shape"] == list(shape[:4]) and r["causal"] == bool(shape[4])]
        pool = [r for r in here if r["phase"] == "rounds" and r["ms"]] or here
        names = {kind: sorted({r["kernel"] for r in pool if r["kind"] == kind}) for kind in ("sdpa", "meta", "ours")}
        # without rounds, SDPA: the better of its two runs
        bases = {n: b for n in names["sdpa"] + names["meta"] if (b := fastest(pool, kernel=n))}
        final = [r for r in pool if r["phase"] in ("final", "rounds")]
        ours = {k: o for k in names["ours"] if (o := fastest(final, kernel=k))}
        for r in versus_rows(ours, bases):
            rows.append(dict(r, shape=list(shape[:4]), dtype=args.dtype, causal=bool(shape[4]),
                             method=f"public calls, {timing}; {r['method']}" if timing else r["method"]))
    return rows


def targets(recs: list[dict]) -> list[dict]:
    out = []
    for shape, against, need in TARGETS:
        here = [r for r in recs if r["shape"] == list(shape[:4]) and r["causal"] == shape[4] and r["ms"]]
        if not here:
            continue  # not run
        here = [r for r in here if r["phase"] == "rounds"] or here
        base = fastest([r for r in here if against in (r["kind"], r["kernel"])])
        mine = [r for r in here if r["kind"] == "ours" and r["phase"] in ("final", "rounds")]
        ours = max(mine, key=lambda r: versus(r, base)[2]) if mine and base else fastest(mine)  # our best against it
        ratio = versus(ours, base)[2] if ours and base else None
        out.append(dict(shape=list(shape[:4]), causal=shape[4], against=against, need=need, ratio=ratio,
                        ours=ours and f"{ours['kernel']} {ours['tflops']:.0f} TFLOP/s",
                        baseline=base and f"{base['kernel']} {base['tflops']:.0f} TFLOP/s",
                        met=ratio is not None and ratio >= need))
    return out


def print_table(recs: list[dict], shapes) -> None:
    for shape in shapes:
        here = [r for r in recs if r["shape"] == list(shape[:4]) and r["causal"] == bool(shape[4])]
        inter = [r for r in here if r["phase"] == "rounds" and r["ms"]]
        if inter:  # the interleaved timings, and whatever failed before them
            here = inter + [r for r in here if not r["ms"] and r["phase"] != "tune"]
        sdpa, meta = fastest(here, kind="sdpa"), fastest(here, kind="meta")
        how = f" (interleaved, {len(inter[0]['times'])} rounds: median ms, median of per-round ratios)" if inter else ""
        log(f"\nB{shape[0]} H{shape[1]} S{shape[2]} D{shape[3]} {'causal' if shape[4] else 'non-causal'}{how}")
        for r in sorted((r for r in here if r["phase"] != "tune"), key=lambda r: r["ms"] or 1e9):
            if r["kind"] == "sdpa" and r is not fastest(here, kernel=r["kernel"]):
                continue
            vs = "".join(f"  x{versus(r, b)[2]:.2f} vs {b['kernel']}" for b in (sdpa, meta) if b and r["ms"])
            what = f"{r['ms']:.3f} ms {r['tflops']:6.0f} TFLOP/s{vs}" if r["ms"] else f"FAILED {r['error']}"
            log(f"  {r['kernel']:<26} {r['config'][:44]:<44} {what}")
