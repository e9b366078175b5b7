"""Helpers of ``tutorials/03-broadcast-fusion.ipynb``: the cost model of the three paths, the same-run comparison.

- :func:`passes` / :func:`cost_table`: the memory passes and GEMMs each path runs for a shape, with FLOPs,
  bytes and a roofline lower bound per pass (datasheet ceilings; no GPU needed).
- :func:`model_table`: that model over :data:`BENCH_SHAPES` (what a GPU would show, as bounds).
- :func:`compare` / :func:`ratio_table` (GPU): the library kernel, the materialized and the decomposed
  torch paths (and any other callables) checked against the fp32 reference and timed with
  ``workbench.measure.bench`` in one run, ratios against the baselines of that run.
- :func:`breakdown` (GPU): where the baselines spend their time, kernel by kernel (torch.profiler).
- :func:`facts_table`: compiler facts of two compiled kernels side by side (registers, setmaxnreg,
  shared memory, wgmma, TMA, mbarrier waits, spills).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from tlx_kernels.broadcast.shapes import BENCH_SHAPES, Shape, op_flops
from tlx_kernels.gemm.walkthrough import timeline_lines

__all__ = [
    "Pass",
    "breakdown",
    "compare",
    "cost_table",
    "facts",
    "facts_table",
    "fused_bytes",
    "measured",
    "model_ms",
    "model_table",
    "passes",
    "ratio_table",
]

ELEM = 2  # bf16 / fp16 bytes
BMU = 64  # the user box of the fused kernel: wgmma's smallest M


@dataclass(frozen=True)
class Pass:
    """One kernel a path launches: what it computes, its FLOPs and the bytes it must move (no re-reads)."""

    name: str
    flops: float
    bytes: float

    def ms(self, peak_tflops: float, tbs: float) -> float:
        """Roofline lower bound: the slower of the tensor cores at peak and HBM at full bandwidth."""
        return max(self.flops / (peak_tflops * 1e12), self.bytes / (tbs * 1e12)) * 1e3


def fused_bytes(s: Shape, elem: int = ELEM) -> float:
    """Bytes the fused kernel cannot avoid: U, X, W (and bias) read once, Y written once."""
    return elem * (s.B * s.DU + s.rows * s.DX + (s.DU + s.DX) * s.N + s.N * s.bias + s.rows * s.N)


def _fused_executed_flops(s: Shape, bm: int = 128, bn: int = 256) -> float:
    """FLOPs the fused kernel's wgmmas execute: 64-row user boxes per (user, column tile), padded candidate tiles."""
    tiles = -(-s.C // bm)
    col_tiles = -(-s.N // bn)
    return 2.0 * s.B * col_tiles * bn * (BMU * s.DU + tiles * bm * s.DX)


def passes(s: Shape, path: str, elem: int = ELEM) -> list[Pass]:
    """The kernels ``path`` ("materialized", "decomposed" or "fused") runs for shape ``s``."""
    B, R, DU, DX, N, e = s.B, s.rows, s.DU, s.DX, s.N, elem
    act = [Pass(f"{s.act} (in place over Y)", R * N, 2 * e * R * N)] if s.act != "none" else []
    if path == "materialized":
        out = [
            Pass("repeat_interleave(U, C)", 0, e * (B * DU + R * DU)),
            Pass("cat([U_rep, X])", 0, e * (R * DU + R * DX + R * (DU + DX))),
            Pass("addmm: concat @ W (+ bias)", 2.0 * R * (DU + DX) * N, e * (R * (DU + DX) + (DU + DX) * N + R * N)),
        ]
        return out + (act if s.act == "silu" else [])  # ReLU is fused into cuBLAS's epilogue
    if path == "decomposed":
        return [
            Pass("addmm: U @ W_u (+ bias)", 2.0 * B * DU * N, e * (B * DU + DU * N + B * N)),
            Pass("mm: X @ W_x", 2.0 * R * DX * N, e * (R * DX + DX * N + R * N)),
            Pass("Y += UW[:, None] (broadcast add)", R * N, e * (2 * R * N + B * N)),
            *act,
        ]
    if path == "fused":
        return [Pass("fused kernel (one launch)", op_flops(s), fused_bytes(s, e))]
    raise ValueError(f"unknown path {path!r}")


PATHS = ("materialized", "decomposed", "fused")


def _ceilings(device: str) -> tuple[float, float, str]:
    from workbench.measure import datasheet

    c = datasheet(device)
    return c.peak_tflops("bf16"), c.bandwidth, c.device


def model_ms(s: Shape, path: str, device: str = "H200") -> float:
    """Sum of the per-pass roofline bounds of ``path`` (each pass at peak FLOP/s or full bandwidth)."""
    peak, tbs, _ = _ceilings(device)
    return sum(p.ms(peak, tbs) for p in passes(s, path))


def cost_table(s: Shape, device: str = "H200") -> str:
    """Per path and pass: GFLOP, MB moved, intensity and the roofline bound on ``device``'s datasheet."""
    peak, tbs, name = _ceilings(device)
    ridge = peak / tbs
    lines = [
        f"shape {s.label()}: {s.rows:,} candidate rows; {name} datasheet: {peak:.0f} TFLOP/s bf16, "
        f"{tbs:.1f} TB/s, ridge {ridge:.0f} FLOP/byte",
        f"{'path / pass':42s} {'GFLOP':>8s} {'MB':>8s} {'FLOP/B':>7s} {'bound':>8s} {'>= us':>8s}",
    ]
    totals = {}
    for path in PATHS:
        ps = passes(s, path)
        for p in ps:
            inten = p.flops / p.bytes if p.bytes else float("inf")
            bound = "compute" if inten >= ridge else "memory"
            lines.append(
                f"  {path[:5]}: {p.name:33s} {p.flops / 1e9:8.1f} {p.bytes / 1e6:8.1f} {inten:7.0f} {bound:>8s} "
                f"{p.ms(peak, tbs) * 1e3:8.1f}"
            )
        fl, by = sum(p.flops for p in ps), sum(p.bytes for p in ps)
        totals[path] = sum(p.ms(peak, tbs) for p in ps)
        lines.append(f"  {path + ' total':40s} {fl / 1e9:8.1f} {by / 1e6:8.1f} {fl / by:7.0f} {'':>8s} "
                     f"{totals[path] * 1e3:8.1f}")
    ex = _fused_executed_flops(s)
    lines.append(
        f"fused kernel's wgmmas execute {ex / 1e9:.1f} GFLOP ({ex / op_flops(s) - 1:+.1%} over the op: 64-row user "
        f"boxes, candidate tiles padded to 128 rows)"
    )
    lines.append(
        f"bound ratios: materialized / fused {totals['materialized'] / totals['fused']:.2f}x, "
        f"decomposed / fused {totals['decomposed'] / totals['fused']:.2f}x"
    )
    return "\n".join(lines)


def model_table(shapes: Sequence[Shape] = BENCH_SHAPES, device: str = "H200") -> str:
    """The roofline bounds (us) of the three paths per shape and the ratios they imply."""
    lines = [
        f"{'shape':15s} {'':40s} {'fused':>7s} {'mater.':>7s} {'decomp.':>7s} {'mat/fus':>8s} {'dec/fus':>8s}",
    ]
    for s in shapes:
        t = {p: model_ms(s, p, device) * 1e3 for p in PATHS}
        lines.append(
            f"{s.name:15s} {s.label():40s} {t['fused']:7.1f} {t['materialized']:7.1f} {t['decomposed']:7.1f} "
            f"{t['materialized'] / t['fused']:7.2f}x {t['decomposed'] / t['fused']:7.2f}x"
        )
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------
# GPU: the same-run comparison
# ------------------------------------------------------------------------------------------------


def _inputs(s: Shape, dtype: Any = None):
    from tlx_kernels.broadcast.torch_ops import make_inputs

    return make_inputs(s.B, s.C, s.DU, s.DX, s.N, dtype=dtype, device="cuda", bias=s.bias, seed=s.B + s.C)


def _checked(fn: Callable, ins: tuple, s: Shape, ref: Any) -> tuple[Any, float]:
    """``fn``'s output (into a NaN-filled ``out`` where ``fn`` takes one, so unwritten rows fail) and its error."""
    import inspect

    from tlx_kernels.broadcast.host import empty_out
    from tlx_kernels.broadcast.torch_ops import rel_err

    kw = {}
    if "out" in inspect.signature(fn).parameters:
        kw["out"] = empty_out(s.B, s.C, s.N, ins[0].dtype, ins[0].device, fill=float("nan"))
    out = fn(*ins, s.act, **kw)
    return out, rel_err(out, ref)


def _compare_shape(
    kernels: dict[str, Callable], s: Shape, baselines: Sequence[str], rep_ms: float
) -> list[dict[str, Any]]:
    import functools

    from tlx_kernels.broadcast.torch_ops import reference
    from workbench import measure

    ins = _inputs(s)
    ref = reference(*ins, s.act)
    res, outs = {}, []  # outputs stay alive: a later allocation cannot reuse a block holding a right answer
    for name, fn in kernels.items():
        try:
            out, err = _checked(fn, ins, s, ref)
        except Exception as e:  # noqa: BLE001 - e.g. an edited cell kernel that no longer compiles: not timed
            print(f"{s.name}: {name} failed: {type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}")
            out, err = None, math.inf
        outs.append(out)
        ms = None
        if err < 1e-2:
            r = measure.bench(functools.partial(fn, *ins, s.act), rep_ms=rep_ms, flops=op_flops(s), name=name)
            ms = r.median_ms
        res[name] = (ms, err)
    rows = []
    for name, (ms, err) in res.items():
        row = {"shape": s.name, "label": s.label(), "kernel": name, "ms": ms, "err": err,
               "tflops": op_flops(s) / (ms * 1e-3) / 1e12 if ms else None}
        for bl in baselines:
            bms = res.get(bl, (None, None))[0]
            row[f"{bl}_ms"] = bms
            row[f"vs_{bl}"] = bms / ms if ms and bms else None
        rows.append(row)
    return rows


def compare(
    kernels: dict[str, Callable],
    shapes: Sequence[Shape] = BENCH_SHAPES,
    baselines: Sequence[str] = ("materialized", "decomposed"),
    rep_ms: float = 100.0,
) -> list[dict[str, Any]]:
    """Check every callable ``fn(U, X, W, bias, act)`` of ``kernels`` against the fp32 reference, then time it.

    One row per (shape, kernel): ``ms`` (median, ``workbench.measure.bench``, L2 flushed), ``tflops``
    (the op's FLOPs), ``err`` (max rel err; a callable with an ``out`` parameter writes into a NaN-filled
    one), and for each name in ``baselines`` its time in this run and ``vs_<name>`` = baseline_ms / ms.
    A kernel whose error is 1e-2 or more is not timed (``ms`` None).
    """
    import torch

    rows = []
    for s in shapes:
        rows += _compare_shape(kernels, s, baselines, rep_ms)
        torch.cuda.empty_cache()
    return rows


def _us(ms: float | None) -> str:
    return f"{ms * 1e3:.1f}" if ms else "-"


def ratio_table(
    rows: list[dict[str, Any]],
    kernel: str = "fused (lib)",
    others: Sequence[str] = ("fused (cell)",),
    baselines: Sequence[str] = ("materialized", "decomposed"),
) -> str:
    """One line per shape: ``kernel``'s time and TFLOP/s, the baselines' times, the ratios (baseline / kernel,
    same run), the ``others``' times; then the largest error of each kernel over all shapes."""
    by = {(r["shape"], r["kernel"]): r for r in rows}
    cols = [f"{kernel} us", "TFLOP/s", *(f"{b} us" for b in baselines), *(f"x {b}" for b in baselines),
            *(f"{o} us" for o in others)]
    widths = [max(9, len(c)) for c in cols]
    lines = [f"{'shape':15s}" + "".join(f" {c:>{w}s}" for c, w in zip(cols, widths))]
    for shape in dict.fromkeys(r["shape"] for r in rows):
        k = by.get((shape, kernel), {})
        vals = [_us(k.get("ms")), f"{k['tflops']:.0f}" if k.get("tflops") else "-"]
        vals += [_us(by.get((shape, b), {}).get("ms")) for b in baselines]
        vals += [f"{k[f'vs_{b}']:.2f}x" if k.get(f"vs_{b}") else "-" for b in baselines]
        vals += [_us(by.get((shape, o), {}).get("ms")) for o in others]
        lines.append(f"{shape:15s}" + "".join(f" {v:>{w}s}" for v, w in zip(vals, widths)))
    errs = {}
    for r in rows:
        errs[r["kernel"]] = max(errs.get(r["kernel"], 0.0), r["err"])
    lines.append("max rel err vs fp32 reference: " + ", ".join(f"{n} {e:.1e}" for n, e in errs.items()))
    return "\n".join(lines)


def breakdown(fn: Callable[[], Any], top: int = 5) -> str:
    """Device time per kernel of one call of ``fn`` (torch.profiler, warm L2), the largest first."""
    from workbench import measure

    cap = measure.capture(fn, warmup=2, repeat=3)
    t = cap.table.head(top)
    lines = [f"  {row.device_us:8.1f} us {row.share:5.0%}  {row.name[:90]}" for row in t.itertuples()]
    return f"  {cap.device_ms * 1e3:8.1f} us in all ({len(cap.table)} kernels)\n" + "\n".join(lines)


# ------------------------------------------------------------------------------------------------
# compiler facts, and what a %%tlx Report measured
# ------------------------------------------------------------------------------------------------

def _roles(md: Any) -> str:
    """Each role's warps and register budget (setmaxnreg) from the compile's task metadata, or '-'."""
    tasks = (md.to_dict() if hasattr(md, "to_dict") else {}).get("tasks") or []
    parts: dict[str, int] = {}
    for t in tasks:
        role = "producer" if t.get("partition") is None else "consumer"
        key = f"{role} {t.get('num_warps')}w/{t.get('registers')}r"
        parts[key] = parts.get(key, 0) + 1
    return ", ".join(f"{n} x {k}" if n > 1 else k for k, n in parts.items()) or "-"


def facts(report_or_artifact: Any) -> dict[str, Any]:
    """Compiler facts of a compiled kernel (a Report or an Artifact): warps, registers, shared memory, async ops."""
    from workbench.ir.sass import read_sass

    art = getattr(report_or_artifact, "artifact", None) or report_or_artifact
    md = art.metadata
    ptx, ttgir = art.stages.get("ptx", ""), art.stages.get("ttgir", "")
    sass = read_sass(art.stages.get("sass", ""))
    return {
        "warps": md.num_warps,
        "registers/thread (launch)": md.registers,
        "roles (warps/registers)": _roles(md),
        "spilled bytes": (md.spill_stores or 0) + (md.spill_loads or 0),
        "shared bytes": md.shared_bytes,
        "warp-specialized": "ttg.warp_specialize" in ttgir,
        "wgmma (SASS HGMMA)": sass.count("HGMMA"),
        "TMA copies (PTX)": ptx.count("cp.async.bulk.tensor"),
        "mbarrier waits (PTX)": ptx.count("mbarrier.try_wait"),
        "LDL/STL (SASS)": sass.count("LDL") + sass.count("STL"),
    }


def facts_table(named: dict[str, Any]) -> str:
    """:func:`facts` of several kernels side by side (one column per name)."""
    cols = {name: facts(x) for name, x in named.items()}
    keys = list(next(iter(cols.values())))
    width = {n: max(len(n), *(len(str(c[k])) for k in keys)) for n, c in cols.items()}
    lines = [f"{'fact':26s}" + "".join(f"  {n:>{width[n]}s}" for n in cols)]
    for k in keys:
        lines.append(f"{k:26s}" + "".join(f"  {str(c[k]):>{width[n]}s}" for n, c in cols.items()))
    return "\n".join(lines)


def measured(report: Any) -> str:
    """What a ``%%tlx --check --bench --timeline`` Report holds: the checks, the time, the timeline per role."""
    lines = []
    for c in [c for r in getattr(report, "runs", None) or [] for c in r.get("checks", [])]:
        lines.append(f"check {c['expr']}: {c['status']} ({c.get('message') or ''})")
    for m in getattr(report, "measurements", None) or []:
        if m.get("kind") != "bench":
            continue
        t = m.get("timing") or {}
        if m.get("status") == "ok" and t.get("median_ms"):
            lines.append(f"time: {t['median_ms'] * 1e3:.1f} us median, {t.get('tflops') or 0:.0f} TFLOP/s of useful "
                         f"work ({m.get('measured_by')} on {m.get('device')})")
            ref = m.get("reference") or {}
            if ref.get("median_ms") and m.get("ratio"):
                lines.append(f"--bench-ref: {ref['median_ms'] * 1e3:.1f} us, {m['ratio']:.2f}x the kernel's time")
        else:
            lines.append(f"time: not measured ({m.get('reason') or m.get('status')})")
    tl = getattr(report, "timeline", None) or {}
    if tl.get("status") == "ok":
        lines += ["timeline (per role, the CTAs recorded):", *timeline_lines(tl, waits=3)]
    elif tl:
        lines.append(f"timeline: {tl.get('status')} ({tl.get('reason')})")
    return "\n".join(lines)
