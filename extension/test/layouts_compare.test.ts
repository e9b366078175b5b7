/**
 * Before the viewer switched to drawing from data: for every layout of the tutorials' recorded Reports, what
 * layouts.ts computed from the attribute text equals Triton's own linear layout (fixtures/tutorial_layouts.json,
 * computed by workbench.analyse.layouts.linear_layouts through Triton's C++).
 */
import { readFileSync } from 'fs';
import { join } from 'path';
import { describe, expect, it } from 'vitest';
import { apply, parseAttr, sharedLayout, sharedOffset, toLinearLayout } from '../src/layouts';

interface Entry {
  kernel: string;
  attr: string;
  declared: { [alias: string]: string };
  value_shape: number[];
  dtype: string;
  shape: number[];
  register?: number[][];
  lane?: number[][];
  warp?: number[][];
  offset?: number[][];
  element_bits?: number;
}

const fixture = JSON.parse(readFileSync(join(__dirname, 'fixtures', 'tutorial_layouts.json'), 'utf8'));
const entries: Entry[] = fixture.layouts;

function xor(bases: number[][], idx: number, rank: number): number[] {
  const out = new Array(rank).fill(0);
  bases.forEach((b, bit) => {
    if (idx & (1 << bit)) {
      b.forEach((x, d) => (out[d] ^= x));
    }
  });
  return out;
}

/** element (row-major) -> sorted list of "warp,lane,register" that hold it, over the data's index space */
function holders(e: Entry, at: (r: number, l: number, w: number) => number[]): Map<number, string[]> {
  const m = new Map<number, string[]>();
  for (let w = 0; w < 1 << e.warp!.length; w++) {
    for (let l = 0; l < 1 << e.lane!.length; l++) {
      for (let r = 0; r < 1 << e.register!.length; r++) {
        const c = at(r, l, w);
        const idx = c.reduce((a, x, d) => a * e.shape[d] + x, 0);
        m.set(idx, [...(m.get(idx) ?? []), `${w},${l}`]);
      }
    }
  }
  for (const v of m.values()) {
    v.sort();
  }
  return m;
}

describe('layouts.ts agrees with Triton on every tutorial layout', () => {
  it('there are tutorial layouts of each kind', () => {
    const kinds = new Set(entries.map(e => parseAttr(e.attr)?.kind));
    for (const k of ['blocked', 'nvidia_mma', 'linear', 'nvmma_shared', 'swizzled_shared']) {
      expect(kinds).toContain(k);
    }
  });
  for (const e of entries) {
    const attr = parseAttr(e.attr)!;
    it(`${e.kernel}: ${e.attr.slice(0, 60)} ${e.value_shape.join('x')} ${e.dtype}`, () => {
      if (e.offset) {
        if (e.shape.length !== 2) {
          return; // layouts.ts draws 2-D buffers only
        }
        const l = sharedLayout(attr, e.element_bits! / 8);
        const [rows, cols] = attr.kind === 'nvmma_shared' && l.order[0] === 0 ? [e.shape[1], e.shape[0]] : e.shape;
        for (let o = 0; o < 1 << e.offset.length; o++) {
          const [a, b] = xor(e.offset, o, 2);
          const [row, col] = l.order[0] === 1 ? [a, b] : [b, a];
          expect(sharedOffset(l, row, col, cols, rows)).toBe(o);
        }
        return;
      }
      const ll = toLinearLayout(attr, e.value_shape, a => e.declared[a] ?? null);
      // the same elements held by the same (warp, lane) pairs, the same number of times
      const ours = holders({ ...e, shape: e.value_shape, register: ll.register, lane: ll.lane, warp: ll.warp }, (r, l, w) =>
        apply(ll, r, l, w)
      );
      const theirs = holders(e, (r, l, w) => {
        const c = xor(e.register!, r, e.shape.length);
        xor(e.lane!, l, e.shape.length).forEach((x, d) => (c[d] ^= x));
        xor(e.warp!, w, e.shape.length).forEach((x, d) => (c[d] ^= x));
        return c;
      });
      expect(ours).toEqual(theirs);
    });
  }
});
