"""Helpers of ``tutorials/01-producer-consumer-gemm.ipynb``: what changed between two steps.

Everything here works without a GPU (the compiler facts are real on a CPU); measured numbers appear
only when the ``%%tlx --bench`` / ``--timeline`` cell ran on a GPU, otherwise the helpers say what a
reader with one would see.
"""

from __future__ import annotations

import difflib
import inspect
import re
from typing import Any

__all__ = ["code_diff", "facts", "measured", "show_step", "summary_table", "verify"]


def _artifact(report: Any) -> Any:
    return getattr(report, "artifact", report)


def _acc_layout(art: Any) -> str:
    for v in getattr(getattr(art, "layouts", None), "values", None) or []:
        if getattr(v, "name", None) == "acc" and getattr(v, "kind", "tensor") == "tensor":
            return str(v.layout)
    m = re.search(r"#ttg\.nvidia_mma<\{[^}]*\}>", art.stages.get("ttgir", ""))
    return m.group(0) if m else "-"


_MAXNREG = re.compile(r"setmaxnreg\.(\w+)\.sync\.aligned\.u32\s+(\d+)")


def facts(report_or_artifact: Any) -> dict[str, Any]:
    """Compiler facts of a step: registers, spills, shared memory, warps, wgmma/TMA/barrier counts."""
    art = _artifact(report_or_artifact)
    md = art.metadata
    ptx, sass, ttgir = art.stages.get("ptx", ""), art.stages.get("sass", ""), art.stages.get("ttgir", "")
    return {
        "kernel": md.name,
        "warps": md.num_warps,
        "registers/thread (launch)": md.registers,
        "setmaxnreg": ", ".join(f"{k} {v}" for k, v in _MAXNREG.findall(ptx)) or "-",
        "spilled bytes": (md.spill_stores or 0) + (md.spill_loads or 0),
        "shared bytes": md.shared_bytes,
        "warp-specialized": "ttg.warp_specialize" in ttgir,
        "HGMMA (SASS)": sass.count("HGMMA"),
        "TMA copies (PTX)": ptx.count("cp.async.bulk.tensor"),
        "mbarrier waits (PTX)": ptx.count("mbarrier.try_wait"),
        # named barriers a kernel uses for its own hand-overs (TLX convention: ids 9-15; Triton's are lower)
        "named-barrier ops (PTX)": len(re.findall(r"bar\.(?:sync|arrive)\s+(?:9|1[0-5]), \d+;", ptx)),
        "LDL/STL (SASS)": len(re.findall(r"\b(?:LDL|STL)\b", sass)),
        "accumulator layout": _acc_layout(art),
    }


def measured(report: Any) -> dict[str, Any]:
    """The bench and timeline outcome of a ``%%tlx --bench --timeline`` Report (or why there is none)."""
    out: dict[str, Any] = {"tflops": None, "median_us": None, "bench": None, "timeline": None}
    for m in getattr(report, "measurements", None) or []:
        if m.get("kind") != "bench":
            continue
        if m.get("status") == "ok" and m.get("timing"):
            t = m["timing"]
            out["tflops"] = t.get("tflops")
            out["median_us"] = (t.get("median_ms") or 0) * 1e3
            out["bench"] = f"measured by {m.get('measured_by')} on {m.get('device')} at {m.get('when')}"
        else:
            out["bench"] = m.get("reason") or m.get("message") or m.get("status")
    tl = getattr(report, "timeline", None)
    if tl:
        out["timeline"] = tl.get("reason") if tl.get("status") != "ok" else "ok"
    return out


def code_diff(old: Any, new: Any, context: int = 1, max_lines: int = 80) -> str:
    """Unified diff of two kernels' sources (``@triton.jit`` / ``@gluon.jit`` functions)."""

    def src(k: Any) -> list[str]:
        fn = getattr(k, "fn", k)
        return inspect.getsource(fn).splitlines()

    lines = list(
        difflib.unified_diff(
            src(old), src(new), getattr(old, "__name__", "old"), getattr(new, "__name__", "new"), n=context, lineterm=""
        )
    )
    if len(lines) > max_lines:
        lines = lines[:max_lines] + [f"... ({len(lines) - max_lines} more diff lines)"]
    return "\n".join(lines)


def verify(out: Any, a: Any, b: Any) -> str:
    """Max relative error against torch.matmul on a GPU; on a CPU nothing ran, so say so."""
    if not getattr(out, "is_cuda", False):
        return "correctness: not checked (no GPU: the launch was compiled, not run)"
    from tlx_kernels.gemm.common import rel_err

    err = rel_err(out, a @ b)
    return f"correctness: max rel err vs torch.matmul {err:.2e} ({'ok' if err < 1e-2 else 'WRONG'})"


GPU_NOTE = (
    "On a GPU this cell also shows: the median time and TFLOP/s (workbench.measure, L2 flushed), the "
    "point on the H100/H200 roofline, the ratio to cuBLAS, and (with --timeline) each role's lane over "
    "time: producer TMA issue, consumer wgmma and epilogue, and the waits between them."
)


def show_step(report: Any, prev: Any = None, out: Any = None, a: Any = None, b: Any = None) -> None:
    """Print what this step changed: code, compiler facts, and what was measured (or would be)."""
    f = facts(report)
    if prev is not None:
        p = facts(prev)
        print(f"{'fact':28s} {'before':>18s}   {'now':>18s}")
        for k, v in f.items():
            if k in ("kernel", "accumulator layout"):
                continue
            mark = "  <-" if p.get(k) != v else ""
            print(f"{k:28s} {p.get(k)!s:>18s}   {v!s:>18s}{mark}")
        print(f"accumulator layout before: {p['accumulator layout']}")
        print(f"accumulator layout now:    {f['accumulator layout']}")
    else:
        for k, v in f.items():
            print(f"{k:28s} {v}")
    m = measured(report)
    if m["tflops"] is not None:
        print(f"\nmeasured: {m['tflops']:.1f} TFLOP/s, median {m['median_us']:.1f} us ({m['bench']})")
    else:
        print(f"\nnot timed: {m['bench'] or 'no --bench'}")
        print(GPU_NOTE)
    if m["timeline"] not in (None, "ok"):
        print(f"timeline: {m['timeline']}")
    if out is not None and a is not None:
        print(verify(out, a, b))


def summary_table(reports: dict[str, Any]) -> str:
    """One line per step: registers, shared memory, HGMMA count, warps, TFLOP/s (or '-')."""
    rows = [f"{'step':34s} {'warps':>5s} {'regs':>5s} {'smem KiB':>8s} {'HGMMA':>5s} {'TFLOP/s':>8s}"]
    for name, r in reports.items():
        f, m = facts(r), measured(r)
        tf = f"{m['tflops']:.1f}" if m["tflops"] is not None else "-"
        rows.append(
            f"{name:34s} {f['warps']!s:>5s} {f['registers/thread (launch)']!s:>5s} "
            f"{(f['shared bytes'] or 0) / 1024:8.1f} {f['HGMMA (SASS)']:>5d} {tf:>8s}"
        )
    return "\n".join(rows)
