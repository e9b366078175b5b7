import { describe, expect, it } from 'vitest';
import { LineIndex, describeRanges, findMatches, linkedLines, mainLine, toRanges } from '../src/linemap';
import { inflate, loadReport, parseLineMap } from '../src/types';
import { gzipSync } from 'zlib';

const ptx = new LineIndex(parseLineMap({ '3': [10, 11], '5': [12, 40, 41], '6': [41] }));
const sass = new LineIndex(parseLineMap({ '5': [100, 101], '3': [90] }));

describe('LineIndex', () => {
  it('maps forward and back', () => {
    expect(ptx.stageLines(5)).toEqual([12, 40, 41]);
    expect(ptx.stageLines([3, 6])).toEqual([10, 11, 41]);
    expect(ptx.userLines(41)).toEqual([5, 6]);
    expect(ptx.userLines(999)).toEqual([]);
    expect(ptx.mappedUserLines()).toEqual([3, 5, 6]);
  });

  it('parses string keys, drops junk and duplicates', () => {
    const m = parseLineMap({ '2': [4, 4, 3], x: [1], '7': [0, -1], '9': 12 } as any);
    expect(Array.from(m.entries())).toEqual([
      [2, [3, 4]],
      [9, [12]]
    ]);
  });
});

describe('linkedLines', () => {
  const idx = { ptx, sass };
  it('from a source line to every shown stage', () => {
    const r = linkedLines(idx, { kind: 'source', line: 5 }, ['ptx', 'sass']);
    expect(r.source).toEqual([5]);
    expect(r.stages).toEqual({ ptx: [12, 40, 41], sass: [100, 101] });
  });
  it('from a stage line back to source and across to the other stage', () => {
    const r = linkedLines(idx, { kind: 'stage', stage: 'ptx', line: 41 }, ['ptx', 'sass']);
    expect(r.source).toEqual([5, 6]);
    expect(r.stages.ptx).toEqual([12, 40, 41]);
    expect(r.stages.sass).toEqual([100, 101]);
  });
  it('an unmapped stage line keeps itself highlighted', () => {
    const r = linkedLines(idx, { kind: 'stage', stage: 'ptx', line: 2 }, ['ptx']);
    expect(r.source).toEqual([]);
    expect(r.stages.ptx).toEqual([2]);
  });
  it('stages without a map give nothing', () => {
    expect(linkedLines(idx, { kind: 'source', line: 3 }, ['llir']).stages.llir).toEqual([]);
  });
});

describe('ranges and search', () => {
  it('compresses ranges', () => {
    expect(toRanges([7, 1, 2, 3, 3])).toEqual([
      [1, 3],
      [7, 7]
    ]);
    expect(describeRanges([1, 2, 3, 7])).toBe('1\u20133, 7');
  });
  it('finds case-insensitive plain-text matches with line numbers', () => {
    const text = 'mma.sync\nLDG.E R1\n  ldg.e.128 R2 [a.b*]\n';
    const m = findMatches(text, 'ldg.e');
    expect(m.map(x => x.line)).toEqual([2, 3]);
    expect(text.slice(m[1].from, m[1].to)).toBe('ldg.e');
    expect(findMatches(text, '[a.b*]').length).toBe(1); // no regex semantics
    expect(findMatches(text, '')).toEqual([]);
  });
});

describe('loadReport', () => {
  it('reads the schema 1.0 shape (texts in the clear)', async () => {
    const r = await loadReport({
      schema_version: '1.0',
      id: 'abc',
      kernel: {
        name: 'matmul<script>',
        target: 'sm_90',
        source: { text: '%%tlx\n@triton.jit\ndef k():\n  pass\n', first_line: 2, filename: '<tlx-cell>' }
      },
      cell: { source: 'ignored when kernel.source.text is present', kernel_first_line: 2 },
      stages: [
        { name: 'ttgir', language: 'mlir', text: 'a\nb', line_map: { '3': [1] } },
        { name: 'ptx', language: 'ptx', text: 'x', line_map: {} }
      ],
      metadata: { num_warps: 4 },
      layouts: { declared: [], values: [] },
      view: { stages_first: ['ptx'] },
      timeline: null
    });
    expect(r.kernelName).toBe('matmul<script>');
    expect(r.source.startsWith('%%tlx')).toBe(true);
    expect(r.kernelFirstLine).toBe(2);
    expect(r.stages.map(s => s.name)).toEqual(['ttgir', 'ptx']);
    expect(r.stages[0].lineMap.get(3)).toEqual([1]);
    expect(r.stages[0].lineCount).toBe(2);
    expect(r.stagesFirst).toEqual(['ptx']);
    expect(r.target).toBe('sm_90');
    expect(r.timeline).toBeNull();
  });
  it('inflates gzip+base64 stage texts and stage diffs (schema 2.0)', async () => {
    const text = Array.from({ length: 3000 }, (_, i) => `\tmov.u32 %r${i}, ${i}; // \u00e9`).join('\n');
    const gz = gzipSync(Buffer.from(text, 'utf8')).toString('base64');
    expect(await inflate(gz)).toBe(text);
    const r = await loadReport({
      schema_version: '2.0',
      stages: [{ name: 'ptx', language: 'ptx', line_count: 3000, full_line_count: 5000, text_gz: gz,
        line_map_gz: gzipSync(Buffer.from('{"1":[3000,2]}')).toString('base64') }],
      previous: { id: 'p', created: '', same_key: false, source_diff: '', metadata: [],
        stages: [{ name: 'ptx', status: 'changed', added: 1, removed: 1, diff_gz: gz }] }
    });
    expect(r.stages[0].text).toBe(text);
    expect(r.stages[0].lineMap.get(1)).toEqual([2, 3000]);
    expect(r.stages[0].fullLineCount).toBe(5000); // only the head is stored: the viewer says so
    expect(r.previous!.stages[0].diff).toBe(text);
  });
  it('tolerates garbage', async () => {
    const r = await loadReport({ stages: 'nope', layouts: 5, measurements: [1, { no: 'kind' }], timeline: 3 });
    expect(r.stages).toEqual([]);
    expect(r.values).toEqual([]);
    expect(r.measurements).toEqual([]);
    expect(r.timeline).toBeNull();
    expect((await loadReport(null)).kernelName).toBe('kernel');
  });
});

import { timelineSpans } from '../src/plots';

describe('timeline payloads', () => {
  it('reads workbench.measure.timeline lanes (start_ns + dur_ns, one row per CTA and role)', () => {
    const spans = timelineSpans({
      kind: 'timeline',
      status: 'ok',
      reason: null,
      roles: [{ role: 'producer' }],
      lanes: [
        { cta: 0, role: 'producer', category: 'tma', name: 'load', start_ns: 10, dur_ns: 5, cycles: 9 },
        { cta: 0, role: 'consumer', category: 'mma', name: 'wgmma', start_ns: 12, dur_ns: 8, cycles: 14 }
      ]
    });
    expect(spans).toEqual([
      { row: 'CTA 0 \u00b7 producer', name: 'load', category: 'tma', start: 10, end: 15 },
      { row: 'CTA 0 \u00b7 consumer', name: 'wgmma', category: 'mma', start: 12, end: 20 }
    ]);
  });
});

describe('mainLine', () => {
  const sass = ['', 'UMOV UR9, 0x40000000 ;', 'UMOV UR11, 0x40000000 ;', 'R2UR UR4, R2 ;',
    'HGMMA.64x128x16.F32 R24, gdesc[UR8], R24 ;', 'LDG.E R2, desc[UR6][R2.64] ;'];
  const text = (l: number) => sass[l] ?? '';

  it('picks the HGMMA of a tl.dot, not the UMOV before it', () => {
    expect(mainLine([1, 2, 3, 4], text, 'sass')).toBe(4);
    expect(mainLine([1, 2, 5], text, 'sass')).toBe(5); // no MMA: the global load
  });

  it('falls back to the first line, and to null without lines', () => {
    expect(mainLine([3, 2], text, 'sass')).toBe(2);
    expect(mainLine([3, 2], text, 'python')).toBe(2);
    expect(mainLine([], text, 'sass')).toBeNull();
  });
});
