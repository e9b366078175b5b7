/**
 * The Orchestration tab: a TLX kernel's tasks, buffer rings and barriers as a graph (SVG built with DOM
 * calls, every string set as text), drawn from the Report's `orchestration` payload; a step control that
 * plays the simulated schedule round by round; findings on the graph (a wait that never completes in red,
 * a read too early in orange), a hung launch's live snapshot (the waits its warps were found in, blue) and a
 * stress run's telling delays (purple); with a timeline, each wait edge's measured mean / p95 wait and count.
 * A click on an op, a barrier, a ring, an edge or a lane pins its lines in the source and the stages
 * (the viewer's line links) and says what it is.
 */
import { clear, el } from './dom';
import {
  EdgeLayout,
  GEOMETRY,
  GraphLayout,
  NodeLayout,
  OpLayout,
  Orchestration,
  OrchestrationStep,
  RingLayout,
  layoutGraph,
  linesOf,
  markColors,
  markLabel,
  measuredLabel,
  opTitle,
  ringPairing,
  roundView,
  stepText,
  taskTitle
} from './orchestration_layout';

export interface OrchestrationOptions {
  /** Pin these user lines in the source and stage panes; returns what they link to (for the detail panel). */
  pinLines: (lines: number[]) => string;
  /** Show the Source & IR tab (the pinned lines are there). */
  showCode: () => void;
  /** The user's source (lines are 1-based). */
  source: string;
}

type Item = { kind: 'op' | 'barrier' | 'buffer' | 'edge' | 'task'; id: number };

const SVG = 'http://www.w3.org/2000/svg';

function svg(tag: string, attrs: { [k: string]: string | number | undefined } = {}, ...kids: (Node | null)[]): SVGElement {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v !== undefined) {
      e.setAttribute(k, String(v));
    }
  }
  kids.forEach(k => k && e.appendChild(k));
  return e;
}

function text(x: number, y: number, s: string, cls: string, anchor = 'start'): SVGElement {
  const t = svg('text', { x, y, class: cls, 'text-anchor': anchor });
  t.textContent = s;
  return t;
}

/** Draw the tab into `host`; returns the time it took (ms), also set as host's data-render-ms. */
export function renderOrchestration(host: HTMLElement, p: Orchestration, opts: OrchestrationOptions): number {
  const t0 = performance.now();
  clear(host);
  if (p.status !== 'ok') {
    host.append(el('div', { class: 'tlx-plot-status', text: p.reason ?? 'the orchestration could not be read' }));
    return 0;
  }
  const view = new OrchestrationView(host, p, opts);
  view.render();
  const ms = performance.now() - t0;
  host.dataset.renderMs = ms.toFixed(1);
  return ms;
}

/**
 * What the step control walks: the ring slots' changes in the run's order, then each round past the last of them
 * (where the run went on without a ring changing: a wait that blocked); a kernel without steps (no paired ring, an
 * older Report) walks its rounds.
 */
function walk(p: Orchestration): { round: number; step?: OrchestrationStep }[] {
  const steps = p.steps ?? [];
  const last = steps.length ? Math.max(...steps.map(s => s.round)) : -1;
  return [...steps.map(s => ({ round: s.round, step: s })), ...p.rounds.map((_, r) => ({ round: r })).filter(x => x.round > last)];
}

/** The smallest scale the first view takes: the graph's 11 px labels stay about 9 px. */
const READABLE = 0.8;

class OrchestrationView {
  private layout: GraphLayout;
  private round = 0;
  /** What the step control walks (see walk()), and the position shown. */
  private positions: { round: number; step?: OrchestrationStep }[];
  private at = 0;
  private timer = 0;
  private svgNode: SVGElement | null = null;
  private scrollNode: HTMLElement | null = null;
  private zoomLabel = el('span', { class: 'tlx-orch-zoom-label' });
  private roundLabel: HTMLElement;
  private summary: HTMLElement;
  private detail: HTMLElement;

  constructor(private host: HTMLElement, private p: Orchestration, private opts: OrchestrationOptions) {
    this.layout = layoutGraph(p);
    this.positions = walk(p);
    this.roundLabel = el('span', { class: 'tlx-orch-round' });
    this.summary = el('ul', { class: 'tlx-orch-summary' });
    this.detail = el('div', { class: 'tlx-orch-detail', text: 'Click an op, a barrier, a ring or an arrow.' });
  }

  render(): void {
    const p = this.p;
    this.host.append(this.toolbar(), this.notes());
    const scroll = el('div', { class: 'tlx-orch-scroll' });
    this.scrollNode = scroll;
    this.svgNode = this.drawGraph();
    scroll.append(this.svgNode);
    const side = el('div', { class: 'tlx-orch-side' }, this.detail, this.summary, this.findingsList());
    this.host.append(el('div', { class: 'tlx-orch-main' }, scroll, side));
    this.labelBackgrounds();
    this.zoom('auto');
    // the pane resized (the side panel, the notebook's width): the chosen fit follows it
    new ResizeObserver(() => this.fitting && this.zoom(this.fitting)).observe(scroll);
    this.host.dataset.rounds = String(p.rounds.length);
    this.host.dataset.steps = String(this.positions.length);
    this.go(0);
  }

  /** Show position i of the step control. */
  private go(i: number): void {
    this.at = Math.max(0, Math.min(i, this.positions.length - 1));
    this.host.dataset.step = String(this.at);
    const pos = this.positions[this.at];
    this.setRound(pos?.round ?? 0, pos?.step);
  }

  /** A plate behind each edge label, so the arrows under it do not cross its text (sizes known once drawn). */
  private labelBackgrounds(): void {
    const left = GEOMETRY.margin + GEOMETRY.head + 2; // a label wider than its op stays off the lane titles
    this.svgNode!.querySelectorAll<SVGGraphicsElement>('.tlx-orch-edge-label').forEach(g => {
      const b = g.getBBox();
      if (b.x < left) {
        g.setAttribute('transform', `translate(${Math.ceil(left - b.x)}, 0)`);
      }
      if (b.width > 0) {
        g.insertBefore(svg('rect', { x: b.x - 2, y: b.y, width: b.width + 4, height: b.height, rx: 2,
          class: 'tlx-orch-label-bg' }), g.firstChild);
      }
    });
  }

  // --- controls --------------------------------------------------------------------------------

  private toolbar(): HTMLElement {
    const n = this.p.rounds.length;
    const button = (cls: string, label: string, title: string, f: () => void) => {
      const b = el('button', { class: `tlx-orch-step ${cls}`, type: 'button', text: label, title });
      b.addEventListener('click', f);
      return b;
    };
    const bar = el(
      'div',
      { class: 'tlx-orch-toolbar' },
      button('tlx-orch-prev', '\u25c0', 'previous step', () => this.go(this.at - 1)),
      this.roundLabel,
      button('tlx-orch-next', '\u25b6', 'next step', () => this.go(this.at + 1)),
      button('tlx-orch-play', 'play', 'play the steps', () => this.play()),
      el('span', { class: 'tlx-orch-zoom' },
        button('tlx-orch-zoom-out', '\u2212', 'zoom out', () => this.zoom(this.scale / 1.25)),
        this.zoomLabel,
        button('tlx-orch-zoom-in', '+', 'zoom in', () => this.zoom(this.scale * 1.25)),
        button('tlx-orch-zoom-fit', 'fit', 'fit the graph to the width of the pane', () => this.zoom('fit')),
        button('tlx-orch-zoom-one', '1:1', 'actual size (scroll to see all of a wide graph)', () => this.zoom(1))),
      el('span', { class: 'tlx-orch-legend' },
        el('span', { class: 'tlx-orch-key tlx-orch-key-red', text: 'never completes' }),
        el('span', { class: 'tlx-orch-key tlx-orch-key-orange', text: 'read too early' }),
        (this.p.marks ?? []).some(m => m.color === 'live')
          ? el('span', { class: 'tlx-orch-key tlx-orch-key-live', text: 'warps found waiting (live snapshot)' })
          : null,
        (this.p.marks ?? []).some(m => m.color === 'delay')
          ? el('span', { class: 'tlx-orch-key tlx-orch-key-delay', text: 'delay that went with failures (stress)' })
          : null,
        el('span', { class: 'tlx-orch-key tlx-orch-key-filling', text: 'slot filling' }),
        el('span', { class: 'tlx-orch-key tlx-orch-key-full', text: 'slot full' }),
        el('span', { class: 'tlx-orch-key tlx-orch-key-released', text: 'slot released (free again)' }))
    );
    if (!n) {
      bar.querySelectorAll('.tlx-orch-prev, .tlx-orch-next, .tlx-orch-play').forEach(b => ((b as HTMLButtonElement).disabled = true));
    }
    return bar;
  }

  private notes(): HTMLElement {
    const p = this.p;
    const sim = p.simulation ?? {};
    const parts: string[] = [];
    const vals = Object.keys(sim.values ?? {}).length;
    parts.push(
      `Simulated program 0 ${vals ? `with the launch's ${vals} scalar values` : 'without launch values'}` +
        (sim.grid ? ` (grid ${sim.grid.join('\u00d7')})` : '') +
        `: ${p.rounds.length} round${p.rounds.length === 1 ? '' : 's'} shown` +
        (sim.truncated ? ', the run cut short by its time budget' : '') +
        (p.blocked.length ? `, ended with ${p.blocked.length} wait${p.blocked.length > 1 ? 's' : ''} blocked` : '')
    );
    for (const l of sim.lost ?? []) {
      parts.push(`${p.tasks[l.task]?.name ?? `task ${l.task}`} not followed past line ${l.line ?? '?'}: ${l.why}`);
    }
    const m = p.measured;
    if (m) {
      parts.push(
        `Wait times: ${m.measured_by ?? 'the timeline'} on ${m.device ?? 'the GPU'}` +
          `${m.when ? `, ${m.when}` : ''}${m.ctas_recorded ? `, ${m.ctas_recorded} CTAs` : ''} (per role and barrier set)`
      );
    }
    return el('div', { class: 'tlx-orch-notes' }, ...parts.map(s => el('div', { text: s })));
  }

  private findingsList(): HTMLElement | null {
    const marks = this.p.marks ?? [];
    if (!marks.length) {
      return null;
    }
    const list = el('ul', { class: 'tlx-orch-findings' });
    for (const m of marks) {
      const li = el('li', {
        class: `tlx-orch-finding tlx-orch-mark-${m.color}`,
        'data-rule': m.rule,
        'data-source': m.source ?? 'finding',
        text: markLabel(m)
      });
      li.title = m.message ?? '';
      li.addEventListener('click', () => {
        const op = m.ops[0];
        if (op !== undefined) {
          this.select({ kind: 'op', id: op });
        }
      });
      list.append(li);
    }
    return list;
  }

  private play(): void {
    if (this.timer) {
      window.clearInterval(this.timer);
      this.timer = 0;
      return;
    }
    this.go(0);
    this.timer = window.setInterval(() => {
      if (this.at >= this.positions.length - 1 || !this.host.isConnected) {
        window.clearInterval(this.timer);
        this.timer = 0;
        return;
      }
      this.go(this.at + 1);
    }, this.p.steps?.length ? 450 : 900);
  }

  private scale = 1;
  private fitting: 'fit' | 'auto' | null = 'auto';

  /**
   * Scale the drawing (its viewBox stays). 'fit': the pane's width, never above 1:1 nor below 25% (an overview);
   * 'auto' (the first view): fit while the text stays readable (>= READABLE), else READABLE and scroll.
   */
  private zoom(z: number | 'fit' | 'auto'): void {
    const L = this.layout;
    const avail = this.scrollNode?.clientWidth ?? 0;
    const fit = avail > 0 ? Math.min(1, avail / L.width) : 1;
    const s = z === 'fit' ? fit : z === 'auto' ? Math.max(fit, READABLE) : z;
    this.fitting = typeof z === 'number' ? null : z;
    this.scale = Math.min(3, Math.max(0.25, s));
    this.svgNode?.setAttribute('width', String(Math.round(L.width * this.scale)));
    this.svgNode?.setAttribute('height', String(Math.round(L.height * this.scale)));
    this.zoomLabel.textContent = `${Math.round(this.scale * 100)}%`;
  }

  // --- the graph -------------------------------------------------------------------------------

  private drawGraph(): SVGElement {
    const L = this.layout;
    const root = svg('svg', {
      class: 'tlx-orch-graph',
      width: L.width,
      height: L.height,
      viewBox: `0 0 ${L.width} ${L.height}`,
      role: 'img'
    });
    root.append(
      svg('defs', {},
        svg('marker', { id: 'tlx-orch-arrow', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7,
          orient: 'auto-start-reverse' }, svg('path', { d: 'M 0 0 L 10 5 L 0 10 z', class: 'tlx-orch-arrowhead' })))
    );
    const marks = markColors(this.p);
    L.lanes.forEach(l => root.append(this.lane(l)));
    root.append(svg('rect', { x: 0, y: L.bandY, width: L.width, height: 96, class: 'tlx-orch-band' }));
    L.rings.forEach(r => root.append(this.ring(r)));
    const edges = svg('g', { class: 'tlx-orch-edges' });
    L.edges.forEach(e => edges.append(this.edge(e, marks.edges.get(e.edge.id))));
    root.append(edges);
    L.nodes.forEach(n => root.append(this.node(n)));
    L.ops.forEach(o => root.append(this.op(o, marks.ops.get(o.op.id))));
    const labels = svg('g', { class: 'tlx-orch-labels' });
    L.edges.forEach(e => labels.append(this.edgeLabel(e)));
    root.append(labels);
    return root;
  }

  private clickable(node: SVGElement, item: Item): SVGElement {
    node.addEventListener('click', ev => {
      ev.stopPropagation();
      this.select(item);
    });
    return node;
  }

  private lane(l: GraphLayout['lanes'][0]): SVGElement {
    const t = l.task;
    const g = svg('g', { class: 'tlx-orch-lane', 'data-task': t.index });
    g.append(
      svg('rect', { x: l.box.x, y: l.box.y, width: l.box.w, height: l.box.h, class: 'tlx-orch-lane-bg' }),
      text(l.box.x + 6, l.box.y + 20, t.name, 'tlx-orch-lane-title'),
      text(l.box.x + 6, l.box.y + 36, taskTitle(t), 'tlx-orch-lane-sub'),
      text(l.box.x + 6, l.box.y + 51, t.role ? `role ${t.role}` : t.line ? `line ${t.line}` : '', 'tlx-orch-lane-sub')
    );
    return this.clickable(g, { kind: 'task', id: t.index });
  }

  private ring(r: RingLayout): SVGElement {
    const b = r.buffer;
    const g = svg('g', { class: 'tlx-orch-ring', 'data-buffer': b.id });
    const shape = (b.shape ?? []).join('\u00d7');
    g.append(text(12, r.y + 18, `${b.name}: ${b.count} \u00d7 ${shape} ${b.dtype ?? ''}`, 'tlx-orch-ring-title'));
    r.slots.forEach((s, i) =>
      g.append(
        svg('rect', { x: s.x, y: s.y, width: s.w, height: s.h, rx: 3, class: 'tlx-orch-slot', 'data-slot': i,
          'data-state': 'empty' }),
        text(s.x + s.w / 2, s.y + s.h - 6, String(i), 'tlx-orch-slot-index', 'middle')
      )
    );
    const last = r.slots[r.slots.length - 1];
    if (b.unpaired && last) {  // the model could not say which barrier fills which slot: no slot states
      g.append(text(last.x + last.w + 10, last.y + last.h / 2 + 4, `no slot states: ${b.unpaired}`,
        'tlx-orch-ring-unpaired'));
    }
    return this.clickable(g, { kind: 'buffer', id: b.id });
  }

  private node(n: NodeLayout): SVGElement {
    const b = n.barrier;
    const named = b.named !== null && b.named !== undefined;
    const g = svg('g', { class: `tlx-orch-node${named ? ' tlx-orch-node-named' : ''}`, 'data-barrier': b.id });
    g.append(
      svg('rect', { x: n.box.x, y: n.box.y, width: n.box.w, height: n.box.h, rx: 10, class: 'tlx-orch-node-bg' }),
      text(n.box.x + n.box.w / 2, n.box.y + 16, b.count > 1 ? `${b.name} [${b.count}]` : b.name, 'tlx-orch-node-title',
        'middle')
    );
    if (named) {
      g.append(text(n.box.x + n.box.w / 2, n.box.y + 34, `bar ${b.named} \u00b7 ${b.arrive_count} threads`,
        'tlx-orch-lane-sub', 'middle'));
    }
    n.dots.forEach((d, i) => g.append(svg('circle', { cx: d.x, cy: d.y, r: 5, class: 'tlx-orch-dot', 'data-index': i,
      'data-state': 'idle' })));
    return this.clickable(g, { kind: 'barrier', id: b.id });
  }

  private op(o: OpLayout, mark: string | undefined): SVGElement {
    const b = o.box;
    const g = svg('g', {
      class: `tlx-orch-op tlx-orch-op-${o.op.kind}${mark ? ` tlx-orch-mark-${mark}` : ''}`,
      'data-op': o.op.id,
      'data-kind': o.op.kind,
      'data-line': o.op.line ?? ''
    });
    const repeats = (o.op.repeats ?? 1) > 1 ? ` \u00d7${o.op.repeats}` : '';
    g.append(
      svg('rect', { x: b.x, y: b.y, width: b.w, height: b.h, rx: 4, class: 'tlx-orch-op-bg' }),
      text(b.x + 6, b.y + 15, `${o.title}${repeats}`, 'tlx-orch-op-title'),
      text(b.x + 6, b.y + 30, clip(o.target, 21), 'tlx-orch-op-target'),
      text(b.x + 6, b.y + 44, `line ${o.op.line ?? '?'}`, 'tlx-orch-op-line'),
      text(b.x + b.w - 5, b.y + 44, '', 'tlx-orch-op-state', 'end')
    );
    return this.clickable(g, { kind: 'op', id: o.op.id });
  }

  private edge(e: EdgeLayout, mark: string | undefined): SVGElement {
    const g = svg('g', {
      class: `tlx-orch-edge tlx-orch-edge-${e.edge.kind}${mark ? ` tlx-orch-mark-${mark}` : ''}` +
        (e.edge.slowest ? ' tlx-orch-slowest' : ''),
      'data-edge': e.edge.id,
      'data-kind': e.edge.kind
    });
    g.append(
      svg('path', { d: e.path, class: 'tlx-orch-hit' }),
      svg('path', { d: e.path, class: 'tlx-orch-line', 'marker-end': 'url(#tlx-orch-arrow)' })
    );
    return this.clickable(g, { kind: 'edge', id: e.edge.id });
  }

  private edgeLabel(e: EdgeLayout): SVGElement {
    const g = svg('g', { class: `tlx-orch-edge-label${e.edge.slowest ? ' tlx-orch-slowest' : ''}`,
      'data-edge': e.edge.id });
    e.lines.forEach((s, i) => g.append(text(e.labelAt.x, e.labelAt.y + 12 * i, s,
      i ? 'tlx-orch-measured' : 'tlx-orch-phase', 'middle')));
    return this.clickable(g, { kind: 'edge', id: e.edge.id });
  }

  // --- rounds ----------------------------------------------------------------------------------

  /** Round r's barriers and waits; its slots as the round ended, or as they were after `step` within it. */
  setRound(r: number, step?: OrchestrationStep): void {
    const n = this.p.rounds.length;
    this.round = Math.max(0, Math.min(r, Math.max(0, n - 1)));
    this.host.dataset.round = String(this.round);
    this.roundLabel.textContent = !n
      ? 'no rounds simulated'
      : `round ${this.round} (of 0\u2013${n - 1})` +
        (this.p.steps?.length ? ` \u00b7 step ${this.at + 1} of ${this.positions.length}` : '');
    const v = roundView(this.p, this.round, step);
    const root = this.svgNode!;
    root.querySelectorAll<SVGElement>('.tlx-orch-node').forEach(g => {
      const states = v.dots.get(Number(g.dataset.barrier)) ?? [];
      g.querySelectorAll<SVGElement>('.tlx-orch-dot').forEach((d, i) => d.setAttribute('data-state', states[i] ?? 'idle'));
    });
    root.querySelectorAll<SVGElement>('.tlx-orch-ring').forEach(g => {
      const states = v.slots.get(Number(g.dataset.buffer)) ?? [];
      g.querySelectorAll<SVGElement>('.tlx-orch-slot').forEach((s, i) => s.setAttribute('data-state', states[i] ?? 'empty'));
    });
    root.querySelectorAll<SVGElement>('.tlx-orch-op').forEach(g => {
      const w = v.waits.get(Number(g.dataset.op));
      const state = g.querySelector('.tlx-orch-op-state')!;
      g.classList.toggle('tlx-orch-passed', !!w && w.passed);
      g.classList.toggle('tlx-orch-blocked', !!w && !w.passed);
      state.textContent = !w ? '' : w.passed ? `\u2713 phase ${w.phases.join('/')}` : `\u2715 phase ${w.phases.join('/')}`;
    });
    clear(this.summary);
    if (step) {
      this.summary.append(el('li', { class: 'tlx-orch-step-now', text: stepText(this.p, step) }));
    }
    const lines = v.summary.length ? v.summary : n ? ['No wait passed or blocked in this round.'] : [];
    lines.forEach(s => this.summary.append(el('li', { text: s, class: /never completes/.test(s) ? 'tlx-orch-bad' : '' })));
  }

  // --- selection -------------------------------------------------------------------------------

  select(item: Item): void {
    const root = this.svgNode!;
    root.querySelectorAll('.tlx-orch-selected').forEach(e => e.classList.remove('tlx-orch-selected'));
    const attr = { op: 'data-op', barrier: 'data-barrier', buffer: 'data-buffer', edge: 'data-edge', task: 'data-task' }[
      item.kind];
    root.querySelectorAll(`[${attr}="${item.id}"]`).forEach(e => e.classList.add('tlx-orch-selected'));
    const lines = linesOf(this.p, item);
    const linked = lines.length ? this.opts.pinLines(lines) : '';
    this.host.dataset.selected = `${item.kind}:${item.id}`;
    this.host.dataset.pinned = lines.join(',');
    clear(this.detail);
    this.detail.append(el('div', { class: 'tlx-orch-detail-title', text: this.describe(item) }));
    for (const s of this.facts(item)) {
      this.detail.append(el('div', { class: 'tlx-orch-detail-fact', text: s }));
    }
    const src = this.opts.source.split('\n');
    for (const l of lines) {
      this.detail.append(el('div', { class: 'tlx-orch-detail-line' },
        el('span', { class: 'tlx-orch-detail-lineno', text: String(l) }),
        el('code', { text: (src[l - 1] ?? '').trim() })));
    }
    if (linked) {
      const show = el('button', { type: 'button', class: 'tlx-orch-show-code', text: 'Show in Source & IR' });
      show.addEventListener('click', () => this.opts.showCode());
      this.detail.append(el('div', { class: 'tlx-orch-detail-linked', text: `pinned: ${linked}` }), show);
    }
  }

  private describe(item: Item): string {
    const p = this.p;
    if (item.kind === 'op') {
      const o = p.ops[item.id];
      return `${opTitle(o)} ${this.layout.ops.find(x => x.op.id === o.id)?.target ?? ''} at line ${o.line ?? '?'}, ` +
        `${p.tasks[o.task]?.name ?? ''}`;
    }
    if (item.kind === 'barrier') {
      const b = p.barriers[item.id];
      if (b.named !== null && b.named !== undefined) {
        return `named barrier ${b.named} (bar.sync / bar.arrive): ${b.arrive_count} threads per phase`;
      }
      return `barrier set ${b.name}: ${b.count} mbarrier${b.count > 1 ? 's' : ''}, arrive count ${b.arrive_count}`;
    }
    if (item.kind === 'buffer') {
      const b = p.buffers[item.id];
      return `buffer ring ${b.name}: ${b.count} slot${b.count > 1 ? 's' : ''} of ${(b.shape ?? []).join('\u00d7')} ` +
        `${b.dtype ?? ''} (${b.storage ?? 'smem'})${ringPairing(p, b)}`;
    }
    if (item.kind === 'edge') {
      const e = p.edges[item.id];
      const o = p.ops[e.op];
      const bar = p.barriers[e.barrier]?.name ?? '?';
      return e.kind === 'wait'
        ? `${bar} \u2192 wait at line ${o.line ?? '?'} (${p.tasks[o.task]?.name ?? ''}): ${e.label}`
        : `${e.label} at line ${o.line ?? '?'} (${p.tasks[o.task]?.name ?? ''}) \u2192 ${bar}`;
    }
    const t = p.tasks[item.id];
    return `${t.name}: ${taskTitle(t)}`;
  }

  private facts(item: Item): string[] {
    const p = this.p;
    const out: string[] = [];
    const edges = item.kind === 'edge' ? [p.edges[item.id]]
      : item.kind === 'op' ? p.edges.filter(e => e.op === item.id) : [];
    for (const e of edges) {
      if (e.kind === 'wait' && e.phases?.length) {
        out.push('phase waited for, round by round: ' + e.phases.map((ps, r) => `${r}: ${ps.join('/')}`).join(' \u00b7 '));
      }
      if (e.measured) {
        const m = e.measured;
        out.push(`measured (${m.role ?? 'role'} on this barrier set${(m.shared ?? 1) > 1 ? `, ${m.shared} waits` : ''}): ` +
          `${measuredLabel(m)}` + (typeof m.fraction === 'number' ? `, ${(100 * m.fraction).toFixed(1)}% of its span` : '') +
          (e.slowest ? ' \u2014 the slowest hand-off' : ''));
      }
    }
    if (item.kind === 'op' || item.kind === 'edge') {
      const op = item.kind === 'op' ? item.id : p.edges[item.id].op;
      for (const m of p.marks ?? []) {
        if (m.ops.includes(op)) {
          out.push(`${m.severity ?? ''} [${m.rule}] ${m.message ?? ''}`);
        }
      }
      const b = p.blocked.find(x => x.op === op);
      if (b) {
        out.push(`the simulated run ended blocked here in round ${b.round ?? 0}, waiting for phase ${b.parity ?? '?'}`);
      }
    }
    return out;
  }
}

function clip(s: string, n: number): string {
  return s.length > n ? `${s.slice(0, n - 1)}\u2026` : s;
}
