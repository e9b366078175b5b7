"""Helpers of ``tutorials/02-flash-attention.ipynb``, whose kernels are written in its ``%%tlx`` cells.

- host side of a step: :func:`inputs`, :func:`output` (NaN-filled, so a tile no CTA writes fails the
  check), :func:`fa_args` (2-D TMA descriptors over ``(B*H*S, D)`` and the softmax scale), :func:`grid`,
  :func:`sdpa` (torch's attention, optionally one backend);
- what a step changed: :func:`facts` (compiler facts of a Report: roles and register budgets, shared
  memory, wgmma/TMA/barrier counts, and how many ``exp2`` of the softmax the SASS issues while a ``P V``
  wgmma is in flight: :func:`pv_overlap`), :func:`show_step`, :func:`timeline_lines`, :func:`excerpt`;
- the same-run comparison (GPU): :func:`compare` (torch SDPA per backend and every step, checked, then
  timed with ``workbench.measure.bench``) and :func:`ratio_table`; :func:`recorded_table` prints what
  ``bench/attention.py`` measured on an H200 when there is no GPU here.

Nothing here imports the workbench at import time (the library stays free of it).
"""

from __future__ import annotations

import inspect
import json
import math
import re
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tlx_kernels.attention import common as C
from tlx_kernels.gemm import walkthrough as GW

__all__ = ["MAIN_SHAPES", "META_BEST", "compare", "excerpt", "fa_args", "facts", "flops", "grid", "inputs", "meta",
           "output", "pv_overlap", "ratio_table", "recorded_table", "sdpa", "show_step", "summary_table",
           "timeline_lines"]

# (B, H, S, D, causal) of the closing comparison: the shape bench/attention.py reports first.
MAIN_SHAPES: list[tuple[int, int, int, int, bool]] = [(4, 32, 4096, 128, False), (4, 32, 4096, 128, True)]
BACKENDS = {"flash": "FLASH_ATTENTION", "cudnn": "CUDNN_ATTENTION"}

# --- host side of a step --------------------


def inputs(B: int, H: int, S: int, D: int, device: str, dtype: Any = None, seed: int = 0) -> tuple[Any, Any, Any]:
    """``q, k, v`` of shape ``(B, H, S, D)``: standard normal on a GPU; uninitialised on the CPU (a compile
    needs only shapes, strides and dtypes)."""
    import torch

    dtype = dtype or torch.bfloat16
    if device == "cpu":
        return tuple(torch.empty(B, H, S, D, dtype=dtype) for _ in range(3))
    g = torch.Generator(device=device).manual_seed(seed)
    return tuple(torch.randn(B, H, S, D, dtype=dtype, device=device, generator=g) for _ in range(3))


def output(q: Any) -> Any:
    """An output like ``q``, filled with NaN: a tile that no CTA writes fails the check."""
    import torch

    return torch.full_like(q, float("nan"))


def fa_args(q: Any, k: Any, v: Any, o: Any, BLOCK_M: int, BLOCK_N: int, TILE_M: int | None = None) -> tuple:
    """``(desc_q, desc_k, desc_v, desc_o, qk_scale, S)`` of the tutorial's kernels.

    The kernels see ``(B, H, S, D)`` tensors as row-major ``(B*H*S, D)`` matrices (head ``bh`` starts at
    row ``bh * S``): TMA boxes of ``BLOCK_M`` rows of Q and O, ``BLOCK_N`` rows of K and V. ``qk_scale`` is
    ``1/sqrt(D) * log2(e)``: the kernels use ``exp2``. ``S`` must be a multiple of ``TILE_M`` (the query rows
    of one CTA, default ``BLOCK_M``): a tile that ran past its head would write into the next head."""
    B, H, S, D = q.shape
    tile = TILE_M or BLOCK_M
    if S % tile:
        raise ValueError(f"fa_args: S={S} must be a multiple of the CTA's {tile} query rows "
                         f"(tlx_kernels.attention handles any length)")
    if not (q.shape == k.shape == v.shape == o.shape) or not all(t.is_contiguous() for t in (q, k, v, o)):
        raise ValueError("fa_args: q, k, v, o must be contiguous (B, H, S, D) tensors of one shape")
    return (C.descriptor(C.rows2d(q), [BLOCK_M, D]), C.descriptor(C.rows2d(k), [BLOCK_N, D]),
            C.descriptor(C.rows2d(v), [BLOCK_N, D]), C.descriptor(C.rows2d(o), [BLOCK_M, D]),
            C.LOG2E / math.sqrt(D), S)


def grid(q: Any, TILE_M: int) -> tuple[int, int]:
    """One CTA per ``TILE_M`` query rows of one head: ``(S / TILE_M, B * H)``."""
    B, H, S, _ = q.shape
    return (S // TILE_M, B * H)


def flops(q: Any, causal: bool = False) -> float:
    """``4 B H S^2 D`` (the two products), halved for causal."""
    B, H, S, D = q.shape
    return C.attention_flops(B, H, S, S, D, causal)


#: Meta's best Hopper FlashAttention tutorial in the triton-utlx wheel (its persistent ping-pong kernel)
META_BEST = "hopper_fa_ws_pipelined_pingpong_persistent"


def meta(q: Any, k: Any, v: Any) -> Any:
    """Meta's best Hopper FA tutorial on these inputs: its own host function on a GPU (the output), else its kernel
    compiled for this shape and dtype (the Artifact): in a ``%%tlx`` cell, a Report either way."""
    from tlx_kernels import meta_tutorials as mt

    if q.is_cuda:
        return mt.host_call(META_BEST, q, k, v)
    return mt.case(META_BEST, shape=tuple(q.shape), dtype=q.dtype).compile()


def sdpa(q: Any, k: Any, v: Any, causal: bool = False, backend: str | None = None) -> Any:
    """``torch.nn.functional.scaled_dot_product_attention`` (``backend``: ``"flash"``, ``"cudnn"`` or None for
    torch's own choice)."""
    import torch.nn.functional as F

    if backend is None:
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel(getattr(SDPBackend, BACKENDS[backend])):
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)


# --- what a step changed --------------------

_RA = re.compile(r"R\d+,\s*R\d+")  # register-A wgmma (P in registers times V in shared): 'HGMMA... R24, R88, ...'
_DEPBAR = re.compile(r"gsb0,\s*0x(\d+)")  # WARPGROUP.DEPBAR.LE gsb0, 0x1: wait until at most 1 group is open


def pv_overlap(sass: Any) -> list[int]:
    """For each ``P V`` wgmma group in the SASS (text or :class:`workbench.ir.sass.Sass`; register A operand),
    how many ``MUFU.EX2`` (the softmax's exp2) were issued between it and the ``WARPGROUP.DEPBAR`` that waited for
    it: 0 when each product is waited for before the next softmax, a whole block's worth when the softmax runs
    under it."""
    from workbench.ir.sass import read_sass

    done, open_groups = [], []
    for x in (read_sass(sass) if isinstance(sass, str) else sass).instrs:
        if x.op.startswith("HGMMA") and "gsb0" in x.args:
            open_groups.append([bool(_RA.match(x.args)), 0])
        elif x.op == "MUFU.EX2":
            for grp in open_groups:
                grp[1] += 1
        elif x.op == "WARPGROUP.DEPBAR.LE" and (m := _DEPBAR.match(x.args)):
            while len(open_groups) > int(m.group(1)):
                is_pv, n = open_groups.pop(0)
                if is_pv:
                    done.append(n)
    return done


def facts(report: Any) -> dict[str, Any]:
    """The GEMM tutorial's compiler facts (roles, budgets, spills, shared memory, wgmma, TMA, barriers) plus
    the softmax's ``exp2`` count and the most ``exp2`` issued under one ``P V`` wgmma (SASS)."""
    from workbench.ir.sass import read_sass

    f = GW.facts(report)
    sass = read_sass((getattr(report, "artifact", None) or report).stages.get("sass", ""))
    f.pop("accumulator layout", None)
    f["MUFU.EX2 (SASS)"] = sass.count("MUFU.EX2")
    f["exp2 under a P.V wgmma"] = max(pv_overlap(sass), default=0)
    return f


GPU_NOTE = ("On a GPU this step also shows: the --check against torch SDPA on fresh random inputs, the median "
            "time and TFLOP/s (workbench.measure, L2 flushed) beside cuDNN's SDPA timed the same way, the "
            "roofline point, and (TLX steps, --timeline) each role's time: the producer's TMA issue and its waits "
            "for free slots, each consumer's wgmma issue, its waits for the tensor cores, and the softmax between.")


def show_step(report: Any, prev: Any = None, baseline: Any = None) -> None:
    """What this step changed (compiler facts before/now), its check, and what was measured (or would be).
    ``baseline``: a ``BenchResult`` (e.g. cuDNN SDPA) for the ratio."""
    GW.print_step(facts(report), facts(prev) if prev is not None else None, GW.measured(report), baseline,
                  baseline.name if baseline is not None else "", GPU_NOTE,
                  ("timeline (per role, share of the role's span)", timeline_lines), width=20)


def summary_table(reports: dict[str, Any], baseline: Any = None) -> str:
    """One line per step: warps, registers, shared memory, HGMMA, exp2 under a P V wgmma, TFLOP/s, x baseline."""
    rows = [f"{'step':22s} {'warps':>5s} {'regs':>5s} {'spill B':>7s} {'smem KiB':>8s} {'HGMMA':>5s} "
            f"{'exp2|PV':>7s} {'TFLOP/s':>8s} {'x ' + (baseline.name if baseline else 'SDPA'):>12s}"]
    for name, r in reports.items():
        f, m = facts(r), GW.measured(r)
        tf = f"{m['tflops']:.1f}" if m["tflops"] is not None else "-"
        ratio = f"{m['tflops'] / baseline.tflops:.2f}" if m["tflops"] is not None and baseline else "-"
        rows.append(f"{name:22s} {f['warps']!s:>5s} {f['registers/thread (launch)']!s:>5s} {f['spilled bytes']:7d} "
                    f"{(f['shared bytes'] or 0) / 1024:8.1f} {f['HGMMA (SASS)']:5d} {f['exp2 under a P.V wgmma']:7d} "
                    f"{tf:>8s} {ratio:>12s}")
    return "\n".join(rows)


def timeline_lines(tl: dict[str, Any]) -> list[str]:
    """Per role, shares of its span: wgmma issue, waiting for wgmma, time no scope covers (in a consumer: the
    softmax and the rescale), barrier waits, TMA issue; the median time per KV block (the role's iterations
    of its first ring barrier); the two longest waits; how much the consumers' busy times overlap."""
    head = (f"  {'role':11s} {'wgmma issue':>11s} {'wgmma wait':>10s} {'no scope':>12s} {'barriers':>8s} "
            f"{'TMA':>5s} {'per block':>9s}  longest waits")
    lines = [head]
    for r in tl.get("roles") or []:
        sh = r.get("shares") or {}
        it = (r.get("iterations") or {}).get("p50_ns")
        waits = ", ".join(f"{k} {100 * v['fraction']:.0f}%" for k, v in
                          sorted((r.get("waits") or {}).items(), key=lambda kv: -kv[1]["fraction"])[:2])
        lines.append(f"  {r['role']:11s} {100 * sh.get('mma', 0):10.1f}% {100 * sh.get('mma_wait', 0):9.1f}% "
                     f"{100 * (sh.get('untracked', 0) + sh.get('other', 0)):11.1f}% "
                     f"{100 * sh.get('waiting', 0):7.1f}% {100 * sh.get('tma', 0):4.1f}% "
                     f"{(f'{it:.0f} ns' if it else '-'):>9s}  {waits or '-'}")
    ov = tl.get("overlap") or {}
    if ov.get("consumer.0", {}).get("consumer.1") is not None:
        lines.append(f"  consumer.1 busy during {100 * ov['consumer.0']['consumer.1']:.0f}% of consumer.0's busy time")
    if tl.get("overhead") is not None:
        lines.append(f"  instrumentation overhead {100 * tl['overhead']:+.1f}% (instrumented vs plain median)")
    return lines


def excerpt(fn: Any, start: str | None = None, stop: str | None = None) -> str:
    """Source of a (jit) function, from the first line containing ``start`` up to (not including) the first
    later line containing ``stop``."""
    lines = inspect.getsource(getattr(fn, "fn", fn)).splitlines()
    i = next((n for n, ln in enumerate(lines) if start and start in ln), 0)
    j = next((n for n, ln in enumerate(lines[i + 1:], i + 1) if stop and stop in ln), len(lines))
    return textwrap.dedent("\n".join(lines[i:j]))


# --- the same-run comparison --------------------


def _rel_err_heads(out: Any, q: Any, k: Any, v: Any, causal: bool) -> float:
    """:func:`common.rel_err` against the fp32 reference on the first and the last head (all finite)."""
    import torch

    if not torch.isfinite(out).all():
        return math.inf
    errs = []
    for b, h in {(0, 0), (q.shape[0] - 1, q.shape[1] - 1)}:
        sl = (slice(b, b + 1), slice(h, h + 1))
        errs.append(C.rel_err(out[sl], C.reference(q[sl], k[sl], v[sl], causal)))
    return max(errs)


def _calls(kernels: dict[str, Callable[..., Any]], q: Any, k: Any, v: Any, causal: bool) -> dict[str, Callable]:
    """Zero-argument launchers: SDPA per backend, then each kernel into its own output (allocated once here)."""
    calls: dict[str, Callable[[], Any]] = {f"sdpa {b}": (lambda b=b: sdpa(q, k, v, causal, b)) for b in BACKENDS}
    for name, fn in kernels.items():
        out = output(q)
        calls[name] = lambda fn=fn, out=out: (fn(q, k, v, causal, out), out)[1]
    return calls


def compare(kernels: dict[str, Callable[..., Any]], shapes: Sequence[tuple[int, int, int, int, bool]] = MAIN_SHAPES,
            rep_ms: float = 100.0) -> list[dict[str, Any]]:
    """torch SDPA (flash and cuDNN backends) and each of ``kernels`` (``fn(q, k, v, causal, out)`` launching
    into ``out``), per shape: checked against the fp32 reference (a kernel off by more than
    :func:`common.tolerance` is not timed), then timed with ``workbench.measure.bench`` (median, L2 flushed),
    all in this process, one after the other. Rows: ``{kernel, shape, causal, ms, tflops, rel_err, error}``."""
    import torch

    from workbench import measure

    rows = []
    for B, H, S, D, causal in shapes:
        q, k, v = inputs(B, H, S, D, "cuda")
        fl = C.attention_flops(B, H, S, S, D, causal)
        for name, call in _calls(kernels, q, k, v, causal).items():
            row = dict(kernel=name, shape=f"B{B} H{H} S{S} D{D}", causal=causal, ms=None, tflops=None,
                       rel_err=None, error=None)
            try:
                row["rel_err"] = _rel_err_heads(call(), q, k, v, causal)
                if not row["rel_err"] < C.tolerance(q.dtype):
                    raise AssertionError(f"wrong result: rel err {row['rel_err']:.3g}")
                r = measure.bench(call, flops=fl, rep_ms=rep_ms, name=name)
                row.update(ms=r.median_ms, tflops=r.tflops)
            except Exception as e:  # a failing kernel is a row, not the end of the comparison
                row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:160]
                try:
                    torch.cuda.synchronize()
                except Exception:  # a fault left the context broken: the rows after this one will say so
                    pass
            rows.append(row)
    return rows


def ratio_table(rows: list[dict[str, Any]]) -> str:
    """Per shape and mask: time, TFLOP/s and the ratio to each SDPA backend of the same run (>1: faster)."""
    out = []
    for key in dict.fromkeys((r["shape"], r["causal"]) for r in rows):
        here = [r for r in rows if (r["shape"], r["causal"]) == key]
        base = {r["kernel"]: r["ms"] for r in here if r["kernel"].startswith("sdpa") and r["ms"]}
        out.append(f"{key[0]} {'causal' if key[1] else 'non-causal'} bf16")
        out.append(f"  {'kernel':30s} {'ms':>7s} {'TFLOP/s':>8s} " + " ".join(f"{'x ' + b:>12s}" for b in base)
                   + f" {'rel err':>8s}")
        for r in here:
            if r["error"]:
                out.append(f"  {r['kernel']:30s} {r['error']}")
                continue
            ratios = " ".join(f"{ms / r['ms']:12.2f}" for ms in base.values())
            out.append(f"  {r['kernel']:30s} {r['ms']:7.3f} {r['tflops']:8.1f} {ratios} {r['rel_err']:8.1e}")
    return "\n".join(out)


def recorded_table(path: str | Path, shape: Sequence[int] = (4, 32, 4096, 128)) -> str:
    """The best TFLOP/s per kernel that ``bench/attention.py --sweep`` recorded in ``path`` for ``shape``
    (non-causal and causal), with its device and date; a line saying so if the file is not there."""
    p = Path(path)
    if not p.exists():
        return f"(no recorded results at {p})"
    d = json.loads(p.read_text())
    lines = [f"recorded by {d.get('command', 'bench/attention.py')} on {d.get('device')} at {d.get('date')} "
             f"(torch {d.get('torch')}, triton {d.get('triton')}); best config per kernel, {tuple(shape)} bf16:"]
    for causal in (False, True):
        best: dict[str, dict] = {}
        for m in d.get("measurements", []):
            full = list(m.get("shape", []))  # the family runner's shapes end with the mask, older runs had "causal"
            mask = m["causal"] if "causal" in m else bool(full[4:5] and full[4])
            if full[:4] == list(shape) and mask == causal and m.get("tflops"):
                if m["tflops"] > best.get(m["kernel"], {}).get("tflops", 0):
                    best[m["kernel"]] = m
        lines.append(f"  {'causal' if causal else 'non-causal'}:")
        lines += [f"    {k:16s} {m['tflops']:6.0f} TFLOP/s  {m.get('config', '-')}"
                  for k, m in sorted(best.items(), key=lambda kv: -kv[1]["tflops"])]
    return "\n".join(lines)
