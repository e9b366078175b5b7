/** The TypeScript types are generated from workbench/report/schema.json; this fails when they drift. */
import { readFileSync } from 'fs';
import { join } from 'path';
import { describe, expect, it } from 'vitest';
// @ts-expect-error: a plain .mjs build script, no types
import { OUT, generate } from '../scripts/schema-types.mjs';

describe('generated types', () => {
  it('src/schema.d.ts is what the schema generates (run `npm run build:types`)', async () => {
    const committed = readFileSync(OUT, 'utf8');
    expect(committed).toBe(await generate());
  });
  it('covers every payload of the schema', () => {
    const schema = JSON.parse(readFileSync(join(__dirname, '..', '..', 'workbench', 'report', 'schema.json'), 'utf8'));
    const types = readFileSync(OUT, 'utf8');
    for (const name of ['timing', 'bench', 'roofline', 'check', 'timeline', 'capture', 'diff', 'finding', 'task']) {
      expect(Object.keys(schema.$defs)).toContain(name);
      const ts = name[0].toUpperCase() + name.slice(1);
      expect(types).toMatch(new RegExp(`export (interface|type) ${ts}\\b`));
    }
  });
});
