"""What a search found: one row per candidate in a pandas DataFrame, the best, a plot, each candidate's Report."""

from __future__ import annotations

import json
import math
import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from workbench.search.ranking import score
from workbench.search.space import Candidate

__all__ = ["COLUMNS", "STATUSES", "SearchResult", "last", "show_candidate"]

_KEPT = 16
_RESULTS: OrderedDict[str, SearchResult] = OrderedDict()  # this kernel's recent searches, for the Search tab

STATUSES = ("ok", "compiled", "skipped", "compile-error", "check-failed", "hang", "fault", "lost")
COLUMNS = ["status", "ms", "tflops", "tbs", "ratio", "ref_ms", "registers", "spills", "shared_kib", "local_bytes",
           "compile_s", "findings", "max_abs_err", "confirmed", "node", "gpu_node", "error", "cached", "delayed"]
STATUS_COLOURS = {"ok": "#2ca02c", "compiled": "#1f77b4", "skipped": "#ff7f0e", "compile-error": "#7f7f7f",
                  "check-failed": "#d62728", "hang": "#9467bd", "fault": "#8c564b", "lost": "#e377c2"}


def _finding_text(findings: list[dict[str, Any]] | None) -> str:
    return "; ".join(f"line {f.get('line')}: [{f.get('rule')}] {f.get('message')}" for f in findings or [])


@dataclass
class SearchResult:
    """``table``: one row per candidate (its config keys, then ``COLUMNS``); ``best``: the fastest row that passed
    its check (None if none ran); ``report(i)``: candidate ``i``'s Report; ``figure()``; ``to_json()``."""

    kernel: str
    target: str
    candidates: list[Candidate]
    rows: dict[int, dict[str, Any]]
    info: dict[str, Any] = field(default_factory=dict)  # cluster, devices, phases, utilisation, notes
    kernel_fn: Any = field(default=None, repr=False)  # the JITFunction searched (to compile a candidate's Report)
    problem: Any = field(default=None, repr=False)  # its arguments' specs
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    _table: Any = field(default=None, repr=False)

    def __post_init__(self) -> None:
        _RESULTS[self.id] = self
        while len(_RESULTS) > _KEPT:
            _RESULTS.popitem(last=False)

    # ------------------------------------------------------------------ the table
    @property
    def config_keys(self) -> list[str]:
        keys: list[str] = []
        for c in self.candidates:
            keys += [k for k in c.config if k not in keys]
        return keys

    @property
    def table(self) -> Any:
        """One row per candidate: its config, status and what was measured; a column no candidate has a value
        for is left out (a compile-only search has no times), so that the table prints readably."""
        import pandas as pd

        if self._table is None:
            keys = self.config_keys
            recs = []
            for c in self.candidates:
                r = self.rows.get(c.index, {})
                rec = {k: c.config.get(k) for k in keys}
                for col in COLUMNS:
                    rec[col] = r.get(col)
                rec["findings"] = _finding_text(r.get("findings"))
                rec["confirmed"] = bool(r.get("confirmed"))
                rec["delayed"] = ", ".join(r.get("delayed") or []) or None  # a stress run's sleeping sites
                recs.append(rec)
            df = pd.DataFrame(recs, columns=keys + COLUMNS, index=[c.index for c in self.candidates])
            df = df.drop(columns=[c for c in COLUMNS if c != "status" and _empty(df[c])])
            df.index.name = "candidate"
            df.attrs.update(kernel=self.kernel, target=self.target, config_keys=keys)
            self._table = df
        return self._table

    @property
    def best_index(self) -> int | None:
        """The best candidate: among the leaders timed again together (``confirmed``) if any, by ``score``."""
        ok = [i for i, r in self.rows.items() if score(r) is not None]
        pool = [i for i in ok if self.rows[i].get("confirmed")] or ok
        return max(pool, key=lambda i: score(self.rows[i])) if pool else None

    @property
    def best(self) -> Any:
        """The best row (a pandas Series), or None when no candidate ran and passed."""
        i = self.best_index
        return None if i is None else self.table.loc[i]

    @property
    def best_config(self) -> dict[str, Any] | None:
        i = self.best_index
        return None if i is None else dict(self.candidate(i).config)

    def candidate(self, i: int) -> Candidate:
        for c in self.candidates:
            if c.index == i:
                return c
        raise IndexError(f"no candidate {i} (have 0..{len(self.candidates) - 1})")

    def has_kernel(self, i: int) -> bool:
        """Did candidate ``i`` compile (so that its Report can be made)?"""
        return self.kernel_fn is not None and self.problem is not None and \
            self.rows.get(i, {}).get("registers") is not None

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for r in self.rows.values():
            out[r.get("status") or "pending"] = out.get(r.get("status") or "pending", 0) + 1
        return out

    # ------------------------------------------------------------------ views
    def figure(self) -> Any:
        """Time by config (ms; failed candidates on the axis), coloured by status (plotly)."""
        import pandas as pd
        import plotly.graph_objects as go

        df = self.table
        fig = go.Figure()
        ms = df["ms"] if "ms" in df.columns else pd.Series(math.nan, index=df.index)
        timed = ms.notna()
        floor = float(ms[timed].min()) * 0.9 if timed.any() else 1.0
        for status in STATUSES:
            part = df[df["status"] == status]
            if part.empty:
                continue
            y = [v if isinstance(v, float) and not math.isnan(v) else floor for v in ms[part.index]]
            text = [_hover(i, row, self.config_keys) for i, row in part.iterrows()]
            fig.add_trace(go.Scatter(x=list(part.index), y=y, mode="markers", name=f"{status} ({len(part)})",
                                     marker={"color": STATUS_COLOURS[status], "size": 9,
                                             "symbol": "circle" if status == "ok" else "x"},
                                     hovertext=text, hoverinfo="text"))
        b = self.best_index
        if b is not None:
            fig.add_annotation(x=b, y=self.rows[b]["ms"], text=f"best: {self.rows[b]['ms']:.4g} ms", showarrow=True)
        dev = ", ".join(sorted({g.get("device", "?") for g in self.info.get("gpus", [])})) or "no GPU (compile only)"
        fig.update_layout(title=f"search over {len(df)} configs of {self.kernel} ({dev}, {self.info.get('date', '')})",
                          xaxis_title="candidate", yaxis_title="ms (median)" if timed.any() else "",
                          template="plotly_white", height=380, legend={"orientation": "h"})
        return fig

    def payload(self, shown: int | None = None) -> dict[str, Any]:
        """The Search tab's data (the Report schema's ``search``)."""
        rows = []
        for c in self.candidates:
            r = self.rows.get(c.index, {})
            row = {k: _plain(r.get(k)) for k in ("status", "ms", "tflops", "tbs", "ratio", "registers", "spills",
                                                    "shared_kib", "compile_s", "cache_hit", "error", "node",
                                                    "confirmed", "cached")}
            row.update(index=c.index, config={k: _plain(v) for k, v in c.config.items()},
                       findings=_finding_text(r.get("findings")) or None, status=r.get("status") or "pending")
            rows.append(row)
        info = json.loads(json.dumps(self.info, default=_jsonable))
        return {"search_id": self.id, "kernel": self.kernel, "target": self.target, "shown": shown,
                "best": self.best_index, "config_keys": self.config_keys, "counts": self.counts(), "info": info,
                "rows": rows}

    def report(self, i: int, **context: Any) -> Any:
        """Candidate ``i``'s Report (its stages, metadata, findings, what its run found), with the Search tab;
        ``context``: more of ``build_report``'s arguments (the cell it came from)."""
        from workbench.compile import compile as compile_kernel
        from workbench.report.build import build_report

        cand = self.candidate(i)
        if not self.has_kernel(i):
            r = self.rows.get(i, {})
            raise LookupError(f"candidate {i} has no compiled kernel to report ({r.get('status')}: {r.get('error')})")
        values, _ = self.problem.record.build("meta", blocks=cand.blocks)
        art = compile_kernel(self.kernel_fn, target=self.target, **values, **cand.options)  # a Triton cache hit
        row = self.rows.get(i, {})
        ran = row.get("status") in ("ok", "check-failed", "hang", "fault")
        run = {"mode": "gpu" if ran else "compile", "ran": ran, "grid": list(cand.grid) if cand.grid else None,
               "reason": None if ran else f"search status {row.get('status')}", "device": row.get("gpu"),
               "arguments": [], "checks": []}
        context.setdefault("options", {"search": {k: _plain(v) for k, v in cand.config.items()}})
        notes = [_note(n) for n in self.info.get("notes", [])]
        diags = [*context.pop("diagnostics", []), *notes, _note(_summary_line(i, cand, row, len(self.candidates)))]
        return build_report(art, runs=[run], diagnostics=diags, findings=list(row.get("findings") or []),
                            search=self.payload(shown=i), **context)

    def summary(self) -> str:
        c = self.counts()
        parts = ", ".join(f"{v} {k}" for k, v in sorted(c.items(), key=lambda kv: STATUSES.index(kv[0])
                                                         if kv[0] in STATUSES else 99))
        head = f"search {self.kernel} ({self.target}): {len(self.candidates)} candidates: {parts}"
        b = self.best_index
        if b is not None:
            r = self.rows[b]
            rate = f", {r['tflops']:.0f} TFLOP/s" if r.get("tflops") else ""
            vs = f", {r['ratio']:.3f}x the reference" if r.get("ratio") else ""
            head += f"\nbest: #{b} {self.candidate(b).label()}: {r['ms']:.4g} ms{rate}{vs}"
        ph = self.info.get("phases") or {}
        names = {"prepare_s": "prepare", "connect_s": "Ray up", "compile_wall_s": "compiles",
                 "pipeline_s": "compiles and runs", "confirm_s": "leaders re-timed", "wall_s": "total"}
        if self.info.get("compile_only"):  # nothing ran: the pipeline's span is the compiles'
            names.pop("pipeline_s")
        if "wall_s" not in ph:  # a result from before the whole wall time was kept: its pipeline's own
            names["total_s"] = "pipeline total"
        parts = [f"{label} {ph[k]:.1f} s" for k, label in names.items() if isinstance(ph.get(k), int | float)]
        if parts:
            head += "\ntimes: " + ", ".join(parts)
        for note in self.info.get("notes") or []:
            head += f"\nnote: {note}"
        return head

    def to_dict(self) -> dict[str, Any]:
        rows = []
        for c in self.candidates:
            r = dict(self.rows.get(c.index, {}))
            r.update(index=c.index, config=c.config, grid=list(c.grid) if c.grid else None)
            rows.append(r)
        return {"kernel": self.kernel, "target": self.target, "best": self.best_index, "info": self.info,
                "rows": rows}

    def to_json(self, **kw: Any) -> str:
        return json.dumps(self.to_dict(), default=_jsonable, **kw)

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        import html

        head = html.escape(self.summary()).replace("\n", "<br>")
        return {"text/plain": self.summary(),
                "text/html": f"<div><p>{head}</p>{self.table.to_html(max_rows=60, na_rep='')}</div>"}


def _empty(col: Any) -> bool:
    """A table column without a value: all missing, False (``confirmed``) or empty text (``findings``)."""
    return bool(all(v is None or v is False or v == "" or (isinstance(v, float) and math.isnan(v)) for v in col))


def _note(message: str) -> dict[str, Any]:
    return {"severity": "info", "source": "search", "line": None, "hint": None, "message": message}


def _plain(v: Any) -> Any:
    """A JSON value for the Search tab (NaN -> None, tuples -> lists, others -> their repr)."""
    if v is None or isinstance(v, bool | int | str):
        return v
    if isinstance(v, float):
        return None if math.isnan(v) or math.isinf(v) else v
    if isinstance(v, list | tuple):
        return [_plain(x) for x in v]
    return repr(v)


def last() -> SearchResult | None:
    """The latest search of this process."""
    return next(reversed(_RESULTS.values()), None)


def show_candidate(search_id: str, i: int) -> None:
    """Display candidate ``i`` of search ``search_id`` (the Search tab asks for this by running it)."""
    from IPython.display import display

    result = _RESULTS.get(search_id)
    if result is None:
        raise LookupError(f"search {search_id} is no longer in this kernel (it keeps the last {_KEPT}; a restart "
                          "forgets them): run its cell again")
    display(result.report(i))


def _jsonable(v: Any) -> Any:
    if isinstance(v, float) and math.isnan(v):
        return None
    return repr(v)


def _hover(i: int, row: Any, keys: list[str]) -> str:
    cfg = ", ".join(f"{k}={row[k]}" for k in keys)
    ms = f"{row['ms']:.4g} ms" if isinstance(row.get("ms"), float) and not math.isnan(row["ms"]) else "not timed"
    err = f"<br>{str(row['error'])[:160]}" if isinstance(row.get("error"), str) else ""
    return f"#{i} {row['status']}: {ms}<br>{cfg}{err}"


def _summary_line(i: int, cand: Candidate, row: dict[str, Any], n: int) -> str:
    bits = [f"search candidate {i} of {n}: {cand.label()}", f"status {row.get('status')}"]
    if row.get("ms") is not None:
        bits.append(f"{row['ms']:.4g} ms")
    if row.get("ratio") is not None:
        bits.append(f"{row['ratio']:.3f}x the reference")
    if row.get("error"):
        bits.append(str(row["error"])[:300])
    return "; ".join(bits)
