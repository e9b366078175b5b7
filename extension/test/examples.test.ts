/** The Report examples recorded from real cells (workbench/report/examples) are the contract. */
import { existsSync, readFileSync, readdirSync } from 'fs';
import { join } from 'path';
import { describe, expect, it } from 'vitest';
import { distributed, ownership, sharedMap } from '../src/layouts';
import { checkLine, measurementLine } from '../src/summary';
import { READS, isBench, isRoofline, loadReport } from '../src/types';

const dir = join(__dirname, '..', '..', 'workbench', 'report', 'examples');
const files = existsSync(dir) ? readdirSync(dir).filter(f => f.endsWith('.json')) : [];

describe('schema examples', () => {
  it('there are examples', () => {
    expect(files.length).toBeGreaterThanOrEqual(3);
  });
  for (const f of files) {
    it(`${f}: loads, inflates its stages, line maps point into them, layouts draw`, async () => {
      const raw = JSON.parse(readFileSync(join(dir, f), 'utf8'));
      const r = await loadReport(raw);
      expect(READS).toContain(r.schemaVersion);
      expect(r.kernelName).toBeTruthy();
      expect(r.stages.length).toBeGreaterThan(0);
      const srcLines = r.source.split('\n').length;
      raw.stages.forEach((s: { line_count: number; text_gz?: string; line_map_gz?: string }, i: number) => {
        const st = r.stages[i];
        expect(st.text.split('\n').filter((_, j, a) => j < a.length - 1 || _ !== '').length).toBe(s.line_count);
        if (s.text_gz) {
          expect(st.text.length).toBeGreaterThan(s.text_gz.length); // really inflated
        }
        if (s.line_map_gz) {
          expect(st.lineMap.size).toBeGreaterThan(0);
        }
        for (const [user, lines] of st.lineMap) {
          expect(user).toBeLessThanOrEqual(srcLines);
          for (const l of lines) {
            expect(l).toBeLessThanOrEqual(s.line_count);
          }
        }
      });
      // since 2.2 every value's layout comes with Triton's linear layout, and it draws
      for (const v of raw.layouts.linear ? r.values : []) {
        const alias = r.declared.find(d => d.attr === v.ttgir)!.alias;
        const data = r.linear.find(l => l.alias === alias && l.value_shape.join() === v.shape.join() && l.dtype === v.dtype)!;
        expect(data).toBeTruthy();
        const d = distributed(data);
        if (d) {
          expect(ownership(d).owners.every(o => o !== null)).toBe(true);
        } else {
          expect(sharedMap(data)).not.toBeNull();
        }
      }
      if (r.previous) {
        for (const s of r.previous.stages) {
          expect(s.status === 'same' || s.diff!.length > 0).toBe(true);
        }
      }
    });
  }
});

describe('what was measured and checked, from real payloads', () => {
  const load = async (name: string) => loadReport(JSON.parse(readFileSync(join(dir, name), 'utf8')));
  it('a --check that passed (vector_add, Triton interpreter)', async () => {
    const r = await load('vector_add.json');
    expect(r.checks.length).toBe(1);
    expect(checkLine(r.checks[0])).toMatch(/^check out: x \+ y: passed \(.*1000 elements match/);
  });
  it('a TLX kernel without a GPU: bench skipped because..., a static roofline, check and timeline skipped', async () => {
    const r = await load('tlx_ws_cooperative.json');
    const bench = r.measurements.find(isBench)!;
    expect(bench.status).toBe('skipped');
    expect(measurementLine(bench)).toMatch(/^bench: skipped, because Timing needs a CUDA GPU/);
    const roof = r.measurements.find(isRoofline)!;
    expect(roof.status).toBe('ok');
    expect(measurementLine(roof)).toMatch(/compute-bound · intensity \d+\.\d FLOP\/B/);
    expect(measurementLine(r.timeline!)).toMatch(/^timeline: skipped, because no GPU/);
    expect(r.checks[0].status).toBe('skipped');
    expect(checkLine(r.checks[0])).toMatch(/skipped \(nothing ran: /);
    expect(r.tasks.map(t => t.num_warps)).toEqual([4, 4, 4]);
  });
  const gpu = files.filter(f => f.startsWith('gpu_'));
  it.skipIf(!gpu.length)('a Report recorded on a GPU: the median, the roofline point, the checks', async () => {
    for (const f of gpu) {
      const r = await load(f);
      const bench = r.measurements.find(isBench)!;
      expect(bench.status).toBe('ok');
      expect(bench.timing!.median_ms).toBeGreaterThan(0);
      expect(measurementLine(bench)).toMatch(/^bench: median [\d.]+ ms \(p10/);
      const roof = r.measurements.find(isRoofline)!;
      expect(roof.points[0].tflops).toBeGreaterThan(0);
      if ((roof.roof_fraction ?? 0) > 1) {
        // measured before the roofline said why: no bare "110% of the roof"
        expect(measurementLine(roof)).toContain('of the measured ceiling');
        expect(measurementLine(roof)).not.toMatch(/\d+% of the roof/);
      }
      expect(r.checks.every(c => c.status === 'passed')).toBe(true);
      expect(r.timeline).not.toBeNull();
    }
  });
});
