"""The compact, self-contained HTML fallback of a Report (nbconvert, untrusted notebooks, front ends
without the JupyterLab extension).

No scripts and no external resources: one ``<style>`` block scoped under ``.tlxr`` plus markup. It
shows the header, resource facts and tasks, the run, checks, findings, diagnostics, what was measured
(with what measured it, where and when), the diff against the previous run, the kernel's source with
every line anchored, and the first ``STAGE_HEAD`` lines of each stage, saying where the rest is.
Source lines link to the stage lines shown; stage lines link back to the source. Code is left-aligned
whatever the host page's table style.
"""

from __future__ import annotations

import html
from typing import Any

from workbench.report.highlight import css as token_css
from workbench.report.highlight import highlight_lines
from workbench.report.summaries import measurement_line, provenance, run_line

__all__ = ["LINE_CHARS", "STAGE_HEAD", "render"]

STAGE_HEAD = 30  # lines of each stage shown in the fallback
LINE_CHARS = 160  # longer lines of a stage head are cut (LLVM IR lines run to kilobytes)

_CSS = """
.tlxr{font-family:-apple-system,BlinkMacSystemFont,"Segoe UI",Helvetica,Arial,sans-serif;font-size:13px;
color:#1f2328;background:#fff;border:1px solid #d0d7de;border-radius:6px;padding:8px 10px;margin:4px 0;
max-width:100%;box-sizing:border-box;text-align:left}
.tlxr *{text-align:left}
.tlxr .tlxr-h{font-size:14px;margin-bottom:4px}
.tlxr .tlxr-h b,.tlxr code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
.tlxr .tag{display:inline-block;border:1px solid #d0d7de;border-radius:10px;padding:0 7px;margin:1px 2px;
font-size:12px;background:#f6f8fa;white-space:nowrap}
.tlxr .ok{color:#1a7f37;border-color:#1a7f37}.tlxr .bad{color:#cf222e;border-color:#cf222e}
.tlxr .warn{color:#9a6700;border-color:#d4a72c}.tlxr .muted{color:#656d76}
.tlxr details{border-top:1px solid #eaeef2;margin-top:4px}
.tlxr summary{cursor:pointer;padding:3px 0;font-weight:600}
.tlxr .scroll{max-height:420px;overflow:auto;border:1px solid #eaeef2;border-radius:4px}
.tlxr table{border-collapse:collapse;margin:2px 0}
.tlxr table.code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px;
line-height:1.45;width:100%}
.tlxr table.code td{padding:0 6px;vertical-align:top;white-space:pre;text-align:left;border:none}
.tlxr table.code td.ln,.tlxr table.code td.up{color:#8c959f;user-select:none;width:1%;text-align:right}
.tlxr table.code a{color:inherit;text-decoration:none}
.tlxr table.code td.map{color:#8c959f;font-size:11px;width:1%}
.tlxr table.code td.map a{margin-right:6px;color:#0969da}
.tlxr table.code tr.mapped td.code{background:#f6f8fa}
.tlxr table.code tr:target td{background:#fff8c5}
.tlxr table.kv{font-size:12px}
.tlxr table.kv td,.tlxr table.kv th{border:1px solid #eaeef2;padding:2px 6px;vertical-align:top;text-align:left}
.tlxr table.kv th{background:#f6f8fa}
.tlxr pre{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px;margin:0;padding:4px;text-align:left}
.tlxr pre .add{color:#1a7f37}.tlxr pre .del{color:#cf222e}.tlxr pre .hunk{color:#8250df}
.tlxr .more{color:#656d76;font-size:12px;padding:2px 6px}
.tlxr .foot{color:#656d76;font-size:11px;margin-top:6px}
"""

_WHERE = (
    "the full texts are in this output's Report data (application/vnd.tlx-workbench.report+json): "
    "JupyterLab with the TLX Workbench extension shows every stage with its lines linked to the source; "
    "in Python, <code>report.stage(NAME)</code> (<code>%%tlx -o report</code> keeps the Report)"
)


def _e(x: Any) -> str:
    return html.escape("" if x is None else str(x))


def _tag(text: str, cls: str = "") -> str:
    return f'<span class="tag {cls}">{text}</span>'


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name)


def _table(head: list[str], rows: list[list[str]]) -> str:
    th = "".join(f"<th>{h}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f'<table class="kv"><tr>{th}</tr>{body}</table>'


def _facts(r: Any) -> str:
    md, k = r.metadata or {}, r.kernel
    tags = [_tag(_e(k.get("kind"))), _tag(_e(k.get("target")))]
    for label, f in (("warps", "num_warps"), ("stages", "num_stages"), ("CTAs", "num_ctas")):
        if md.get(f) is not None:
            tags.append(_tag(f"{_e(md[f])} {label}"))
    if md.get("shared_bytes") is not None:
        tags.append(_tag(f"{_e(md['shared_bytes'])} B shared"))
    if md.get("registers") is not None:
        tags.append(_tag(f"{_e(md['registers'])} registers"))
    if md.get("spills") is not None:
        tags.append(_tag(f"{_e(md['spills'])} B spilled", "bad" if md["spills"] else ""))
    if md.get("local_bytes"):
        tags.append(_tag(f"{_e(md['local_bytes'])} B local", "warn"))
    ms = k.get("compile_ms")
    ms_text = f" · {ms:.0f} ms" if isinstance(ms, (int, float)) else ""
    tags.append(_tag(("cache hit" if k.get("cache_hit") else "compiled") + ms_text, "muted"))
    return f"<div>{''.join(tags)}</div>"


def _tasks(r: Any, pre: str) -> str:
    tasks = (r.metadata or {}).get("tasks") or []
    if not tasks:
        return ""
    rows = []
    for t in tasks:
        line = t.get("first_line")
        where = f'<a href="#{pre}-src-L{line}">line {line}</a>' if line else ""
        name = "default" if t.get("partition") is None else f"partition {t['partition']}"
        rows.append([_e(name), _e(t.get("num_warps")), _e(t.get("registers")), _e(t.get("start_warp")), where])
    return _table(["task", "warps", "registers", "first warp", "body"], rows)


def _run_and_checks(r: Any) -> str:
    parts = []
    if r.runs:
        last = r.runs[-1]
        more = r.kernel.get("launches", len(r.runs))
        more_text = f" · {more} launches" if more and more > 1 else ""
        tag = _tag("ran", "ok") if last.get("ran") else _tag("not run", "warn")
        parts.append(f"<div>{tag} {_e(run_line(last))}<span class=\"muted\">{_e(more_text)}</span></div>")
    rows = []
    for c in r.checks:
        cls = {"passed": "ok", "failed": "bad", "error": "bad"}.get(c["status"], "warn")
        err = ""
        if c.get("max_abs_err") is not None:
            err = f"max abs {c['max_abs_err']:.3g}, max rel {c.get('max_rel_err') or 0:.3g}"
        rows.append([f"<code>{_e(c['expr'])}</code>", _tag(_e(c["status"]), cls), _e(c.get("message")), _e(err)])
    if rows:
        parts.append(_table(["check", "status", "result", "error"], rows))
    return "".join(parts)


def _line_link(pre: str, line: Any) -> str:
    return f'<a href="#{pre}-src-L{line}">line {line}</a>' if line else ""


def _findings(r: Any, pre: str) -> str:
    rows = []
    for f in r.findings or []:
        cls = {"error": "bad", "warning": "warn"}.get(f.get("severity"), "muted")
        related = "".join(
            f"<div class=\"muted\">{_line_link(pre, x.get('line'))} {_e(x.get('message'))}</div>"
            for x in f.get("related") or []
        )
        hint = f'<div class="muted">hint: {_e(f["hint"])}</div>' if f.get("hint") else ""
        rows.append([_tag(_e(f.get("severity")), cls), f"<code>{_e(f.get('rule'))}</code>",
                     _line_link(pre, f.get("line")), f"{_e(f.get('message'))}{related}{hint}"])
    for d in r.diagnostics:
        cls = {"error": "bad", "warning": "warn"}.get(d["severity"], "muted")
        hint = f'<div class="muted">hint: {_e(d["hint"])}</div>' if d.get("hint") else ""
        rows.append([_tag(_e(d["severity"]), cls), _e(d.get("source") or ""), _line_link(pre, d.get("line")),
                     f"{_e(d['message'])}{hint}"])
    return _table(["", "from", "where", "message"], rows) if rows else ""


def _measurements(r: Any) -> str:
    items = list(r.measurements or []) + ([r.timeline] if r.timeline else [])
    rows = []
    for m in items:
        ok = m.get("status", "ok") == "ok"
        by = f'<div class="muted">{_e(provenance(m))}</div>' if ok and provenance(m) else ""
        rows.append(f"<div>{_e(measurement_line(m))}{by}</div>")
    return f'<div class="measured">{"".join(rows)}</div>' if rows else ""


def _diff_pre(text: str) -> str:
    out = []
    for ln in text.split("\n"):
        cls = "hunk" if ln.startswith("@@") else "add" if ln[:1] == "+" and ln[:3] != "+++" else (
            "del" if ln[:1] == "-" and ln[:3] != "---" else "")
        out.append(f'<span class="{cls}">{_e(ln)}</span>' if cls else _e(ln))
    return '<div class="scroll"><pre>' + "\n".join(out) + "</pre></div>"


def _previous(r: Any) -> str:
    p = r.previous
    if not p:
        return ""
    changed = [s for s in p["stages"] if s["status"] != "same"]
    head = "identical compilation" if p["same_key"] else f"{len(changed)} stage(s) changed"
    rows = [[_e(m["field"]), _e(m["before"]), _e(m["after"])] for m in p["metadata"]]
    rows += [[_e(s["name"]), _e(s["status"]), f"+{s['added']} −{s['removed']}"] for s in changed]
    body = _table(["what", "before / status", "after / lines"], rows) if rows else ""
    if p.get("source_diff"):
        body += _diff_pre(p["source_diff"])
    return (f"<details open><summary>Diff against {_e(p.get('label') or 'run ' + p['id'][:8])} of "
            f"{_e(p['created'])}: {_e(head)}"
            f"</summary>{body}</details>")


def _source(r: Any, pre: str) -> str:
    src = r.kernel["source"]
    all_lines = (src.get("text") or "").split("\n")
    first, last = src.get("first_line", 1), src.get("last_line") or 0
    if not (1 <= first <= len(all_lines)) or last < first:
        all_lines, first = (src.get("kernel_text") or "").split("\n"), 1
        last = len(all_lines)
    last = min(max(last, first), len(all_lines))
    hl = highlight_lines("\n".join(all_lines), "python")
    shown = {s["name"]: min(STAGE_HEAD, len(s["text"].splitlines())) for s in r.stages}
    rows = []
    for n in range(first, last + 1):
        links = []
        for s in r.stages:  # links to the stage lines the fallback shows (the viewer links them all)
            t = next((t for t in s["line_map"].get(str(n)) or [] if t <= shown[s["name"]]), None)
            if t is not None:
                links.append(f'<a href="#{pre}-{_slug(s["name"])}-L{t}">{_e(s["name"])}:{t}</a>')
        cls = ' class="mapped"' if links else ""
        code = hl[n - 1] if n - 1 < len(hl) else ""
        rows.append(f'<tr id="{pre}-src-L{n}"{cls}><td class="ln"><a href="#{pre}-src-L{n}">{n}</a></td>'
                    f'<td class="code">{code}</td><td class="map">{" ".join(links)}</td></tr>')
    where = "this cell" if src.get("in_cell") else _e(src.get("filename"))
    return (f"<details open><summary>Source · lines {first}–{last} of {where}</summary>"
            f'<div class="scroll"><table class="code hl">{"".join(rows)}</table></div></details>')


def _stage(stage: dict[str, Any], pre: str, is_open: bool) -> str:
    name, text = stage["name"], stage["text"]
    lines = text.splitlines()
    cut = [ln if len(ln) <= LINE_CHARS else ln[:LINE_CHARS] + " …" for ln in lines[:STAGE_HEAD]]
    head = highlight_lines("\n".join(cut), stage["language"])
    back: dict[int, int] = {}
    for user, tgt in stage["line_map"].items():
        for t in tgt:
            if t <= len(head):
                back.setdefault(int(t), int(user))
    slug = _slug(name)
    rows = []
    for i, code in enumerate(head, start=1):
        u = back.get(i)
        up = f'<a href="#{pre}-src-L{u}" title="source line {u}">{u}</a>' if u else ""
        rows.append(f'<tr id="{pre}-{slug}-L{i}"{" class=mapped" if u else ""}><td class="ln">{i}</td>'
                    f'<td class="up">{up}</td><td class="code">{code}</td></tr>')
    rest = len(lines) - len(head)
    more = f'<div class="more">… {rest} more lines</div>' if rest > 0 else ""
    return (f'<details{" open" if is_open else ""} id="{pre}-{slug}"><summary>{_e(name.upper())} · '
            f'{len(lines)} lines <span class="muted">({_e(stage["language"])})</span></summary>'
            f'<div class="scroll"><table class="code hl">{"".join(rows)}</table></div>{more}</details>')


def _layouts(r: Any, pre: str) -> str:
    values = (r.layouts or {}).get("values") or []
    if not values:
        return ""
    rows = [[f"<code>{_e(v.get('name'))}</code>", _line_link(pre, v.get("line")), _e(v.get("kind")),
             _e(f"{v.get('dtype')}[{'×'.join(str(s) for s in v.get('shape') or [])}]"),
             f"<code>{_e(v.get('layout'))}</code>"] for v in values]
    table = _table(["value", "where", "kind", "type", "layout"], rows)
    return f'<details><summary>Layouts · {len(values)} values</summary><div class="scroll">{table}</div></details>'


def render(r: Any) -> str:
    """The HTML fallback for Report ``r`` (tens of KiB whatever the size of its stages)."""
    pre = f"t{r.id[:8]}"  # anchors: t1a2b3c4d-src-L12, t1a2b3c4d-ptx-L3
    first = [s for s in r.view.get("stages_first", []) if s in r.stage_names]
    order = [s for n in first for s in r.stages if s["name"] == n]
    order += [s for s in r.stages if s["name"] not in first]
    stages = "".join(_stage(s, pre, s["name"] in first) for s in order)
    dev = r.device or {}
    device = dev.get("name") or ("no GPU" + (f" ({dev['reason']})" if dev.get("reason") else ""))
    v = r.versions or {}
    others = [k for k in (r.kernels or []) if k != r.name]
    others_html = f' <span class="muted">(also in this cell: {_e(", ".join(others))})</span>' if others else ""
    return (
        f'<div class="tlxr" id="{pre}"><style>{_CSS}{token_css()}</style>'
        f'<div class="tlxr-h">Kernel <b>{_e(r.name)}</b>{others_html}</div>'
        f"{_facts(r)}{_tasks(r, pre)}{_run_and_checks(r)}{_findings(r, pre)}{_measurements(r)}{_previous(r)}"
        f"{_source(r, pre)}{stages}"
        f'<div class="more">Stages: the first {STAGE_HEAD} lines of each; {_WHERE}.</div>'
        f"{_layouts(r, pre)}"
        f'<div class="foot">TLX Workbench {_e(v.get("workbench"))} · Triton {_e(v.get("triton"))}'
        f" · torch {_e(v.get('torch'))} · device: {_e(device)} · {_e(r.created)}"
        f" · key {_e(r.kernel.get('key', '')[:12])} · report {_e(r.id[:12])}</div></div>"
    )
