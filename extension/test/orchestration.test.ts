/**
 * The Orchestration tab's layout and schedule from a real payload: the recorded H200 Report of the
 * warp-specialized cooperative GEMM (workbench/report/examples/gpu_h200_ws_coop_gemm.json), its payload
 * rebuilt from its own TTGIR and decorated with its timeline (test/fixtures, written and checked by
 * tests/report/test_orchestration_payload.py).
 */
import { readFileSync } from 'fs';
import { join } from 'path';
import { describe, expect, it } from 'vitest';
import {
  GEOMETRY,
  Orchestration,
  layoutGraph,
  linesOf,
  markColors,
  markLabel,
  measuredLabel,
  ringPairing,
  roundView,
  stepText
} from '../src/orchestration_layout';
import { loadReport } from '../src/types';

const fixture = JSON.parse(readFileSync(join(__dirname, 'fixtures', 'orchestration_h200_ws_coop_gemm.json'), 'utf8'));
const p: Orchestration = fixture.orchestration;

describe('the recorded H200 GEMM: graph', () => {
  const g = layoutGraph(p);

  it('one lane per task: the producer above the barrier band, the two consumer replicas below', () => {
    expect(g.lanes.map(l => [l.task.name, l.task.role, l.above])).toEqual([
      ['the default task', 'producer', true],
      ['the task at line 31 (replica 0)', 'consumer.0', false],
      ['the task at line 31 (replica 1)', 'consumer.1', false]
    ]);
    const band = g.bandY;
    expect(g.lanes[0].box.y + g.lanes[0].box.h).toBeLessThanOrEqual(band);
    expect(g.lanes[1].box.y).toBeGreaterThanOrEqual(band + GEOMETRY.band);
    // every op of a lane sits inside it, in program order
    for (const l of g.lanes) {
      const boxes = g.ops.filter(o => o.op.task === l.task.index).map(o => o.box);
      expect(boxes.length).toBe(l.task.ops.length);
      boxes.forEach((b, i) => {
        expect(b.y).toBeGreaterThanOrEqual(l.box.y);
        expect(b.y + b.h).toBeLessThanOrEqual(l.box.y + l.box.h);
        if (i) {
          expect(b.x).toBeGreaterThan(boxes[i - 1].x + boxes[i - 1].w);
        }
      });
    }
  });

  it('barrier sets are nodes in the band that do not overlap; the ring is a row of its slots', () => {
    expect(g.nodes.map(n => [n.barrier.name, n.dots.length])).toEqual(p.barriers.map(b => [b.name, b.count]));
    const xs = [...g.nodes].sort((a, b) => a.box.x - b.box.x);
    xs.slice(1).forEach((n, i) => expect(n.box.x).toBeGreaterThanOrEqual(xs[i].box.x + xs[i].box.w));
    g.nodes.forEach(n => {
      expect(n.box.y).toBeGreaterThanOrEqual(g.bandY);
      expect(n.box.y + n.box.h).toBeLessThanOrEqual(g.bandY + GEOMETRY.band);
    });
    expect(g.rings.map(r => [r.buffer.name, r.slots.length])).toEqual(p.buffers.map(b => [b.name, b.count]));
    expect(g.width).toBeGreaterThanOrEqual(Math.max(...g.ops.map(o => o.box.x + o.box.w)));
  });

  it('every edge is drawn between its op and its barrier node, waits labelled with phases and measured waits', () => {
    expect(g.edges.length).toBe(p.edges.length);
    for (const e of g.edges) {
      expect(e.path).toMatch(/^M [\d.]+ [\d.]+ C /);
      expect(e.lines[0]).toBe(e.edge.label);
    }
    const waits = g.edges.filter(e => e.edge.kind === 'wait');
    expect(waits.map(e => e.lines)).toEqual([
      ['phase 1, 0', 'mean 373 ns \u00b7 p95 386 ns \u00b7 n 32.8k'],
      ['phase 0, 1', 'mean 90 ns \u00b7 p95 205 ns \u00b7 n 32.8k'],
      ['phase 0, 1', 'mean 93 ns \u00b7 p95 207 ns \u00b7 n 32.8k']
    ]);
    // the slowest hand-off: the producer waiting for a free slot
    const slow = p.edges.filter(e => e.slowest);
    expect(slow.length).toBe(1);
    expect(slow[0].measured!.role).toBe('producer');
    expect(measuredLabel(undefined)).toBe('');
  });
});

describe('the recorded H200 GEMM: the schedule round by round', () => {
  it('round 0: every slot of the ring filled and released, the producer passed phase 1 and the consumers phase 0', () => {
    const v = roundView(p, 0);
    const ring = p.buffers.find(b => b.name === 'b_bufs')!; // b_bufs: slot i with full[i] and empty[i]
    expect(v.slots.get(ring.id)).toEqual(Array(ring.count).fill('released'));
    const a = p.buffers.find(b => b.name === 'a_bufs')!; // 8 half-tiles on 4 barriers: slots i and 4 + i on full[i]
    expect(v.slots.get(a.id)).toEqual(Array(8).fill('released'));
    expect(ringPairing(p, a)).toBe('; filled: slots on full [0 1 2 3 0 1 2 3], free again on empty');
    expect(ringPairing(p, ring)).toBe('; filled: slot i on full[i], free again on empty');
    const full = p.barriers.find(b => b.id === ring.filled_by)!;
    expect(v.dots.get(full.id)).toEqual(Array(full.count).fill('done'));
    const phases = p.edges.filter(e => e.kind === 'wait').map(e => v.waits.get(e.op)!.phases);
    expect(phases).toEqual([[1], [0], [0]]);
    expect(v.summary.every(s => s.endsWith(': passed'))).toBe(true);
    expect(v.summary[0]).toMatch(/^line \d+ \(the default task\) waits on empty\[0\.\.3\] for phase 1: passed$/);
  });

  it('round 1 flips every phase', () => {
    const v = roundView(p, 1);
    expect(p.edges.filter(e => e.kind === 'wait').map(e => v.waits.get(e.op)!.phases)).toEqual([[0], [1], [1]]);
  });

  it('the steps: a slot fills, lands and is released, in the order the run did it, so the ring changes', () => {
    const steps = p.steps!;
    const b = p.buffers.find(x => x.name === 'b_bufs')!;
    const ringAt = (i: number) => roundView(p, steps[i].round, steps[i]).slots.get(b.id)!;
    expect(ringAt(0)).toEqual(['empty', 'empty', 'empty', 'empty']);
    expect(ringAt(1)).toEqual(['filling', 'empty', 'empty', 'empty']);
    expect(ringAt(3)).toEqual(['full', 'empty', 'empty', 'empty']);
    const shown = new Set(steps.map((_, i) => ringAt(i).join(' ')));
    expect(shown.size).toBeGreaterThan(8);
    const firstRelease = steps.findIndex(s => s.buffer === b.id && s.state === 'released');
    expect(firstRelease).toBeGreaterThan(3);
    expect(stepText(p, steps[firstRelease])).toMatch(/^line \d+ \(the task at line \d+ \(replica 1\)\): b_bufs slot 0 released/);
    expect(stepText(p, steps[1])).toMatch(/^line \d+ \(the default task\): b_bufs slot 0 filling$/);
  });

  it('a round past the last shows nothing', () => {
    const v = roundView(p, p.rounds.length + 3);
    expect(v.summary).toEqual([]);
    expect(v.waits.size).toBe(0);
  });
});

describe('what a click pins and what findings colour', () => {
  it('an op its line; an edge its op and its barrier allocation; a barrier set its allocation and every op on it', () => {
    const wait = p.edges.find(e => e.kind === 'wait')!;
    const op = p.ops[wait.op];
    expect(linesOf(p, { kind: 'op', id: op.id })).toEqual([op.line]);
    expect(linesOf(p, { kind: 'edge', id: wait.id })).toEqual([op.line, p.barriers[wait.barrier].line]);
    const lines = linesOf(p, { kind: 'barrier', id: wait.barrier });
    expect(lines[0]).toBe(p.barriers[wait.barrier].line);
    for (const o of p.ops.filter(o => o.barrier === wait.barrier)) {
      expect(lines).toContain(o.line);
    }
    // each line is a line of the kernel's source
    const src = (fixture.source as string).split('\n');
    for (const l of lines) {
      expect(src[l - 1]).toMatch(/barrier|alloc/);
    }
  });

  it('red beats orange on an op and its edges', () => {
    const wait = p.edges.find(e => e.kind === 'wait')!;
    const marked: Orchestration = {
      ...p,
      marks: [
        { finding: 0, rule: 'first-wait-passes', color: 'orange', ops: [wait.op], edges: [wait.id] },
        { finding: 1, rule: 'hang', color: 'red', ops: [wait.op], edges: [wait.id] }
      ]
    };
    const m = markColors(marked);
    expect(m.ops.get(wait.op)).toBe('red');
    expect(m.edges.get(wait.id)).toBe('red');
    expect(markColors(p).ops.size).toBe(0);
  });

  it("a live snapshot's wait beats every finding; a stress run's telling delay beats a read too early", () => {
    const wait = p.edges.find(e => e.kind === 'wait')!;
    const live = { source: 'snapshot' as const, finding: null, rule: 'waiting', color: 'live' as const, line: 7,
                   ops: [wait.op], edges: [wait.id] };
    const delay = { source: 'stress' as const, finding: null, rule: 'telling-delay', color: 'delay' as const, line: 7,
                    ops: [wait.op], edges: [wait.id] };
    const red = { finding: 0, rule: 'hang', color: 'red' as const, ops: [wait.op], edges: [wait.id] };
    const orange = { finding: 1, rule: 'slot-reuse', color: 'orange' as const, ops: [wait.op], edges: [wait.id] };
    expect(markColors({ ...p, marks: [red, live] }).ops.get(wait.op)).toBe('live');
    expect(markColors({ ...p, marks: [delay, red] }).edges.get(wait.id)).toBe('red');
    expect(markColors({ ...p, marks: [orange, delay] }).ops.get(wait.op)).toBe('delay');
    expect(markLabel(live)).toBe('waiting at line 7 (live snapshot)');
    expect(markLabel(delay)).toBe('delay at line 7 went with failing runs (--stress)');
    expect(markLabel({ ...red, severity: 'error', line: 3 })).toBe('error hang at line 3');
  });
});

describe('loadReport', () => {
  it('reads the payload (and no payload as null)', async () => {
    const r = await loadReport({ schema_version: '2.3', kernel: { name: 'k' }, orchestration: p });
    expect(r.orchestration!.tasks.length).toBe(3);
    expect((await loadReport({ kernel: { name: 'k' } })).orchestration).toBeNull();
    expect((await loadReport({ kernel: { name: 'k' }, orchestration: { kind: 'bench' } })).orchestration).toBeNull();
  });
});
