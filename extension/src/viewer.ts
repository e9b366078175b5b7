/**
 * The Report viewer: a header of resource facts, then tabs: source and IR side by side
 * with linked lines, layouts, and (when measured) timeline and roofline.
 */
import { Widget } from '@lumino/widgets';
import { clear, el } from './dom';
import { CodePane, Flag } from './editor';
import { renderHeader } from './header';
import { LineIndex, LinkOrigin, LinkResult, describeRanges, linkedLines, uniqueSorted } from './linemap';
import { addResizer, codeBasis } from './resizer';
import { provenance } from './summary';
import { heatOf, sassHeat } from './stalls';
import { TABS, TabContext, stallsPayload } from './tabs';
import { Report, Stage, isBench } from './types';

export interface ViewerOptions {
  /** Shown as a header button when given (not in the docked copy). */
  onOpenBeside?: (viewer: ReportViewer) => void;
  docked?: boolean;
  /** The Search tab's row button: show that candidate's Report (the kernel holds the search). */
  onOpenCandidate?: (searchId: string, index: number) => Promise<void>;
}

interface StageColumn {
  node: HTMLElement;
  /** Says when only the head of the stage is stored. */
  note: HTMLElement;
  picker: HTMLSelectElement;
  host: HTMLElement;
  pane: CodePane | null;
  stage: string;
  search: HTMLInputElement;
  count: HTMLElement;
  /** "2/20": which of the linked ranges is in view (stepped with the buttons beside it). */
  ranges: HTMLElement;
}

/** 'code' (Source & IR, the viewer's own) or the id of a tab of the registry (tabs.ts). */
type Tab = string;

export class ReportViewer extends Widget {
  private report: Report | null = null;
  private options: ViewerOptions;
  private headerNode: HTMLElement;
  private tabsNode: HTMLElement;
  private bodyNode: HTMLElement;
  private codeNode: HTMLElement;
  /** One pane per tab of the registry, by id. */
  private tabNodes: { [id: string]: HTMLElement } = {};
  private statusNode: HTMLElement;
  private sourcePane: CodePane | null = null;
  private columns: StageColumn[] = [];
  private indexes: { [stage: string]: LineIndex } = {};
  private pinned: LinkOrigin | null = null;
  /** Source lines pinned together (a click in the Orchestration tab); the first is `pinned`. */
  private pinnedLines: number[] = [];
  private hover: LinkOrigin | null = null;
  private frame = 0;
  private tab: Tab = 'code';
  private split = false;
  private showNoise = false; // MLIR locations and SASS file comments: folded until asked for
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
    for (const t of TABS) {
      this.tabNodes[t.id] = el('div', { class: `tlx-pane ${t.paneClass}`, 'data-tab': t.id });
    }
    this.statusNode = el('div', { class: 'tlx-status' });
    this.bodyNode.append(this.codeNode, ...TABS.map(t => this.tabNodes[t.id]));
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
    this.pinnedLines = [];
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
    renderHeader(this.headerNode, this.report!, {
      onOpenBeside: this.options.onOpenBeside ? () => this.options.onOpenBeside!(this) : undefined,
      onLine: line => {
        this.showTab('code');
        this.pin({ kind: 'source', line }, true);
      }
    });
  }

  // --- tabs ----------------------------------------------------------------------------

  private availableTabs(): Tab[] {
    return ['code', ...TABS.filter(t => t.available(this.report!)).map(t => t.id)];
  }

  private renderTabs(): void {
    clear(this.tabsNode);
    const labels: { [id: string]: string } = { code: 'Source & IR' };
    for (const t of TABS) {
      labels[t.id] = t.label(this.report!);
    }
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
    const bench = this.report!.measurements.filter(isBench).find(m => m.status === 'ok' && m.timing);
    const med = bench?.timing?.median_ms;
    if (typeof med === 'number') {
      const tf = bench?.timing?.tflops;
      const text = `median ${med.toPrecision(4)} ms${typeof tf === 'number' ? ` · ${tf.toFixed(1)} TFLOP/s` : ''}`;
      this.tabsNode.append(el('span', { class: 'tlx-bench', text, title: provenance(bench!) }));
    }
  }

  showTab(t: Tab): void {
    this.tab = t;
    for (const b of Array.from(this.tabsNode.querySelectorAll('.tlx-tab'))) {
      b.classList.toggle('tlx-active', (b as HTMLElement).dataset.tab === t);
      b.setAttribute('aria-selected', String((b as HTMLElement).dataset.tab === t));
    }
    for (const p of [this.codeNode, ...Object.values(this.tabNodes)]) {
      p.classList.toggle('tlx-hidden', p.dataset.tab !== t);
    }
    if (this.rendered[t]) {
      return;
    }
    this.rendered[t] = true;
    const spec = TABS.find(x => x.id === t);
    if (spec) {
      const host = this.tabNodes[t];
      void Promise.resolve()
        .then(() => spec.render(host, this.tabContext()))
        .catch(e => this.plotError(host, e));
    }
  }

  private tabContext(): TabContext {
    return {
      report: this.report!,
      showLine: line => {
        this.showTab('code');
        this.pin({ kind: 'source', line }, true);
      },
      showStageLine: (stage, line) => this.showStageLine(stage, line),
      pinLines: lines => this.pinLines(lines),
      showCode: () => this.showTab('code'),
      onOpenCandidate: this.options.onOpenCandidate
    };
  }

  private plotError(host: HTMLElement, e: unknown): void {
    host.append(el('div', { class: 'tlx-plot-status', text: `could not draw: ${String(e)}` }));
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
    // TTGIR (layouts, async tasks, barriers) and PTX beside it; then SASS
    for (const pref of ['ttgir', 'ptx', 'sass']) {
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
      this.refreshLinks(true);
    });
    const twoStages = r.stages.filter(st => st.name !== 'source').length >= 2;
    splitBox.disabled = !twoStages;
    if (!twoStages) {
      this.split = false;
      splitBox.checked = false;
    }
    const noiseBox = el('input', { type: 'checkbox', class: 'tlx-noise-toggle' }) as HTMLInputElement;
    noiseBox.checked = this.showNoise;
    noiseBox.addEventListener('change', () => {
      this.showNoise = noiseBox.checked;
      for (const c of this.columns) {
        c.pane?.setNoiseHidden(!this.showNoise);
      }
    });
    toolbar.append(
      el('label', { class: 'tlx-split-label' }, splitBox, 'two stages side by side'),
      el(
        'label',
        { class: 'tlx-split-label', title: "MLIR's loc(...) suffixes and #loc lines, SASS's //## File comments" },
        noiseBox,
        'locations'
      ),
      this.statusNode
    );
    const row = el('div', { class: 'tlx-code-row' });
    const srcCol = el(
      'div',
      { class: 'tlx-col tlx-source-col' },
      el('div', { class: 'tlx-col-head' }, el('span', {
        class: 'tlx-col-title',
        text: r.definedElsewhere ? 'source: the cell that defined the kernel' : 'source',
        title: r.definedElsewhere
          ? `${r.filename}: this cell launched a kernel that an earlier cell defined; its lines are shown`
          : r.filename
      }))
    );
    const srcHost = el('div', { class: 'tlx-editor tlx-source', 'data-stage': 'source' });
    srcCol.append(srcHost);
    row.append(srcCol);
    // the source as wide as its longest line where the row has room (half of it; a third beside two stages)
    const basis = () => codeBasis(r.source, this.split ? 0.34 : 0.5);
    srcCol.style.flex = basis();
    splitBox.addEventListener('change', () => {
      if (!row.dataset.resized) {
        srcCol.style.flex = basis();
      }
    });
    this.codeNode.append(toolbar, row);
    this.codeNode.classList.toggle('tlx-split', this.split);

    // findings and diagnostics at a source line: marked at its left edge, the message on hover
    const flags: Flag[] = [
      ...r.findings.map(f => ({ line: f.line, severity: f.severity, message: `[${f.rule}] ${f.message}` })),
      ...r.diagnostics.filter(d => d.source !== 'run').map(d => ({ line: d.line, severity: d.severity, message: d.message }))
    ].flatMap(f => (typeof f.line === 'number' ? [{ ...f, line: f.line }] : []));
    if (r.definedElsewhere && /^%%?tlx\b/.test(r.source)) {
      flags.push({ line: 1, severity: 'info', message: "the defining cell's own %%tlx line: this Report is of another cell's launch" });
    }
    srcHost.dataset.flagged = Array.from(new Set(flags.map(f => f.line))).join(',');
    this.sourcePane = new CodePane(srcHost, {
      text: r.source,
      language: 'python',
      flags,
      heat: stallsPayload(r) ? heatOf(stallsPayload(r)!) : [],
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
    addResizer(row, srcCol);
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
    const note = el('div', { class: 'tlx-stage-note tlx-hidden' });
    const ranges = el('span', { class: 'tlx-linked-count', title: 'linked ranges: the one in view / all' });
    const back = el('button', { class: 'tlx-linked-prev', type: 'button', title: 'Previous linked range', text: '\u2039' });
    const fwd = el('button', { class: 'tlx-linked-next', type: 'button', title: 'Next linked range', text: '\u203a' });
    const node = el(
      'div',
      { class: 'tlx-col tlx-stage-col', 'data-column': i },
      el('div', { class: 'tlx-col-head' }, picker, search, prev, next, count, back, ranges, fwd),
      note,
      host
    );
    const col: StageColumn = { node, note, picker, host, pane: null, stage: names[0], search, count, ranges };
    for (const [button, dir] of [[back, -1], [fwd, 1]] as const) {
      button.addEventListener('click', () => {
        col.pane?.stepLinked(dir);
        this.showRanges(col);
      });
    }
    picker.addEventListener('change', () => this.pickStage(col, picker.value));
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

  /** Show `name` in column `col`; the other column never shows the same stage (they swap). */
  private pickStage(col: StageColumn, name: string): void {
    const previous = col.stage;
    const other = this.columns.find(c => c !== col);
    this.loadStage(col, name);
    if (other && other.stage === name && previous !== name) {
      other.picker.value = previous;
      if (other.pane) {
        this.loadStage(other, previous);
      } else {
        other.stage = previous;
      }
    }
    this.refreshLinks(true);
  }

  /** Show ``stage`` in the first column (unless a column shows it) and pin its ``line``. */
  private showStageLine(name: string, line: number): void {
    this.showTab('code');
    const col = this.columns.find(c => c.stage === name) ?? this.columns[0];
    if (col && col.stage !== name) {
      col.picker.value = name;
      this.pickStage(col, name);
    }
    this.pin({ kind: 'stage', stage: name, line });
    col?.pane?.revealLine(line); // asked for from another tab: the line itself comes into view, not only its links
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
    col.note.textContent = st.fullLineCount
      ? `The first ${st.lineCount} of ${st.fullLineCount} lines are stored in the notebook (its size budget); ` +
        `all of them: report.stage('${name}') in the kernel's session (%%tlx -o report).`
      : '';
    col.note.classList.toggle('tlx-hidden', !st.fullLineCount);
    col.pane = new CodePane(col.host, {
      text: st.text,
      language: st.language,
      hideNoise: !this.showNoise,
      heat: name === 'sass' && stallsPayload(this.report!) ? sassHeat(stallsPayload(this.report!)!) : [],
      onHover: line => this.setHover(line === null ? null : { kind: 'stage', stage: name, line }),
      onClick: line => this.pin({ kind: 'stage', stage: name, line })
    });
    const mapped = Array.from(this.indexes[name]?.reverse.keys() ?? []);
    col.pane.setMapped(mapped);
    if (mapped.length) {
      // start where the kernel's code begins, not at a page of #loc / .file headers
      col.pane.scrollToLine(Math.max(1, Math.min(...mapped) - 3));
    }
    if (col.search.value) {
      col.pane.search(col.search.value);
    }
  }

  private visibleColumns(): StageColumn[] {
    return this.columns.filter((c, i) => c.pane && (i === 0 || this.split));
  }

  /** Hovering highlights the linked lines where they are in view; it never scrolls a pane (a pane
   * that moved while the pointer crossed lines on its way to a click would take the wrong line). */
  private setHover(o: LinkOrigin | null): void {
    this.hover = o;
    if (!this.frame) {
      this.frame = requestAnimationFrame(() => {
        this.frame = 0;
        this.refreshLinks(false);
      });
    }
  }

  /** Pin a line (a click): it stays highlighted when the pointer leaves. Click again to unpin.
   * `reveal`: also scroll the source pane to it (a click on a finding, not on the source itself). */
  pin(o: LinkOrigin, reveal = false): void {
    const same =
      !reveal &&
      this.pinned &&
      this.pinned.kind === o.kind &&
      this.pinned.line === o.line &&
      (o.kind === 'source' || (this.pinned as any).stage === (o as any).stage);
    this.pinned = same ? null : o;
    this.pinnedLines = [];
    this.hover = null;
    this.refreshLinks(true);
    if (reveal && o.kind === 'source') {
      this.sourcePane?.revealLine(o.line);
    }
  }

  /** Pin several source lines together (an op, barrier or edge of the Orchestration tab) and scroll them into
   * view in the source and stage panes; returns what they link to, as the status line says it. */
  pinLines(lines: number[]): string {
    this.pinned = lines.length ? { kind: 'source', line: lines[0] } : null;
    this.pinnedLines = lines.length > 1 ? uniqueSorted(lines) : [];
    this.hover = null;
    this.refreshLinks(true);
    if (lines.length) {
      this.sourcePane?.revealLine(lines[0]);
    }
    return (this.statusNode.textContent ?? '').replace(/^pinned /, '');
  }

  private links(origin: LinkOrigin, names: string[]): LinkResult {
    if (origin !== this.pinned || this.pinnedLines.length < 2) {
      return linkedLines(this.indexes, origin, names);
    }
    const all = this.pinnedLines.map(line => linkedLines(this.indexes, { kind: 'source', line }, names));
    const stages: { [k: string]: number[] } = {};
    for (const n of names) {
      stages[n] = uniqueSorted(all.flatMap(r => r.stages[n] ?? []));
    }
    return { source: uniqueSorted(all.flatMap(r => r.source)), stages };
  }

  /** Highlight the lines linked to the hovered or pinned line; `scroll`: bring them into view in
   * the other panes (on a click; the pane clicked in never scrolls under the pointer). */
  private showRanges(c: StageColumn): void {
    const r = c.pane?.linkedRanges ?? { count: 0, current: 0 };
    c.ranges.textContent = r.count > 1 ? `${r.current || '\u2013'}/${r.count}` : '';
    c.node.classList.toggle('tlx-has-ranges', r.count > 1);
  }

  private refreshLinks(scroll = false): void {
    const origin = this.hover ?? this.pinned;
    const cols = this.visibleColumns();
    const names = cols.map(c => c.stage);
    const res = origin ? this.links(origin, names) : { source: [], stages: {} as { [k: string]: number[] } };
    const fromSource = origin?.kind === 'source';
    this.sourcePane?.setLinked(res.source, scroll && !!origin && !fromSource);
    this.node.dataset.linkedSource = res.source.join(',');
    for (const c of cols) {
      const lines = res.stages[c.stage] ?? [];
      const isOrigin = origin?.kind === 'stage' && origin.stage === c.stage;
      c.pane!.setLinked(lines, scroll && !!origin && !isOrigin);
      c.host.dataset.linked = lines.join(',');
      this.showRanges(c);
    }
    if (!origin) {
      this.statusNode.textContent = 'Hover or click a line to see where it went.';
      return;
    }
    const several = origin === this.pinned && this.pinnedLines.length > 1;
    const where = several
      ? `source lines ${describeRanges(this.pinnedLines)}`
      : origin.kind === 'source' ? `source line ${origin.line}` : `${origin.stage} line ${origin.line}`;
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
}
