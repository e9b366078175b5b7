/**
 * Where the Orchestration tab draws what (no DOM here): lanes, op boxes, barrier nodes, buffer rings and
 * the edges between them, from the Report's `orchestration` payload; and what a round of the simulated
 * schedule shows (which phases completed, who waits with which phase, which ring slot is full).
 *
 * Layout: the buffer rings on top, then the lanes of the tasks that fill buffers (producers), the band
 * of barrier nodes, and the other lanes below it. An op's edges leave it towards the band; a barrier node
 * sits at the mean x of the ops it joins, nodes pushed apart where they would overlap.
 */
import type {
  Orchestration,
  OrchestrationBarrier,
  OrchestrationBuffer,
  OrchestrationEdge,
  OrchestrationMark,
  OrchestrationOp,
  OrchestrationRound,
  OrchestrationStep,
  OrchestrationTask,
  OrchestrationWait,
  OrchestrationWaitTime
} from './schema';

export type { Orchestration, OrchestrationStep };

export const GEOMETRY = {
  margin: 12,
  head: 200, // the lane's title column
  opW: 132,
  opH: 50,
  opGap: 30,
  label: 34, // room for an edge's label between an op and the band
  laneGap: 10,
  band: 96, // the barrier band's height
  nodeH: 46,
  nodeGap: 28,
  ring: 30 // one buffer ring's row
};

export interface Box {
  x: number;
  y: number;
  w: number;
  h: number;
}

export interface LaneLayout {
  task: OrchestrationTask;
  box: Box;
  /** The band is below this lane (its edges leave its ops downwards). */
  above: boolean;
}

export interface OpLayout {
  op: OrchestrationOp;
  box: Box;
  above: boolean;
  title: string;
  target: string;
}

export interface NodeLayout {
  barrier: OrchestrationBarrier;
  box: Box;
  /** Centres of its barriers' dots (one per barrier of the set). */
  dots: { x: number; y: number }[];
}

export interface RingLayout {
  buffer: Orchestration['buffers'][0];
  y: number;
  slots: Box[];
}

export interface EdgeLayout {
  edge: OrchestrationEdge;
  /** SVG path data, from the edge's source to its target (op -> node, or node -> wait op). */
  path: string;
  /** Where its label goes (text-anchor middle), one line per entry. */
  labelAt: { x: number; y: number };
  lines: string[];
}

export interface GraphLayout {
  width: number;
  height: number;
  lanes: LaneLayout[];
  ops: OpLayout[];
  nodes: NodeLayout[];
  rings: RingLayout[];
  edges: EdgeLayout[];
  bandY: number;
}

const OP_TITLES: { [kind: string]: string } = {
  wait: 'wait',
  arrive: 'arrive',
  warp_arrive: 'warp arrive',
  expect: 'expect bytes',
  tma_load: 'TMA copy',
  cp_async: 'cp.async',
  cp_commit: 'commit group',
  cp_wait: 'wait group',
  mma: 'wgmma',
  mma_wait: 'wgmma wait',
  local_load: 'load',
  local_store: 'store',
  tma_store: 'TMA store',
  store_wait: 'store wait',
  named_wait: 'bar.sync',
  named_arrive: 'bar.arrive',
  tc_mma: 'tcgen05 mma',
  tc_commit: 'tcgen05 commit',
  opaque: 'other op'
};

/** The ops that fill buffers: a lane with one of them is a producer, drawn above the band. */
const FILLS = new Set(['tma_load', 'cp_async', 'expect']);

/** How a ring's slots pair with its barriers, for its tooltip: `; slots 0-7 filled on full [0 1 2 3 0 1 2 3],
 * free again on empty` (the payload's slot_barriers), or why the model could not pair them. */
export function ringPairing(p: Orchestration, b: OrchestrationBuffer): string {
  if (b.unpaired) {
    return `; ${b.unpaired}`;
  }
  const fill = b.filled_by !== null && b.filled_by !== undefined ? p.barriers[b.filled_by]?.name : undefined;
  if (!fill) {
    return '';
  }
  const slots = b.slot_barriers ?? [];
  const same = slots.every((j, i) => j === i);
  const on = same ? `slot i on ${fill}[i]` : `slots on ${fill} [${slots.map(j => j ?? '-').join(' ')}]`;
  const rel = b.released_by !== null && b.released_by !== undefined ? p.barriers[b.released_by]?.name : undefined;
  return `; filled: ${on}${rel ? `, free again on ${rel}` : ''}`;
}

export function opTitle(op: OrchestrationOp): string {
  return OP_TITLES[op.kind] ?? op.kind;
}

function setName(p: Orchestration, id: number | null | undefined, what: 'barrier' | 'buffer'): string {
  if (id === null || id === undefined) {
    return '';
  }
  const s = what === 'barrier' ? p.barriers[id] : p.buffers[id];
  if (!s) {
    return `#${id}`;
  }
  return s.count > 1 ? `${s.name}[\u00b7]` : s.name;
}

/** What an op names: its barrier set, or the buffers it reads or writes. */
export function opTarget(p: Orchestration, op: OrchestrationOp): string {
  const bufs = (op.buffers ?? []).map(b => setName(p, b, 'buffer'));
  if (op.kind === 'tma_load') {
    return `${bufs.join(', ')} \u2192 ${setName(p, op.barrier, 'barrier')}`;
  }
  if (op.barrier !== null && op.barrier !== undefined) {
    return setName(p, op.barrier, 'barrier');
  }
  return bufs.join(', ');
}

export function taskTitle(t: OrchestrationTask): string {
  const warps =
    t.start_warp !== null && t.start_warp !== undefined
      ? `warps ${t.start_warp}\u2013${t.start_warp + t.num_warps - 1}`
      : `${t.num_warps} warps`;
  const regs = t.registers ? ` \u00b7 ${t.registers} regs` : '';
  return `${warps}${regs}`;
}

function fmtNs(ns: number | null | undefined): string {
  if (typeof ns !== 'number' || !isFinite(ns)) {
    return '\u2014';
  }
  return ns >= 10000 ? `${(ns / 1000).toFixed(1)} \u00b5s` : `${Math.round(ns)} ns`;
}

function fmtCount(n: number): string {
  return n >= 10000 ? `${(n / 1000).toFixed(n >= 100000 ? 0 : 1)}k` : String(n);
}

/** A wait edge's measured line: `mean 90 ns · p95 205 ns · n 32.8k`. */
export function measuredLabel(m: OrchestrationWaitTime | undefined): string {
  if (!m) {
    return '';
  }
  return `mean ${fmtNs(m.mean_ns)} \u00b7 p95 ${fmtNs(m.p95_ns)} \u00b7 n ${fmtCount(m.count)}`;
}

export function edgeLines(e: OrchestrationEdge): string[] {
  const lines = [e.label];
  if (e.measured) {
    lines.push(measuredLabel(e.measured));
  }
  return lines;
}

function lanesOf(p: Orchestration): { task: OrchestrationTask; above: boolean }[] {
  const fills = (t: OrchestrationTask) => t.ops.some(id => FILLS.has(p.ops[id]?.kind ?? ''));
  const producers = p.tasks.filter(fills);
  const others = p.tasks.filter(t => !fills(t));
  if (!producers.length || !others.length) {
    // one kind of lane only: the first half above the band, the rest below
    const half = Math.ceil(p.tasks.length / 2);
    return p.tasks.map((task, i) => ({ task, above: i < half }));
  }
  return [...producers.map(task => ({ task, above: true })), ...others.map(task => ({ task, above: false }))];
}

/** The whole drawing's geometry. */
export function layoutGraph(p: Orchestration): GraphLayout {
  const g = GEOMETRY;
  const x0 = g.margin + g.head;
  const rings: RingLayout[] = [];
  let y = g.margin;
  for (const buffer of p.buffers) {
    const slots = Array.from({ length: buffer.count }, (_, i) => ({ x: x0 + i * 40, y: y + 4, w: 34, h: g.ring - 10 }));
    rings.push({ buffer, y, slots });
    y += g.ring;
  }
  if (rings.length) {
    y += g.laneGap;
  }
  const order = lanesOf(p);
  const laneH = g.opH + g.label + 2 * g.laneGap;
  const lanes: LaneLayout[] = [];
  const ops: OpLayout[] = [];
  const place = (task: OrchestrationTask, above: boolean) => {
    const box = { x: g.margin, y, w: 0, h: laneH };
    const opY = above ? y + g.laneGap : y + g.laneGap + g.label;
    task.ops.forEach((id, i) => {
      const op = p.ops[id];
      const b = { x: x0 + i * (g.opW + g.opGap), y: opY, w: g.opW, h: g.opH };
      ops.push({ op, box: b, above, title: opTitle(op), target: opTarget(p, op) });
    });
    lanes.push({ task, box, above });
    y += laneH;
  };
  order.filter(l => l.above).forEach(l => place(l.task, true));
  const bandY = y;
  y += g.band;
  order.filter(l => !l.above).forEach(l => place(l.task, false));
  const height = y + g.margin;
  const opById = new Map(ops.map(o => [o.op.id, o]));
  const nodes = placeNodes(p, opById, bandY);
  const maxOps = Math.max(1, ...p.tasks.map(t => t.ops.length));
  const right = Math.max(
    x0 + maxOps * (g.opW + g.opGap),
    ...nodes.map(n => n.box.x + n.box.w + g.margin),
    ...rings.map(r => x0 + r.slots.length * 40 + 200)
  );
  for (const l of lanes) {
    l.box.w = right - g.margin;
  }
  const nodeById = new Map(nodes.map(n => [n.barrier.id, n]));
  const edges = p.edges
    .map(e => edgeLayout(e, opById.get(e.op), nodeById.get(e.barrier)))
    .filter((e): e is EdgeLayout => e !== null);
  return { width: right + g.margin, height, lanes, ops, nodes, rings, edges, bandY };
}

function placeNodes(p: Orchestration, ops: Map<number, OpLayout>, bandY: number): NodeLayout[] {
  const g = GEOMETRY;
  const want = p.barriers.map(b => {
    const xs = p.edges.filter(e => e.barrier === b.id).map(e => ops.get(e.op)).filter(o => !!o)
      .map(o => o!.box.x + o!.box.w / 2);
    const w = Math.max(110, 30 + b.count * 16, 14 + 7 * b.name.length);
    const cx = xs.length ? xs.reduce((a, c) => a + c, 0) / xs.length : g.margin + g.head + w / 2;
    return { b, w, cx };
  });
  want.sort((a, c) => a.cx - c.cx || a.b.id - c.b.id);
  const out: NodeLayout[] = [];
  let minX = g.margin + g.head;
  const y = bandY + (g.band - g.nodeH) / 2;
  for (const { b, w, cx } of want) {
    const x = Math.max(minX, cx - w / 2);
    const dots = Array.from({ length: b.named === null || b.named === undefined ? b.count : 0 }, (_, i) => ({
      x: x + w / 2 + (i - (b.count - 1) / 2) * 16,
      y: y + g.nodeH - 13
    }));
    out.push({ barrier: b, box: { x, y, w, h: g.nodeH }, dots });
    minX = x + w + g.nodeGap;
  }
  return out.sort((a, c) => a.barrier.id - c.barrier.id);
}

function edgeLayout(e: OrchestrationEdge, op: OpLayout | undefined, node: NodeLayout | undefined): EdgeLayout | null {
  if (!op || !node) {
    return null;
  }
  const ox = op.box.x + op.box.w / 2;
  const oy = op.above ? op.box.y + op.box.h : op.box.y;
  const nx = node.box.x + node.box.w / 2 + (e.kind === 'wait' ? 8 : -8);
  const ny = op.above ? node.box.y : node.box.y + node.box.h;
  const bend = (ny - oy) / 2;
  const [x1, y1, x2, y2] = e.kind === 'wait' ? [nx, ny, ox, oy] : [ox, oy, nx, ny];
  const c1 = e.kind === 'wait' ? y1 - bend : y1 + bend;
  const c2 = e.kind === 'wait' ? y2 + bend : y2 - bend;
  const path = `M ${r1(x1)} ${r1(y1)} C ${r1(x1)} ${r1(c1)}, ${r1(x2)} ${r1(c2)}, ${r1(x2)} ${r1(y2)}`;
  const lines = edgeLines(e);
  const ly = op.above ? oy + 13 : oy - 8 - 12 * (lines.length - 1);
  return { edge: e, path, labelAt: { x: ox, y: ly }, lines };
}

function r1(v: number): number {
  return Math.round(v * 10) / 10;
}

// --- the schedule, round by round -----------------------------------------------------------

export interface RoundView {
  round: number;
  /** Per barrier set: for each of its barriers, 'done' (phase `round` completed), 'open' (arrivals so far) or 'idle'. */
  dots: Map<number, ('done' | 'open' | 'idle')[]>;
  /** Wait op -> what it did this round (passed with a phase, or blocked). */
  waits: Map<number, { passed: boolean; phases: number[]; indices: number[] }>;
  /** Buffer set -> each slot's state. */
  slots: Map<number, string[]>;
  /** One line per wait op this round: who waits for which phase, and whether it passed. */
  summary: string[];
}

function indexRange(ids: number[]): string {
  const s = Array.from(new Set(ids)).sort((a, b) => a - b);
  if (s.length > 2 && s[s.length - 1] - s[0] === s.length - 1) {
    return `${s[0]}..${s[s.length - 1]}`;
  }
  return s.join(',');
}

export function roundCount(p: Orchestration): number {
  return p.rounds.length;
}

/** What a step did, in words: "line 18 (the default task): bufs slot 0 full". */
export function stepText(p: Orchestration, s: OrchestrationStep): string {
  const buf = p.buffers.find(b => b.id === s.buffer);
  const task = s.task === null ? null : p.tasks[s.task];
  const what = { filling: 'filling', full: 'full (its data landed)', released: 'released (free to write again)' }[
    s.state];
  return `line ${s.line ?? '?'} (${task?.name ?? 'a task'}): ${buf?.name ?? 'a ring'} slot ` +
    `${s.slots.join(', ')} ${what}`;
}

/** Round r's barrier dots, waits and slots; with a step, the slots as they were right after it. */
export function roundView(p: Orchestration, r: number, step?: OrchestrationStep): RoundView {
  const round: OrchestrationRound | undefined = p.rounds[r];
  const dots = new Map<number, ('done' | 'open' | 'idle')[]>();
  for (const b of p.barriers) {
    dots.set(b.id, Array.from({ length: b.count }, () => 'idle' as const));
  }
  const waits = new Map<number, { passed: boolean; phases: number[]; indices: number[] }>();
  const slots = new Map<number, string[]>();
  for (const b of p.buffers) {
    slots.set(b.id, Array.from({ length: b.count }, () => 'empty'));
  }
  if (!round) {
    return { round: r, dots, waits, slots, summary: [] };
  }
  for (const ph of round.barriers) {
    const d = dots.get(ph.barrier);
    if (d && ph.index < d.length) {
      d[ph.index] = ph.completed ? 'done' : 'open';
    }
  }
  for (const s of round.slots) {
    const row = slots.get(s.buffer);
    if (row && s.index < row.length) {
      row[s.index] = s.state;
    }
  }
  for (const ring of step?.states ?? []) {
    slots.set(ring.buffer, [...ring.states]);
  }
  const all: OrchestrationWait[] = round.waits;
  for (const w of all) {
    const cur = waits.get(w.op) ?? { passed: true, phases: [], indices: [] };
    cur.passed = cur.passed && w.passed !== false;
    if (typeof w.parity === 'number' && !cur.phases.includes(w.parity)) {
      cur.phases.push(w.parity);
    }
    if (typeof w.index === 'number') {
      cur.indices.push(w.index);
    }
    waits.set(w.op, cur);
  }
  const summary: string[] = [];
  for (const [opId, w] of waits) {
    const op = p.ops[opId];
    const task = p.tasks[op.task];
    const bar = p.barriers[op.barrier ?? -1];
    const where = bar ? (bar.count > 1 ? `${bar.name}[${indexRange(w.indices)}]` : bar.name) : 'a named barrier';
    const phase = w.phases.length ? `phase ${w.phases.sort().join('/')}` : 'its phase';
    summary.push(
      `line ${op.line ?? '?'} (${task?.name ?? `task ${op.task}`}) waits on ${where} for ${phase}: ` +
        (w.passed ? 'passed' : 'never completes (the simulated run ended here)')
    );
  }
  return { round: r, dots, waits, slots, summary };
}

// --- what a click pins -------------------------------------------------------------------------

/** The user's lines an item stands for: an op, its line; a barrier or buffer set, its allocation and every op on it;
 * an edge, its op's line and its barrier set's allocation. */
export function linesOf(p: Orchestration, item: { kind: 'op' | 'barrier' | 'buffer' | 'edge' | 'task'; id: number }):
  number[] {
  const out: number[] = [];
  const add = (l: number | null | undefined) => {
    if (typeof l === 'number' && !out.includes(l)) {
      out.push(l);
    }
  };
  if (item.kind === 'op') {
    add(p.ops[item.id]?.line);
  } else if (item.kind === 'edge') {
    const e = p.edges[item.id];
    add(p.ops[e.op]?.line);
    add(p.barriers[e.barrier]?.line);
  } else if (item.kind === 'barrier') {
    add(p.barriers[item.id]?.line);
    p.ops.filter(o => o.barrier === item.id).forEach(o => add(o.line));
  } else if (item.kind === 'buffer') {
    add(p.buffers[item.id]?.line);
    p.ops.filter(o => (o.buffers ?? []).includes(item.id)).forEach(o => add(o.line));
  } else {
    add(p.tasks[item.id]?.line);
  }
  return out;
}

/** Marks by op and by edge: the strongest colour wins (a live snapshot's wait, a wait that never completes, a
 * stress run's telling delay, a read too early, any other finding). */
export function markColors(p: Orchestration): { ops: Map<number, string>; edges: Map<number, string> } {
  const rank: { [c: string]: number } = { live: 5, red: 4, delay: 3, orange: 2, other: 1 };
  const ops = new Map<number, string>();
  const edges = new Map<number, string>();
  const put = (m: Map<number, string>, id: number, c: string) => {
    if ((rank[c] ?? 0) > (rank[m.get(id) ?? ''] ?? 0)) {
      m.set(id, c);
    }
  };
  for (const mark of p.marks ?? []) {
    mark.ops.forEach(id => put(ops, id, mark.color));
    mark.edges.forEach(id => put(edges, id, mark.color));
  }
  return { ops, edges };
}

/** A mark as its row in the list beside the graph: a finding by severity and rule, a snapshot's wait and a
 * stress run's telling delay by what they are (the message is the row's tooltip). */
export function markLabel(m: OrchestrationMark): string {
  const at = `line ${m.line ?? '?'}`;
  if (m.source === 'snapshot') {
    return `waiting at ${at} (live snapshot)`;
  }
  if (m.source === 'stress') {
    return `delay at ${at} went with failing runs (--stress)`;
  }
  return `${m.severity ?? ''} ${m.rule} at ${at}`;
}
