"""The self-contained HTML fallback of a Report.

No scripts and no external resources: one ``<style>`` block scoped under ``.tlxr`` plus markup,
so it survives nbconvert, untrusted notebooks and front ends without the JupyterLab extension.
Stages are ``<details>`` sections (the ``--stages`` ones first and open); every line has an anchor,
user lines link to the first line each stage made from them, and stage lines link back.
"""

from __future__ import annotations

import functools
import html
from typing import Any

from workbench.report.highlight import css as token_css
from workbench.report.highlight import highlight_lines
from workbench.report.text import run_line

__all__ = ["MAX_STAGE_LINES", "render"]

MAX_STAGE_LINES = 4000

_CSS = """
.tlxr{font-family:-apple-system,BlinkMacSystemFont,"Segoe UI",Helvetica,Arial,sans-serif;font-size:13px;
color:#1f2328;background:#fff;border:1px solid #d0d7de;border-radius:6px;padding:8px 10px;margin:4px 0;
max-width:100%;box-sizing:border-box}
.tlxr .tlxr-h{font-size:14px;margin-bottom:4px}
.tlxr .tlxr-h b{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
.tlxr .tlxr-tag{display:inline-block;border:1px solid #d0d7de;border-radius:10px;padding:0 7px;margin:1px 2px;
font-size:12px;background:#f6f8fa;white-space:nowrap}
.tlxr .ok{color:#1a7f37;border-color:#1a7f37}.tlxr .bad{color:#cf222e;border-color:#cf222e}
.tlxr .warn{color:#9a6700;border-color:#d4a72c}.tlxr .muted{color:#656d76}
.tlxr details{border-top:1px solid #eaeef2;margin-top:4px}
.tlxr summary{cursor:pointer;padding:3px 0;font-weight:600}
.tlxr .tlxr-scroll{max-height:520px;overflow:auto;border:1px solid #eaeef2;border-radius:4px}
.tlxr table.code{border-collapse:collapse;font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;
font-size:12px;line-height:1.45;width:100%}
.tlxr table.code td{padding:0 6px;vertical-align:top;white-space:pre}
.tlxr table.code td.ln,.tlxr table.code td.up{color:#8c959f;text-align:right;user-select:none;width:1%}
.tlxr table.code td.ln a,.tlxr table.code td.up a,.tlxr td.map a{color:inherit;text-decoration:none}
.tlxr table.code td.map{color:#8c959f;font-size:11px;width:1%}
.tlxr table.code td.map a{margin-right:6px;color:#0969da}
.tlxr table.code tr.mapped td.code{background:#f6f8fa}
.tlxr table.code tr:target td{background:#fff8c5}
.tlxr table.kv{border-collapse:collapse;font-size:12px}
.tlxr table.kv td,.tlxr table.kv th{border:1px solid #eaeef2;padding:2px 6px;text-align:left;
vertical-align:top}
.tlxr table.kv th{background:#f6f8fa}
.tlxr pre.diff{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px;margin:0;padding:4px}
.tlxr pre.diff .add{color:#1a7f37;background:#dafbe1}.tlxr pre.diff .del{color:#cf222e;background:#ffebe9}
.tlxr pre.diff .hunk{color:#8250df}
.tlxr .tlxr-f{color:#656d76;font-size:11px;margin-top:6px}
"""


def _e(x: Any) -> str:
    return html.escape("" if x is None else str(x))


@functools.lru_cache(maxsize=256)
def _highlighted(key: str, name: str, language: str, text: str) -> tuple[str, ...]:
    # key+name identify the text; text is part of the cache key only through its hash (cheap on hits)
    return tuple(highlight_lines(text, language))


def _lines(key: str, name: str, language: str, text: str) -> list[str]:
    if key:
        return list(_highlighted(key, name, language, text))
    return highlight_lines(text, language)


def _tag(text: str, cls: str = "") -> str:
    return f'<span class="tlxr-tag {cls}">{text}</span>'


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name)


def _facts(r: Any) -> str:
    md = r.metadata or {}
    k = r.kernel
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
    return "".join(tags)


def _runs(r: Any) -> str:
    parts = []
    runs = r.runs
    if runs:
        last = runs[-1]
        cls = "ok" if last.get("ran") else "warn"
        more = r.kernel.get("launches", len(runs))
        more_text = f" · {more} launches" if more and more > 1 else ""
        parts.append(
            f"<div>{_tag('ran' if last.get('ran') else 'not run', cls)} {_e(run_line(last))}"
            f'<span class="muted">{_e(more_text)}</span></div>'
        )
        args = last.get("arguments") or []
        if args:
            cells = []
            for a in args:
                if a["kind"] == "tensor":
                    shape = "×".join(str(s) for s in (a.get("shape") or [])) or "scalar"
                    desc = f"{a.get('dtype')}[{shape}] on {a.get('device')}"
                else:
                    desc = f"{a['kind']} = {a.get('value')!s}"
                cells.append(f"<tr><td><code>{_e(a['name'])}</code></td><td>{_e(desc)}</td></tr>")
            parts.append(
                '<details><summary>Arguments</summary><table class="kv">' + "".join(cells) + "</table></details>"
            )
    checks = r.checks
    if checks:
        rows = []
        for c in checks:
            cls = {"passed": "ok", "failed": "bad", "error": "bad"}.get(c["status"], "warn")
            err = ""
            if c.get("max_abs_err") is not None:
                err = f"max abs {c['max_abs_err']:.3g}, max rel {c.get('max_rel_err') or 0:.3g}"
            tol = f"atol {c.get('atol')}, rtol {c.get('rtol')}" if c.get("atol") is not None else ""
            rows.append(
                f"<tr><td><code>{_e(c['expr'])}</code></td><td>{_tag(_e(c['status']), cls)}</td>"
                f"<td>{_e(c.get('message'))}</td><td>{_e(err)}</td><td>{_e(tol)}</td></tr>"
            )
        parts.append(
            '<table class="kv"><tr><th>check</th><th>status</th><th>result</th><th>error</th>'
            "<th>tolerance</th></tr>" + "".join(rows) + "</table>"
        )
    return "".join(parts)


def _diagnostics(r: Any, pre: str) -> str:
    if not r.diagnostics:
        return ""
    rows = []
    in_cell = r.kernel["source"].get("in_cell")
    for d in r.diagnostics:
        cls = {"error": "bad", "warning": "warn"}.get(d["severity"], "muted")
        line = d.get("line")
        where = ""
        if line:
            where = f'<a href="#{pre}-src-L{line}">line {line}</a>' if in_cell or line else f"line {line}"
        hint = f'<div class="muted">hint: {_e(d["hint"])}</div>' if d.get("hint") else ""
        rows.append(
            f"<tr><td>{_tag(_e(d['severity']), cls)}</td><td>{where}</td><td>{_e(d['message'])}{hint}</td></tr>"
        )
    return '<table class="kv">' + "".join(rows) + "</table>"


def _source_section(r: Any, pre: str) -> str:
    src = r.kernel["source"]
    text = src.get("text") or ""
    first, last = src.get("first_line", 1), src.get("last_line") or 0
    all_lines = text.split("\n")
    if not (1 <= first <= len(all_lines)) or src.get("kernel_text") and last < first:
        all_lines, first = (src.get("kernel_text") or "").split("\n"), 1
        last = len(all_lines)
    last = min(max(last, first), len(all_lines))
    hl = _lines(r.kernel.get("key", "") + ":src", src.get("filename", ""), "python", "\n".join(all_lines))
    maps = [(s["name"], s["line_map"]) for s in r.stages]
    rows = []
    for n in range(first, last + 1):
        links = []
        for name, lm in maps:
            tgt = lm.get(str(n))
            if tgt:
                links.append(
                    f'<a href="#{pre}-{_slug(name)}-L{tgt[0]}" title="{_e(name)} line {tgt[0]}">{_e(name)}:{tgt[0]}</a>'
                )
        cls = ' class="mapped"' if links else ""
        code = hl[n - 1] if n - 1 < len(hl) else ""
        rows.append(
            f'<tr id="{pre}-src-L{n}"{cls}><td class="ln"><a href="#{pre}-src-L{n}">{n}</a></td>'
            f'<td class="code hl">{code}</td><td class="map">{"".join(links)}</td></tr>'
        )
    where = "this cell" if src.get("in_cell") else _e(src.get("filename"))
    return (
        f"<details open><summary>Source · lines {first}–{last} of {where}</summary>"
        f'<div class="tlxr-scroll"><table class="code">{"".join(rows)}</table></div></details>'
    )


def _stage_section(r: Any, stage: dict[str, Any], pre: str, is_open: bool) -> str:
    name, text = stage["name"], stage["text"]
    lines = _lines(r.kernel.get("key", ""), name, stage["language"], text)
    back: dict[int, int] = {}
    for user, tgt in stage["line_map"].items():
        for t in tgt:
            back.setdefault(int(t), int(user))
    slug = _slug(name)
    shown = lines[:MAX_STAGE_LINES]
    rows = []
    for i, code in enumerate(shown, start=1):
        u = back.get(i)
        up = f'<a href="#{pre}-src-L{u}" title="user line {u}">{u}</a>' if u else ""
        cls = ' class="mapped"' if u else ""
        rows.append(
            f'<tr id="{pre}-{slug}-L{i}"{cls}><td class="ln"><a href="#{pre}-{slug}-L{i}">{i}</a></td>'
            f'<td class="up">{up}</td><td class="code hl">{code}</td></tr>'
        )
    more = ""
    if len(lines) > len(shown):
        more = (
            f'<div class="muted">… {len(lines) - len(shown)} more lines (the full text is in the Report: '
            f"report.stage({name!r}))</div>"
        )
    op = " open" if is_open else ""
    return (
        f'<details{op} id="{pre}-{slug}"><summary>{_e(name.upper())} · {len(lines)} lines'
        f' <span class="muted">({_e(stage["language"])})</span></summary>'
        f'<div class="tlxr-scroll"><table class="code">{"".join(rows)}</table></div>{more}</details>'
    )


def _layouts_section(r: Any, pre: str) -> str:
    lay = r.layouts or {}
    values, declared = lay.get("values") or [], lay.get("declared") or []
    if not values and not declared:
        return ""
    rows = []
    for v in values:
        line = v.get("line")
        where = f'<a href="#{pre}-src-L{line}">{line}</a>' if line else ""
        shape = "×".join(str(s) for s in v.get("shape") or [])
        rows.append(
            f"<tr><td><code>{_e(v.get('name'))}</code></td><td>{where}</td><td>{_e(v.get('kind'))}</td>"
            f"<td>{_e(v.get('dtype'))}[{_e(shape)}]</td><td><code>{_e(v.get('layout'))}</code></td>"
            f"<td>{_e(v.get('reason'))}</td></tr>"
        )
    drows = "".join(
        f"<tr><td><code>{_e(d.get('alias'))}</code></td><td>{_e(d.get('kind'))}</td>"
        f"<td><code>{_e(d.get('attr'))}</code></td></tr>"
        for d in declared
    )
    body = ""
    if rows:
        body += (
            '<table class="kv"><tr><th>value</th><th>line</th><th>kind</th><th>type</th><th>layout</th>'
            "<th>why</th></tr>" + "".join(rows) + "</table>"
        )
    if drows:
        body += '<table class="kv"><tr><th>alias</th><th>kind</th><th>TTGIR</th></tr>' + drows + "</table>"
    return (
        f"<details><summary>Layouts · {len(declared)} declared, {len(values)} values</summary>"
        f'<div class="tlxr-scroll">{body}</div></details>'
    )


def _payload_rows(d: dict[str, Any]) -> str:
    rows = []
    for k, v in d.items():
        if isinstance(v, (dict, list)):
            import json

            text = json.dumps(v)
            v = text if len(text) < 400 else text[:400] + "…"
        rows.append(f"<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>")
    return '<table class="kv">' + "".join(rows) + "</table>"


def _measurements_section(r: Any) -> str:
    items = list(r.measurements or [])
    if r.timeline:
        items.append(r.timeline)
    if not items:
        return ""
    body = "".join(f"<div><b>{_e(m.get('kind'))}</b>{_payload_rows(m)}</div>" for m in items)
    return f"<details open><summary>Measurements</summary>{body}</details>"


def _diff_html(text: str) -> str:
    out = []
    for ln in text.split("\n"):
        cls = ""
        if ln.startswith("@@"):
            cls = "hunk"
        elif ln.startswith("+") and not ln.startswith("+++"):
            cls = "add"
        elif ln.startswith("-") and not ln.startswith("---"):
            cls = "del"
        out.append(f'<span class="{cls}">{_e(ln)}</span>' if cls else _e(ln))
    return '<pre class="diff">' + "\n".join(out) + "</pre>"


def _previous_section(r: Any) -> str:
    p = r.previous
    if not p:
        return ""
    changed = [s for s in p["stages"] if s["status"] != "same"]
    head = "identical compilation" if p["same_key"] else f"{len(changed)} stage(s) changed"
    parts = [f"<div>vs run {_e(p['id'][:8])} of {_e(p['created'])}: {_e(head)}</div>"]
    if p["metadata"]:
        parts.append(
            '<table class="kv"><tr><th>metadata</th><th>before</th><th>after</th></tr>'
            + "".join(
                f"<tr><td>{_e(m['field'])}</td><td>{_e(m['before'])}</td><td>{_e(m['after'])}</td></tr>"
                for m in p["metadata"]
            )
            + "</table>"
        )
    if p["source_diff"]:
        parts.append(
            f'<details open><summary>source</summary><div class="tlxr-scroll">'
            f"{_diff_html(p['source_diff'])}</div></details>"
        )
    for s in changed:
        summ = f"{_e(s['name'])} · {s['status']} · +{s['added']} −{s['removed']}"
        body = f'<div class="tlxr-scroll">{_diff_html(s["diff"])}</div>' if s["diff"] else ""
        parts.append(f"<details><summary>{summ}</summary>{body}</details>")
    return "<details open><summary>Diff against the previous run</summary>" + "".join(parts) + "</details>"


def render(r: Any) -> str:
    """The HTML fallback for Report ``r``."""
    pre = f"tlxr-{r.id[:12]}"
    first = [s for s in r.view.get("stages_first", []) if s in r.stage_names]
    order = [s for n in first for s in r.stages if s["name"] == n]
    order += [s for s in r.stages if s["name"] not in first]
    open_set = set(first) if first else set()
    stage_html = "".join(_stage_section(r, s, pre, s["name"] in open_set) for s in order)
    dev = r.device or {}
    device = dev.get("name") or ("no GPU" + (f" ({dev['reason']})" if dev.get("reason") else ""))
    v = r.versions or {}
    others = [k for k in (r.kernels or []) if k != r.name]
    others_html = f' <span class="muted">(also in this cell: {_e(", ".join(others))})</span>' if others else ""
    return (
        f'<div class="tlxr" id="{pre}"><style>{_CSS}{token_css()}</style>'
        f'<div class="tlxr-h">Kernel <b>{_e(r.name)}</b>{others_html}</div>'
        f"<div>{_facts(r)}</div>"
        f"{_runs(r)}{_diagnostics(r, pre)}{_previous_section(r)}{_measurements_section(r)}"
        f"{_source_section(r, pre)}{stage_html}{_layouts_section(r, pre)}"
        f'<div class="tlxr-f">TLX Workbench {_e(v.get("workbench"))} · Triton {_e(v.get("triton"))}'
        f" · torch {_e(v.get('torch'))} · device: {_e(device)} · {_e(r.created)}"
        f" · key {_e(r.kernel.get('key', '')[:12])}"
        f" · report {_e(r.id[:12])}</div></div>"
    )
