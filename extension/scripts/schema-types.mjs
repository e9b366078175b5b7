// Generate src/schema.d.ts (the Report's TypeScript types) from workbench/report/schema.json.
// `npm run build` runs it before tsc; `--check` exits 1 when the committed file differs (drift).
// scripts/schema_types.py generates the same types for Python (workbench/ir/schema_types.py).
import { compile } from 'json-schema-to-typescript';
import { readFileSync, writeFileSync } from 'fs';
import { dirname, join } from 'path';
import { fileURLToPath } from 'url';

const here = dirname(fileURLToPath(import.meta.url));
export const SCHEMA = join(here, '..', '..', 'workbench', 'report', 'schema.json');
export const OUT = join(here, '..', 'src', 'schema.d.ts');

export async function generate(schemaPath = SCHEMA) {
  const schema = JSON.parse(readFileSync(schemaPath, 'utf8'));
  return compile(schema, 'TlxReport', {
    bannerComment:
      '/* Generated from workbench/report/schema.json by scripts/schema-types.mjs: do not edit.\n' +
      ' * `npm run build:types` regenerates it; test/schema.test.ts fails when it drifts. */',
    additionalProperties: false, // in the types only: a typo in the viewer is a compile error
    unreachableDefinitions: true,
    strictIndexSignatures: false,
    format: true,
    style: { singleQuote: true, printWidth: 120 }
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  // --schema PATH: another copy of the schema (e.g. the one about to be committed)
  const at = process.argv.indexOf('--schema');
  const text = await generate(at > 0 ? process.argv[at + 1] : SCHEMA);
  if (process.argv.includes('--stdout')) {
    process.stdout.write(text);
    process.exit(0);
  }
  if (process.argv.includes('--check')) {
    const now = readFileSync(OUT, 'utf8');
    if (now !== text) {
      console.error('src/schema.d.ts is out of date: run `npm run build:types`');
      process.exit(1);
    }
  } else {
    writeFileSync(OUT, text);
    console.log('src/schema.d.ts written; the Python side: .venv/bin/python extension/scripts/schema_types.py');
  }
}
