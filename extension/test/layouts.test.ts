/**
 * Ownership maps and shared-memory maps drawn from linear layouts that Triton's C++ computed
 * (fixtures/tutorial_layouts.json, written by scripts/layout_fixture.py): the cases' known shapes, and
 * every layout of the tutorials' recorded Reports.
 */
import { readFileSync } from 'fs';
import { join } from 'path';
import { describe, expect, it } from 'vitest';
import {
  OwnershipMap,
  apply,
  bankConflicts,
  distributed,
  ownership,
  sharedMap,
  sharedOffset
} from '../src/layouts';
import type { LinearLayout as LinearData } from '../src/schema';

const fixture = JSON.parse(readFileSync(join(__dirname, 'fixtures', 'tutorial_layouts.json'), 'utf8'));
const cases: { [name: string]: LinearData & { attr: string } } = fixture.cases;
const tutorials: Array<LinearData & { kernel: string; attr: string }> = fixture.layouts;

function map(name: string): OwnershipMap {
  return ownership(distributed(cases[name])!);
}

function owner(name: string, at: number[]) {
  const m = map(name);
  const idx = at.reduce((a, x, d) => a * m.shape[d] + x, 0);
  return { o: m.owners[idx]!, copies: m.copies[idx], map: m };
}

describe('blocked', () => {
  it('maps elements to lanes, warps and registers', () => {
    const at = (r: number, c: number) => owner('blocked 16x64', [r, c]).o;
    expect(at(0, 0)).toMatchObject({ warp: 0, lane: 0, register: 0 });
    expect(at(0, 1)).toMatchObject({ lane: 0, register: 1 });
    expect(at(0, 8)).toMatchObject({ lane: 1, register: 0 });
    expect(at(1, 0)).toMatchObject({ lane: 8, register: 0 });
    expect(at(4, 0)).toMatchObject({ warp: 1, lane: 0, thread: 32 });
    expect(at(15, 63)).toMatchObject({ warp: 3, lane: 31, register: 7 });
  });
  it('wraps a larger tensor into more registers', () => {
    const { o, map: m } = owner('blocked 32x64', [16, 0]);
    expect(o).toMatchObject({ warp: 0, lane: 0, register: 8 });
    expect(m.registers).toBe(16);
    expect(Array.from(m.copies).every(c => c === 1)).toBe(true);
  });
  it('broadcasts over a smaller tensor', () => {
    expect(Array.from(map('blocked 8x64').copies).every(c => c === 2)).toBe(true);
  });
  it('agrees with the closed form for a column-major order', () => {
    const ll = distributed(cases['blocked_col 32x8'])!;
    // lane = (row/4) % 8 + 8 * (col % 4); warp = col / 4
    for (let lane = 0; lane < 32; lane++) {
      for (let warp = 0; warp < 2; warp++) {
        for (let reg = 0; reg < 4; reg++) {
          expect(apply(ll, reg, lane, warp)).toEqual([(lane % 8) * 4 + reg, Math.floor(lane / 8) + 4 * warp]);
        }
      }
    }
  });
});

describe('nvidia_mma v3 (wgmma accumulator)', () => {
  it('places the 16x8 fragments and repeats across instrN', () => {
    const at = (r: number, c: number) => owner('mma_v3 64x64', [r, c]).o;
    expect(at(0, 0)).toMatchObject({ warp: 0, lane: 0, register: 0 });
    expect(at(0, 1)).toMatchObject({ lane: 0, register: 1 });
    expect(at(8, 0)).toMatchObject({ lane: 0, register: 2 });
    expect(at(1, 0)).toMatchObject({ lane: 4 });
    expect(at(0, 2)).toMatchObject({ lane: 1 });
    expect(at(0, 8)).toMatchObject({ lane: 0, register: 4 });
    expect(at(16, 0)).toMatchObject({ warp: 1 });
    expect(at(48, 0)).toMatchObject({ warp: 3 });
    expect(map('mma_v3 64x64').registers).toBe(32);
    expect(Array.from(map('mma_v3 64x64').copies).every(c => c === 1)).toBe(true);
  });
  it('repeats warpgroups along M for a 128-row tile', () => {
    const { map: m, o } = owner('mma_v3 128x128', [64, 64]);
    expect(m.registers).toBe(128);
    expect(o).toMatchObject({ warp: 0, lane: 0 });
    expect(Array.from(m.copies).every(c => c === 1)).toBe(true);
  });
});

describe('shared layouts', () => {
  const shared = (name: string) => sharedMap(cases[name])!;
  it('128-byte swizzle XORs the 16-byte chunk with the row', () => {
    const l = shared('nvmma_128 64x64');
    expect([l.rows, l.cols, l.elemBytes, l.contiguousLast]).toEqual([64, 64, 2, true]);
    expect(sharedOffset(l, 0, 0)).toBe(0);
    expect(sharedOffset(l, 1, 0)).toBe(64 + 8); // chunk 0 of row 1 lives in chunk 1
    expect(sharedOffset(l, 3, 9)).toBe(3 * 64 + (1 ^ 3) * 8 + 1);
    expect(bankConflicts(l)).toEqual({ columnWays: 1, rowWays: 1 });
  });
  it('64-byte swizzle repeats per two rows; blocks of width 32', () => {
    const l = shared('nvmma_64 16x64');
    expect(sharedOffset(l, 2, 0)).toBe(2 * 32 + 8);
    expect(sharedOffset(l, 0, 32)).toBe(16 * 32); // the second 64-byte column block
  });
  it('a transposed buffer is drawn with its contiguous dim as columns', () => {
    const l = shared('nvmma_128_t 64x64');
    expect(l.contiguousLast).toBe(false);
    expect(sharedOffset(l, 1, 0)).toBe(64 + 8);
  });
  it('no swizzle gives 8-way conflicts down a column', () => {
    expect(bankConflicts(shared('nvmma_0 64x64')).columnWays).toBe(8);
  });
  it('swizzled_shared follows vec / perPhase / maxPhase', () => {
    expect(bankConflicts(shared('swizzled_8 64x64')).columnWays).toBe(1);
    expect(bankConflicts(shared('swizzled_1 64x64')).columnWays).toBe(8);
  });
  it('a distributed entry is no shared map and the other way round', () => {
    expect(sharedMap(cases['blocked 16x64'])).toBeNull();
    expect(distributed(cases['nvmma_128 64x64'])).toBeNull();
    expect(distributed({ alias: '#x', value_shape: [4], dtype: 'f16', reason: 'none' })).toBeNull();
  });
});

describe('every layout of the tutorials draws from its data', () => {
  it('there are many', () => {
    expect(tutorials.length).toBeGreaterThan(50);
  });
  for (const e of tutorials) {
    it(`${e.kernel}: ${e.attr.slice(0, 50)} ${e.value_shape.join('x')} ${e.dtype}`, () => {
      const d = distributed(e);
      if (d) {
        // every element is held, by as many (warp, lane, register) as the bases broadcast it to
        const m = ownership(d);
        expect(m.owners.every(o => o !== null)).toBe(true);
        expect(new Set(m.copies).size).toBe(1);
        return;
      }
      const s = sharedMap(e)!;
      expect(s).not.toBeNull();
      // one buffer's offsets are a permutation of 0 .. size-1
      const offsets = Array.from(s.offsets).sort((a, b) => a - b);
      expect(offsets).toEqual(offsets.map((_, i) => i));
    });
  }
});
