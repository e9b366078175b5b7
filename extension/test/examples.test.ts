/** The Report examples committed with the schema (workbench/report/examples) are the contract. */
import { readFileSync, readdirSync, existsSync } from 'fs';
import { join } from 'path';
import { describe, expect, it } from 'vitest';
import { ownership, parseAttr, parseGluon, toLinearLayout } from '../src/layouts';
import { normalizeReport } from '../src/types';

const dir = join(__dirname, '..', '..', 'workbench', 'report', 'examples');
const files = existsSync(dir) ? readdirSync(dir).filter(f => f.endsWith('.json')) : [];

describe.skipIf(!files.length)('schema examples', () => {
  for (const f of files) {
    it(`${f} normalizes, line maps point into their stages, layouts draw`, () => {
      const raw = JSON.parse(readFileSync(join(dir, f), 'utf8'));
      const r = normalizeReport(raw);
      expect(r.schemaVersion).toBe('1.0');
      expect(r.kernelName).toBeTruthy();
      expect(r.stages.length).toBeGreaterThan(0);
      const srcLines = r.source.split('\n').length;
      for (const s of r.stages) {
        const n = s.text.split('\n').length;
        for (const [user, lines] of s.lineMap) {
          expect(user).toBeLessThanOrEqual(srcLines);
          for (const l of lines) {
            expect(l).toBeLessThanOrEqual(n);
          }
        }
      }
      for (const v of r.values) {
        const attr = parseAttr(v.ttgir) ?? parseGluon(v.layout);
        if (!attr || attr.kind.endsWith('shared') || !v.shape.every(x => (x & (x - 1)) === 0)) {
          continue;
        }
        const map = ownership(toLinearLayout(attr, v.shape, a => r.declared.find(d => d.alias === a)?.attr ?? null));
        expect(map.owners.every(o => o !== null)).toBe(true);
      }
    });
  }
});
