import { describe, expect, it } from 'vitest';
import { findNoise } from '../src/noise';

const TTGIR = [
  '#blocked = #ttg.blocked<{sizePerThread = [1]}>',
  '  %0 = tt.get_program_id x : i32 loc(#loc2)',
  '  %1 = arith.muli %0, %c128 : i32 loc(callsite(#loc3 at #loc4))',
  '  tt.store %p, %v, %m : tensor<128x!tt.ptr<f32>> loc("x.py":7:3)',
  '#loc2 = loc("/tmp/k.py":5:8)',
  '#loc3 = loc(callsite("a(b)" at #loc1))'
].join('\n');

describe('findNoise', () => {
  it('hides MLIR locations inside a line and the #loc definitions whole', () => {
    const n = findNoise(TTGIR, 'mlir');
    expect(n.lines).toEqual([5, 6]);
    const hidden = n.inline.map(([a, b]) => TTGIR.slice(a, b));
    expect(hidden).toEqual([' loc(#loc2)', ' loc(callsite(#loc3 at #loc4))', ' loc("x.py":7:3)']);
    let kept = TTGIR;
    for (const [a, b] of [...n.inline].reverse()) {
      kept = kept.slice(0, a) + kept.slice(b);
    }
    expect(kept.split('\n')[1]).toBe('  %0 = tt.get_program_id x : i32');
    expect(kept.split('\n').length).toBe(6); // no line removed: the line maps stay valid
  });

  it("hides the SASS listing's file comments and nothing in other languages", () => {
    const sass = '        /*0010*/  S2R R0, SR_TID.X ;\n        //## File "<tlx-cell-3>", line 7\n  /*0020*/  EXIT ;';
    expect(findNoise(sass, 'sass')).toEqual({ inline: [], lines: [2] });
    expect(findNoise(sass, 'ptx')).toEqual({ inline: [], lines: [] });
    expect(findNoise('x = 1  # loc(#loc2)', 'python').inline).toEqual([]);
  });
});
