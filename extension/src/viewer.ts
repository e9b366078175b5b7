/**
 * The Report viewer: a header of resource facts, then tabs: source and IR side by side
 * with linked lines, layouts, and (when measured) timeline and roofline.
 */
import { Widget } from '@lumino/widgets';
import { CodePane } from './editor';
import { Child, clear, el, fmtBytes, fmtNum } from './dom';
import { drawOwnership, drawShared } from './drawing';
import {
  ParsedAttr,
  dtypeBytes,
  ownership,
  parseAttr,
  parseGluon,
  sharedLayout,
  toLinearLayout
} from './layouts';
import { LineIndex, LinkOrigin, describeRanges, linkedLines } from './linemap';
import { renderRoofline, renderTimeline } from './plots';
import { Report, Stage } from './types';

export interface ViewerOptions {
  /** Shown as a header button when given (not in the docked copy). */
  onOpenBeside?: (viewer: ReportViewer) => void;
  docked?: boolean;
}

interface StageColumn {
  node: HTMLElement;
  picker: HTMLSelectElement;
  host: HTMLElement;
  pane: CodePane | null;
  stage: string;
  search: HTMLInputElement;
  count: HTMLElement;
}

type Tab = 'code' | 'layouts' | 'timeline' | 'roofline' | 'changes';

export class ReportViewer extends Widget {
  private report: Report | null = null;
  private options: ViewerOptions;
  private headerNode: HTMLElement;
  private tabsNode: HTMLElement;
  private bodyNode: HTMLElement;
  private codeNode: HTMLElement;
  private layoutsNode: HTMLElement;
  private timelineNode: HTMLElement;
  private rooflineNode: HTMLElement;
  private changesNode: HTMLElement;
  private statusNode: HTMLElement;
  private sourcePane: CodePane | null = null;
  private columns: StageColumn[] = [];
  private indexes: { [stage: string]: LineIndex } = {};
  private pinned: LinkOrigin | null = null;
  private hover: LinkOrigin | null = null;
  private frame = 0;
  private tab: Tab = 'code';
  private split = false;
  private rendered: { [k: string]: boolean } = {};

  constructor(options: ViewerOptions = {}) {
    super();
    this.options = options;
    this.addClass('tlx-viewer');
    if (options.docked) {
      this.addClass('tlx-docked');
    }
    this.headerNode = el('div', { class: 'tlx-header' });
    this.tabsNode = el('div', { class: 'tlx-tabs', role: 'tablist' });
    this.bodyNode = el('div', { class: 'tlx-body' });
    this.codeNode = el('div', { class: 'tlx-pane tlx-code-pane', 'data-tab': 'code' });
    this.layoutsNode = el('div', { class: 'tlx-pane tlx-layouts-pane', 'data-tab': 'layouts' });
    this.timelineNode = el('div', { class: 'tlx-pane tlx-timeline-pane', 'data-tab': 'timeline' });
    this.rooflineNode = el('div', { class: 'tlx-pane tlx-roofline-pane', 'data-tab': 'roofline' });
    this.changesNode = el('div', { class: 'tlx-pane tlx-changes-pane', 'data-tab': 'changes' });
    this.statusNode = el('div', { class: 'tlx-status' });
    this.bodyNode.append(this.codeNode, this.layoutsNode, this.timelineNode, this.rooflineNode, this.changesNode);
    this.node.append(this.headerNode, this.tabsNode, this.bodyNode);
  }

  get currentReport(): Report | null {
    return this.report;
  }

  /** Show a Report; keeps the chosen stages, tab and split when the kernel is re-run. */
  setReport(report: Report): void {
    const keepStages = this.columns.map(c => c.stage);
    this.report = report;
    this.indexes = {};
    for (const s of report.stages) {
      this.indexes[s.name] = new LineIndex(s.lineMap);
    }
    this.pinned = null;
    this.hover = null;
    this.rendered = {};
    this.node.dataset.kernel = report.kernelName;
    this.node.dataset.reportId = report.id;
    this.renderHeader();
    this.renderTabs();
    this.renderCode(keepStages);
    this.showTab(this.availableTabs().includes(this.tab) ? this.tab : 'code');
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this.destroyEditors();
    super.dispose();
  }

  private destroyEditors(): void {
    this.sourcePane?.destroy();
    this.sourcePane = null;
    for (const c of this.columns) {
      c.pane?.destroy();
    }
    this.columns = [];
  }

  // --- header --------------------------------------------------------------------------

  private renderHeader(): void {
    const r = this.report!;
    const m = r.metadata;
    clear(this.headerNode);
    const fact = (label: string, value: string, key: string) =>
      el(
        'span',
        { class: 'tlx-fact', 'data-fact': key },
        el('span', { class: 'tlx-fact-label', text: label }),
        el('span', { class: 'tlx-fact-value', text: value })
      );
    const spills = typeof m.spills === 'number' ? m.spills : null;
    const facts = el(
      'div',
      { class: 'tlx-facts' },
      fact('target', r.target || String(m.target ?? '\u2014'), 'target'),
      fact('warps', fmtNum(m.num_warps), 'warps'),
      fact('shared', fmtBytes(m.shared_bytes), 'shared'),
      fact('registers', fmtNum(m.registers), 'registers'),
      fact('spills', spills === null ? '\u2014' : `${spills} B`, 'spills')
    );
    if (spills) {
      facts.lastElementChild!.classList.add('tlx-bad');
    }
    const title = el(
      'div',
      { class: 'tlx-title' },
      el('span', { class: 'tlx-kernel-name', text: r.kernelName }),
      r.device && r.device.available === false
        ? el('span', {
            class: 'tlx-note',
            text: `no GPU: compiled only${r.device.reason ? ` (${String(r.device.reason)})` : ''}`
          })
        : null
    );
    const buttons = el('div', { class: 'tlx-actions' });
    if (this.options.onOpenBeside) {
      const b = el('button', {
        class: 'jp-Button tlx-open-beside',
        type: 'button',
        title: 'Open this viewer in the main area, beside the notebook; it follows this cell',
        text: 'Open beside'
      });
      b.addEventListener('click', () => this.options.onOpenBeside!(this));
      buttons.append(b);
    }
    this.headerNode.append(title, facts, buttons);
    if (r.diagnostics.length) {
      const list = el('ul', { class: 'tlx-diagnostics' });
      for (const d of r.diagnostics) {
        const li = el(
          'li',
          { class: `tlx-diag tlx-diag-${d.severity}` },
          el('span', { class: 'tlx-diag-sev', text: d.severity }),
          d.line !== null ? el('span', { class: 'tlx-diag-line', text: `line ${d.line}` }) : null,
          el('span', { class: 'tlx-diag-msg', text: d.message }),
          d.hint ? el('span', { class: 'tlx-diag-hint', text: d.hint }) : null
        );
        if (d.line !== null) {
          const line = d.line;
          li.addEventListener('click', () => {
            this.showTab('code');
            this.pin({ kind: 'source', line });
          });
        }
        list.append(li);
      }
      this.headerNode.append(list);
    }
  }

  // --- tabs ----------------------------------------------------------------------------

  private timelinePayload(): { [k: string]: unknown } | null {
    const r = this.report!;
    return r.timeline ?? (r.measurements.find(m => m.kind === 'timeline') as any) ?? null;
  }

  private rooflinePayload(): { [k: string]: unknown } | null {
    const r = this.report!;
    return (r.measurements.find(m => m.kind === 'roofline') as any) ?? r.roofline ?? null;
  }

  private availableTabs(): Tab[] {
    const tabs: Tab[] = ['code', 'layouts'];
    if (this.timelinePayload()) {
      tabs.push('timeline');
    }
    if (this.rooflinePayload()) {
      tabs.push('roofline');
    }
    if (this.previous()) {
      tabs.push('changes');
    }
    return tabs;
  }

  private renderTabs(): void {
    clear(this.tabsNode);
    const labels: { [k in Tab]: string } = {
      code: 'Source & IR',
      layouts: `Layouts (${this.report!.values.length || this.report!.declared.length})`,
      timeline: 'Timeline',
      roofline: 'Roofline',
      changes: 'Changes'
    };
    for (const t of this.availableTabs()) {
      const b = el('button', {
        class: 'tlx-tab',
        type: 'button',
        role: 'tab',
        'data-tab': t,
        text: labels[t]
      });
      b.addEventListener('click', () => this.showTab(t));
      this.tabsNode.append(b);
    }
    const bench = this.report!.measurements.find(m => m.kind === 'bench');
    if (bench) {
      const d: any = bench;
      const med = d.median_ms ?? d.data?.median_ms;
      if (typeof med === 'number') {
        this.tabsNode.append(el('span', { class: 'tlx-bench', text: `median ${med.toFixed(3)} ms` }));
      }
    }
  }

  showTab(t: Tab): void {
    this.tab = t;
    for (const b of Array.from(this.tabsNode.querySelectorAll('.tlx-tab'))) {
      b.classList.toggle('tlx-active', (b as HTMLElement).dataset.tab === t);
      b.setAttribute('aria-selected', String((b as HTMLElement).dataset.tab === t));
    }
    for (const p of [this.codeNode, this.layoutsNode, this.timelineNode, this.rooflineNode, this.changesNode]) {
      p.classList.toggle('tlx-hidden', p.dataset.tab !== t);
    }
    if (this.rendered[t]) {
      return;
    }
    this.rendered[t] = true;
    if (t === 'layouts') {
      this.renderLayouts();
    } else if (t === 'timeline') {
      void renderTimeline(this.timelineNode, this.timelinePayload()!).catch(e => this.plotError(this.timelineNode, e));
    } else if (t === 'changes') {
      this.renderChanges();
    } else if (t === 'roofline') {
      void renderRoofline(this.rooflineNode, this.rooflinePayload()!).catch(e => this.plotError(this.rooflineNode, e));
    }
  }

  private plotError(host: HTMLElement, e: unknown): void {
    host.append(el('div', { class: 'tlx-plot-status', text: `could not draw: ${String(e)}` }));
  }

  // --- changes against the previous run (--diff) ------------------------------------

  private previous(): { [k: string]: any } | null {
    const p = this.report!.raw.previous;
    return p && typeof p === 'object' ? (p as { [k: string]: any }) : null;
  }

  private renderChanges(): void {
    const p = this.previous()!;
    const host = this.changesNode;
    clear(host);
    host.append(
      el('div', {
        class: 'tlx-layout-note',
        text:
          `Compared with report ${String(p.id ?? '?')} (${String(p.created ?? '')}): ` +
          (p.same_key ? 'the compilation is identical.' : 'the compilation changed.')
      })
    );
    const meta = Array.isArray(p.metadata) ? p.metadata : [];
    if (meta.length) {
      const t = el('table', { class: 'tlx-table tlx-meta-changes' });
      t.append(el('thead', {}, el('tr', {}, ...['field', 'before', 'after'].map(h => el('th', { text: h })))));
      const body = el('tbody');
      for (const m of meta) {
        body.append(
          el(
            'tr',
            {},
            el('td', { text: String(m.field ?? '') }),
            el('td', { class: 'tlx-mono', text: JSON.stringify(m.before) }),
            el('td', { class: 'tlx-mono', text: JSON.stringify(m.after) })
          )
        );
      }
      t.append(body);
      host.append(t);
    }
    const diffView = el('pre', { class: 'tlx-diff' });
    const show = (title: string, text: string) => {
      clear(diffView);
      diffView.dataset.title = title;
      for (const line of String(text || '(no differences)').split('\n')) {
        const cls = line.startsWith('+') ? 'tlx-add' : line.startsWith('-') ? 'tlx-del' : line.startsWith('@@') ? 'tlx-hunk' : '';
        diffView.append(el('span', { class: cls, text: line }), '\n');
      }
    };
    const stages = Array.isArray(p.stages) ? p.stages : [];
    const t = el('table', { class: 'tlx-table tlx-stage-changes' });
    t.append(el('thead', {}, el('tr', {}, ...['stage', 'status', 'added', 'removed'].map(h => el('th', { text: h })))));
    const body = el('tbody');
    const src = el('tr', {}, el('td', { text: 'source' }), el('td', { text: p.source_diff ? 'changed' : 'same' }), el('td'), el('td'));
    src.addEventListener('click', () => show('source', String(p.source_diff ?? '')));
    body.append(src);
    for (const st of stages) {
      const tr = el(
        'tr',
        {},
        el('td', { class: 'tlx-mono', text: String(st.name ?? '') }),
        el('td', { text: String(st.status ?? '') + (st.truncated ? ' (diff truncated)' : '') }),
        el('td', { text: `+${st.added ?? 0}` }),
        el('td', { text: `\u2212${st.removed ?? 0}` })
      );
      tr.addEventListener('click', () => show(String(st.name), String(st.diff ?? '')));
      body.append(tr);
    }
    t.append(body);
    host.append(t, diffView);
    show('source', String(p.source_diff ?? ''));
  }

  // --- source & IR ---------------------------------------------------------------------

  private stageNames(): string[] {
    return this.report!.stages.map(s => s.name);
  }

  private defaultStages(): string[] {
    const names = this.stageNames().filter(n => n !== 'source');
    const first = this.report!.stagesFirst.filter(n => names.includes(n));
    const sel = this.report!.selectedStage;
    const pick: string[] = [];
    if (sel && names.includes(sel)) {
      pick.push(sel);
    }
    pick.push(...first);
    for (const pref of ['ptx', 'ttgir', 'sass']) {
      if (names.includes(pref)) {
        pick.push(pref);
      }
    }
    pick.push(...names);
    return Array.from(new Set(pick));
  }

  private renderCode(keep: string[]): void {
    this.destroyEditors();
    clear(this.codeNode);
    const r = this.report!;
    const toolbar = el('div', { class: 'tlx-code-toolbar' });
    const splitBox = el('input', { type: 'checkbox', class: 'tlx-split-toggle' }) as HTMLInputElement;
    splitBox.checked = this.split;
    splitBox.addEventListener('change', () => {
      this.split = splitBox.checked;
      this.codeNode.classList.toggle('tlx-split', this.split);
      this.columns[1]?.node.classList.toggle('tlx-hidden', !this.split);
      if (this.split && this.columns[1] && !this.columns[1].pane) {
        this.loadStage(this.columns[1], this.columns[1].stage);
      }
      this.refreshLinks();
    });
    toolbar.append(
      el('label', { class: 'tlx-split-label' }, splitBox, 'two stages side by side'),
      this.statusNode
    );
    const row = el('div', { class: 'tlx-code-row' });
    const srcCol = el(
      'div',
      { class: 'tlx-col tlx-source-col' },
      el('div', { class: 'tlx-col-head' }, el('span', { class: 'tlx-col-title', text: r.filename ? 'source' : 'source' }))
    );
    const srcHost = el('div', { class: 'tlx-editor tlx-source', 'data-stage': 'source' });
    srcCol.append(srcHost);
    row.append(srcCol);
    this.codeNode.append(toolbar, row);
    this.codeNode.classList.toggle('tlx-split', this.split);

    this.sourcePane = new CodePane(srcHost, {
      text: r.source,
      language: 'python',
      onHover: line => this.setHover(line === null ? null : { kind: 'source', line }),
      onClick: line => this.pin({ kind: 'source', line })
    });
    const mappedUser = new Set<number>();
    for (const idx of Object.values(this.indexes)) {
      idx.mappedUserLines().forEach(l => mappedUser.add(l));
    }
    this.sourcePane.setMapped(Array.from(mappedUser));
    if (r.kernelFirstLine && r.kernelFirstLine > 12) {
      // A kernel deep in a file: start at its def (a cell's kernel is visible from line 1).
      this.sourcePane.scrollToLine(r.kernelFirstLine);
    }

    const names = this.stageNames().filter(n => n !== 'source');
    if (!names.length) {
      row.append(el('div', { class: 'tlx-col tlx-empty', text: 'This Report has no compiler stages.' }));
      return;
    }
    const defaults = this.defaultStages();
    const chosen = [keep[0], keep[1]].map((k, i) =>
      k && names.includes(k) ? k : defaults[i] ?? defaults[0]
    );
    if (chosen[1] === chosen[0]) {
      chosen[1] = defaults.find(d => d !== chosen[0]) ?? chosen[0];
    }
    for (let i = 0; i < 2; i++) {
      const col = this.makeColumn(i, names);
      row.append(col.node);
      this.columns.push(col);
      col.stage = chosen[i];
      col.picker.value = chosen[i];
      if (i === 0 || this.split) {
        this.loadStage(col, chosen[i]);
      } else {
        col.node.classList.add('tlx-hidden');
      }
    }
    this.refreshLinks();
  }

  private makeColumn(i: number, names: string[]): StageColumn {
    const picker = el('select', {
      class: 'tlx-stage-picker',
      'data-column': i,
      title: 'Compiler stage'
    }) as HTMLSelectElement;
    for (const n of names) {
      picker.append(el('option', { value: n, text: n }));
    }
    const search = el('input', {
      class: 'tlx-search',
      type: 'search',
      placeholder: 'search',
      'aria-label': 'Search in this stage'
    }) as HTMLInputElement;
    const count = el('span', { class: 'tlx-search-count' });
    const prev = el('button', { class: 'tlx-search-prev', type: 'button', title: 'Previous match', text: '\u2191' });
    const next = el('button', { class: 'tlx-search-next', type: 'button', title: 'Next match', text: '\u2193' });
    const host = el('div', { class: 'tlx-editor tlx-stage' });
    const node = el(
      'div',
      { class: 'tlx-col tlx-stage-col', 'data-column': i },
      el('div', { class: 'tlx-col-head' }, picker, search, prev, next, count),
      host
    );
    const col: StageColumn = { node, picker, host, pane: null, stage: names[0], search, count };
    picker.addEventListener('change', () => {
      this.loadStage(col, picker.value);
      this.refreshLinks();
    });
    const updateCount = () => {
      const p = col.pane;
      count.textContent = !p || !search.value ? '' : p.matchCount ? `${p.currentMatch}/${p.matchCount}` : 'no match';
    };
    search.addEventListener('input', () => {
      col.pane?.search(search.value);
      updateCount();
    });
    search.addEventListener('keydown', ev => {
      if (ev.key === 'Enter') {
        col.pane?.step(ev.shiftKey ? -1 : 1);
        updateCount();
        ev.preventDefault();
      }
      ev.stopPropagation(); // keep notebook shortcuts out of the search box
    });
    prev.addEventListener('click', () => {
      col.pane?.step(-1);
      updateCount();
    });
    next.addEventListener('click', () => {
      col.pane?.step(1);
      updateCount();
    });
    return col;
  }

  private stage(name: string): Stage | undefined {
    return this.report?.stages.find(s => s.name === name);
  }

  private loadStage(col: StageColumn, name: string): void {
    const st = this.stage(name);
    col.pane?.destroy();
    clear(col.host);
    col.stage = name;
    col.host.dataset.stage = name;
    col.node.dataset.stage = name;
    if (!st) {
      col.pane = null;
      return;
    }
    col.pane = new CodePane(col.host, {
      text: st.text,
      language: st.language,
      onHover: line => this.setHover(line === null ? null : { kind: 'stage', stage: name, line }),
      onClick: line => this.pin({ kind: 'stage', stage: name, line })
    });
    col.pane.setMapped(Array.from(this.indexes[name]?.reverse.keys() ?? []));
    if (col.search.value) {
      col.pane.search(col.search.value);
    }
  }

  private visibleColumns(): StageColumn[] {
    return this.columns.filter((c, i) => c.pane && (i === 0 || this.split));
  }

  private setHover(o: LinkOrigin | null): void {
    this.hover = o;
    if (!this.frame) {
      this.frame = requestAnimationFrame(() => {
        this.frame = 0;
        this.refreshLinks();
      });
    }
  }

  /** Pin a line (a click): it stays highlighted when the pointer leaves. Click again to unpin. */
  pin(o: LinkOrigin): void {
    const same =
      this.pinned &&
      this.pinned.kind === o.kind &&
      this.pinned.line === o.line &&
      (o.kind === 'source' || (this.pinned as any).stage === (o as any).stage);
    this.pinned = same ? null : o;
    this.hover = null;
    this.refreshLinks(true);
  }

  private refreshLinks(scrollAll = false): void {
    const origin = this.hover ?? this.pinned;
    const cols = this.visibleColumns();
    const names = cols.map(c => c.stage);
    const res = origin ? linkedLines(this.indexes, origin, names) : { source: [], stages: {} as { [k: string]: number[] } };
    const fromSource = origin?.kind === 'source';
    this.sourcePane?.setLinked(res.source, !!origin && (!fromSource || scrollAll) && !fromSource);
    this.node.dataset.linkedSource = res.source.join(',');
    for (const c of cols) {
      const lines = res.stages[c.stage] ?? [];
      const isOrigin = origin?.kind === 'stage' && origin.stage === c.stage;
      c.pane!.setLinked(lines, !!origin && !isOrigin);
      c.host.dataset.linked = lines.join(',');
    }
    if (!origin) {
      this.statusNode.textContent = 'Hover or click a line to see where it went.';
      return;
    }
    const where =
      origin.kind === 'source' ? `source line ${origin.line}` : `${origin.stage} line ${origin.line}`;
    const parts: string[] = [];
    if (origin.kind === 'stage') {
      parts.push(res.source.length ? `source ${describeRanges(res.source)}` : 'no source line');
    }
    for (const c of cols) {
      if (origin.kind === 'stage' && origin.stage === c.stage) {
        continue;
      }
      const ls = res.stages[c.stage] ?? [];
      parts.push(`${c.stage} ${ls.length ? describeRanges(ls) : '\u2014'}`);
    }
    this.statusNode.textContent = `${this.pinned && !this.hover ? 'pinned ' : ''}${where} \u2192 ${parts.join('; ')}`;
  }

  // --- layouts -------------------------------------------------------------------------

  private resolveAlias = (alias: string): string | null => {
    const d = this.report?.declared.find(x => x.alias === alias || x.alias === `#${alias.replace(/^#/, '')}`);
    return d ? d.attr : null;
  };

  private attrFor(ttgir: string, gluon: string): ParsedAttr | null {
    let text = ttgir.trim();
    if (text && !text.includes('<')) {
      text = this.resolveAlias(text) ?? '';
    }
    return (text ? parseAttr(text) : null) ?? (gluon ? parseGluon(gluon) : null);
  }

  private renderLayouts(): void {
    const r = this.report!;
    clear(this.layoutsNode);
    const drawing = el('div', { class: 'tlx-layout-drawing' });
    const colorBy = el('select', { class: 'tlx-color-by' }) as HTMLSelectElement;
    for (const c of ['warp', 'thread', 'register']) {
      colorBy.append(el('option', { value: c, text: `colour by ${c}` }));
    }
    let redraw: (() => void) | null = null;
    colorBy.addEventListener('change', () => redraw?.());
    const select = (row: HTMLElement, attr: ParsedAttr | null, shape: number[], dtype: string, label: string) => {
      for (const tr of Array.from(this.layoutsNode.querySelectorAll('tr.tlx-selected'))) {
        tr.classList.remove('tlx-selected');
      }
      row.classList.add('tlx-selected');
      redraw = () => this.drawLayout(drawing, attr, shape, dtype, label, colorBy.value);
      redraw();
      colorBy.scrollIntoView({ block: 'start', behavior: 'auto' });
    };
    const cell = (t: Child, cls = '') => el('td', { class: cls }, typeof t === 'string' ? t : t);
    if (r.values.length) {
      const table = el('table', { class: 'tlx-table tlx-values' });
      table.append(
        el('thead', {}, el('tr', {}, ...['value', 'line', 'kind', 'shape', 'dtype', 'layout', 'why'].map(h => el('th', { text: h }))))
      );
      const body = el('tbody');
      r.values.forEach((v, i) => {
        const tr = el(
          'tr',
          { 'data-index': i, tabindex: 0 },
          cell(v.name, 'tlx-mono'),
          cell(v.line === null ? '' : String(v.line)),
          cell(v.kind),
          cell(v.shape.join('\u00d7'), 'tlx-mono'),
          cell(v.dtype, 'tlx-mono'),
          cell(v.layout || v.ttgir, 'tlx-mono'),
          cell(v.reason)
        );
        tr.title = v.ttgir;
        tr.addEventListener('click', () =>
          select(tr, this.attrFor(v.ttgir, v.layout), v.shape, v.dtype, `${v.name}: ${v.layout || v.ttgir}`)
        );
        body.append(tr);
      });
      table.append(body);
      this.layoutsNode.append(el('h4', { text: 'Values and buffers' }), table);
    }
    if (r.declared.length) {
      const table = el('table', { class: 'tlx-table tlx-declared' });
      table.append(el('thead', {}, el('tr', {}, ...['alias', 'kind', 'attribute', 'uses'].map(h => el('th', { text: h })))));
      const body = el('tbody');
      for (const d of r.declared) {
        const tr = el(
          'tr',
          { tabindex: 0 },
          cell(d.alias, 'tlx-mono'),
          cell(d.kind),
          cell(d.attr, 'tlx-mono tlx-attr'),
          cell(String(d.uses.length))
        );
        const use = d.uses[0] ?? {};
        const shape = Array.isArray(use.shape) ? (use.shape as number[]) : [];
        tr.addEventListener('click', () =>
          select(tr, parseAttr(d.attr), shape, String(use.dtype ?? 'f16'), `${d.alias}`)
        );
        body.append(tr);
      }
      table.append(body);
      this.layoutsNode.append(el('h4', { text: 'Layouts declared in TTGIR' }), table);
    }
    if (!r.values.length && !r.declared.length) {
      this.layoutsNode.append(el('div', { class: 'tlx-empty', text: 'No layouts in this Report.' }));
      return;
    }
    this.layoutsNode.append(el('div', { class: 'tlx-layout-tools' }, colorBy), drawing);
    drawing.append(el('div', { class: 'tlx-layout-note', text: 'Click a row to draw its layout.' }));
  }

  private drawLayout(
    host: HTMLElement,
    attr: ParsedAttr | null,
    shape: number[],
    dtype: string,
    label: string,
    colorBy: string
  ): void {
    clear(host);
    host.dataset.layout = attr?.kind ?? '';
    try {
      if (!attr) {
        throw new Error('this layout could not be parsed');
      }
      if (!shape.length) {
        throw new Error('no shape is known for this layout');
      }
      if (attr.kind.endsWith('shared')) {
        drawShared(host, sharedLayout(attr, dtypeBytes(dtype)), shape, label);
      } else {
        const ll = toLinearLayout(attr, shape, this.resolveAlias);
        const map = ownership(ll);
        const title = el('div', { class: 'tlx-layout-title', text: `${label} \u2014 ${shape.join('\u00d7')} ${dtype}` });
        const inner = el('div');
        host.append(title, inner);
        drawOwnership(inner, map, colorBy);
      }
    } catch (e) {
      host.append(el('div', { class: 'tlx-layout-note', text: `${label}: ${(e as Error).message}` }));
    }
  }
}
