"""Differences between two Reports of the same kernel (``%%tlx --diff``)."""

from __future__ import annotations

import difflib
from typing import Any

from workbench.analyse.diff import diff as stage_diff
from workbench.ir.schema_types import Diff
from workbench.report.compare import comparison_html, performance
from workbench.report.packing import unpack_stage

MAX_DIFF_LINES = 400
MAX_DIFF_CHARS = 100_000  # LLVM IR lines run to kilobytes: cap the text too
_MD_FIELDS = (
    "num_warps",
    "num_stages",
    "num_ctas",
    "shared_bytes",
    "registers",
    "spill_stores",
    "spill_loads",
    "spills",
    "local_bytes",
    "max_threads",
    "target",
)


def _udiff(a: str, b: str, name: str, limit: int = MAX_DIFF_LINES) -> tuple[str, int, int, bool]:
    """Unified diff of the source (as is) or of a stage (locations ignored: workbench.analyse.diff), truncated."""
    if name == "source":
        lines = list(difflib.unified_diff(a.splitlines(), b.splitlines(), "previous/source", "this run/source", n=2,
                                          lineterm=""))
        added = sum(1 for ln in lines if ln.startswith("+") and not ln.startswith("+++"))
        removed = sum(1 for ln in lines if ln.startswith("-") and not ln.startswith("---"))
    else:
        d = stage_diff(a, b, name, context=2)
        lines = d.unified.replace("a:", "previous/", 1).replace("b:", "this run/", 1).splitlines()
        added, removed = d.added, d.removed
    kept, size = [], 0
    for ln in lines[:limit]:
        size += len(ln) + 1
        if size > MAX_DIFF_CHARS:
            break
        kept.append(ln)
    truncated = len(kept) < len(lines)
    if truncated:
        rest = "" if name == "source" else (f"; all of them: workbench.analyse.diff(previous, this, {name!r}) with "
                                             "the two Reports or Artifacts")
        kept.append(f"... ({len(lines) - len(kept)} more diff lines{rest})")
    return "\n".join(kept), added, removed, truncated


def _as_dict(r: Any) -> dict[str, Any]:
    if isinstance(r, dict):  # a Report's JSON form: its stage texts may be packed
        return {**r, "stages": [unpack_stage(s) for s in r.get("stages", [])]}
    return {k: getattr(r, k, None) for k in ("id", "created", "kernel", "stages", "metadata", "measurements", "cell")}


def _run_name(o: dict[str, Any]) -> str:
    count = (o.get("cell") or {}).get("execution_count")
    return f"In [{count}]" if isinstance(count, int) else f"report {o.get('id', '')}"


class Comparison:
    """``workbench.compare(before, after)``: the performance part of the diff of two Reports, shown as its
    ranked sentences and tables (``.data``: the payload, ``workbench.report.compare.performance``)."""

    def __init__(self, data: dict[str, Any] | None, before: str, after: str) -> None:
        self.data, self.before, self.after = data, before, after

    def __str__(self) -> str:
        if self.data is None:
            return (f"{self.before} and {self.after}: nothing to compare (run both with --bench and --stalls; the "
                    "SASS stage gives the loop's instruction mix)")
        return "\n".join([f"{self.before} -> {self.after}:", *(f"  {s}" for s in self.data["ranked"])])

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"text/plain": str(self), "text/html": comparison_html(self.data, self.before, self.after)}


def compare(before: Any, after: Any) -> Comparison:
    """Why ``after`` is faster or slower than ``before`` (two Reports, or their dicts): time, stall reasons ranked by
    the time they explain, per-role stalls and the hottest SASS loop's instruction mix, where both have them."""
    o, n = _as_dict(before), _as_dict(after)
    return Comparison(performance(o, n), _run_name(o), _run_name(n))


def diff_reports(old: Any, new: Any, label: str | None = None) -> Diff:
    """The schema's ``previous`` object: what changed from ``old`` to ``new`` (Reports or their dicts); ``label``:
    how the user names ``old`` (``r2``, ``s.report(5)``; default: its cell's run, ``In [4]``, else its id)."""
    o, n = _as_dict(old), _as_dict(new)
    ok, nk = o.get("kernel", {}), n.get("kernel", {})
    src_diff, _, _, _ = _udiff(
        ok.get("source", {}).get("kernel_text", ""), nk.get("source", {}).get("kernel_text", ""), "source"
    )
    md = []
    for f in _MD_FIELDS:
        a, b = (o.get("metadata") or {}).get(f), (n.get("metadata") or {}).get(f)
        if a != b:
            md.append({"field": f, "before": a, "after": b})
    ostages = {s["name"]: s["text"] for s in o.get("stages", [])}
    nstages = {s["name"]: s["text"] for s in n.get("stages", [])}
    stages = []
    for name in list(nstages) + [s for s in ostages if s not in nstages]:
        if name not in ostages:
            stages.append(
                {
                    "name": name,
                    "status": "added",
                    "added": nstages[name].count("\n") + 1,
                    "removed": 0,
                    "diff": "",
                    "truncated": False,
                }
            )
        elif name not in nstages:
            stages.append(
                {
                    "name": name,
                    "status": "removed",
                    "added": 0,
                    "removed": ostages[name].count("\n") + 1,
                    "diff": "",
                    "truncated": False,
                }
            )
        else:
            text, a, r, t = _udiff(ostages[name], nstages[name], name)
            status = "changed" if a or r else "same"
            stages.append({"name": name, "status": status, "added": a, "removed": r, "diff": text if a or r else "",
                           "truncated": t})
    meas = []
    om = {m.get("kind"): m for m in o.get("measurements", []) if isinstance(m, dict)}
    for m in n.get("measurements", []):
        if isinstance(m, dict) and m.get("kind") in om:
            meas.append({"kind": m.get("kind"), "before": om[m["kind"]], "after": m})
    return {
        "id": o.get("id", ""),
        "created": o.get("created", ""),
        "label": label or _run_name(o),
        "same_key": ok.get("key") == nk.get("key"),
        "source_diff": src_diff,
        "metadata": md,
        "stages": stages,
        "measurements": meas,
        "performance": performance(o, n),
    }
