import { describe, expect, it } from 'vitest';
import {
  apply,
  bankConflicts,
  dtypeBytes,
  ownership,
  parseAttr,
  parseGluon,
  parseTensorType,
  sharedLayout,
  sharedOffset,
  toLinearLayout
} from '../src/layouts';

const BLOCKED = '#ttg.blocked<{sizePerThread = [1, 8], threadsPerWarp = [4, 8], warpsPerCTA = [4, 1], order = [1, 0]}>';
const MMA = '#ttg.nvidia_mma<{versionMajor = 3, versionMinor = 0, warpsPerCTA = [4, 1], instrShape = [16, 64, 16]}>';

function owner(attr: string, shape: number[], at: number[], resolve?: (a: string) => string | null) {
  const map = ownership(toLinearLayout(parseAttr(attr)!, shape, resolve));
  let idx = 0;
  for (let d = 0; d < shape.length; d++) {
    idx = idx * shape[d] + at[d];
  }
  return { o: map.owners[idx]!, copies: map.copies[idx], map };
}

describe('parsing', () => {
  it('parses TTGIR attributes', () => {
    expect(parseAttr(BLOCKED)).toEqual({
      kind: 'blocked',
      params: { sizePerThread: [1, 8], threadsPerWarp: [4, 8], warpsPerCTA: [4, 1], order: [1, 0] }
    });
    expect(parseAttr('#ttg.slice<{dim = 1, parent = #blocked}>')).toEqual({
      kind: 'slice',
      params: { dim: 1, parent: '#blocked' }
    });
    expect(parseAttr('#ttg.nvmma_shared<{swizzlingByteWidth = 128, transposed = false, elementBitWidth = 16}>')!.params).toEqual({
      swizzlingByteWidth: 128,
      transposed: false,
      elementBitWidth: 16
    });
    expect(parseAttr('#ttg.dot_op<{opIdx = 0, parent = #ttg.nvidia_mma<{versionMajor = 3, warpsPerCTA = [4, 1]}>, kWidth = 2}>')!.params.parent).toBe(
      '#ttg.nvidia_mma<{versionMajor = 3, warpsPerCTA = [4, 1]}>'
    );
    expect(parseAttr('not a layout')).toBeNull();
  });
  it('parses Gluon layouts and tensor types', () => {
    expect(parseGluon('BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0])')!.params).toEqual(parseAttr(BLOCKED)!.params);
    expect(parseGluon('gl.NVMMASharedLayout(swizzle_byte_width=128, element_bitwidth=16, rank=2)')!.params.swizzlingByteWidth).toBe(128);
    expect(parseTensorType('tensor<128x64xf16, #blocked1>')).toEqual({ shape: [128, 64], dtype: 'f16', encoding: '#blocked1' });
    expect(dtypeBytes('f16')).toBe(2);
    expect(dtypeBytes('torch.float8_e4m3fn')).toBe(1);
    expect(dtypeBytes('fp32')).toBe(4);
  });
});

describe('blocked', () => {
  it('maps elements to lanes, warps and registers', () => {
    expect(owner(BLOCKED, [16, 64], [0, 0]).o).toMatchObject({ warp: 0, lane: 0, register: 0 });
    expect(owner(BLOCKED, [16, 64], [0, 1]).o).toMatchObject({ lane: 0, register: 1 });
    expect(owner(BLOCKED, [16, 64], [0, 8]).o).toMatchObject({ lane: 1, register: 0 });
    expect(owner(BLOCKED, [16, 64], [1, 0]).o).toMatchObject({ lane: 8, register: 0 });
    expect(owner(BLOCKED, [16, 64], [4, 0]).o).toMatchObject({ warp: 1, lane: 0, thread: 32 });
    expect(owner(BLOCKED, [16, 64], [15, 63]).o).toMatchObject({ warp: 3, lane: 31, register: 7 });
  });
  it('wraps a larger tensor into more registers', () => {
    const { o, map } = owner(BLOCKED, [32, 64], [16, 0]);
    expect(o).toMatchObject({ warp: 0, lane: 0, register: 8 });
    expect(map.registers).toBe(16);
    expect(Array.from(map.copies).every(c => c === 1)).toBe(true);
  });
  it('broadcasts over a smaller tensor', () => {
    const { map } = owner(BLOCKED, [8, 64], [0, 0]);
    expect(Array.from(map.copies).every(c => c === 2)).toBe(true);
  });
  it('agrees with the closed form for a column-major order', () => {
    const attr = '#ttg.blocked<{sizePerThread = [4, 1], threadsPerWarp = [8, 4], warpsPerCTA = [1, 2], order = [0, 1]}>';
    const ll = toLinearLayout(parseAttr(attr)!, [32, 8], () => null);
    // thread t = lane; lane = (row/4) % 8 + 8 * (col % 4); warp = col / 4
    for (let lane = 0; lane < 32; lane++) {
      for (let warp = 0; warp < 2; warp++) {
        for (let reg = 0; reg < 4; reg++) {
          expect(apply(ll, reg, lane, warp)).toEqual([(lane % 8) * 4 + reg, Math.floor(lane / 8) + 4 * warp]);
        }
      }
    }
  });
});

describe('slice', () => {
  it('drops a dim and broadcasts over its lanes', () => {
    const resolve = (a: string) => (a === '#blocked' ? BLOCKED : null);
    const { o, copies, map } = owner('#ttg.slice<{dim = 1, parent = #blocked}>', [16], [5], resolve);
    expect(o).toMatchObject({ lane: 8, warp: 1, register: 0 });
    expect(copies).toBe(8);
    expect(map.registers).toBe(1);
    const col = owner('#ttg.slice<{dim = 0, parent = #blocked}>', [64], [9], resolve);
    expect(col.o).toMatchObject({ lane: 1, register: 1 });
    expect(col.copies).toBe(16); // 4 lane rows x 4 warps
  });
});

describe('nvidia_mma v3 (wgmma accumulator)', () => {
  it('places the 16x8 fragments and repeats across instrN', () => {
    const at = (r: number, c: number) => owner(MMA, [64, 64], [r, c]).o;
    expect(at(0, 0)).toMatchObject({ warp: 0, lane: 0, register: 0 });
    expect(at(0, 1)).toMatchObject({ lane: 0, register: 1 });
    expect(at(8, 0)).toMatchObject({ lane: 0, register: 2 });
    expect(at(1, 0)).toMatchObject({ lane: 4 });
    expect(at(0, 2)).toMatchObject({ lane: 1 });
    expect(at(0, 8)).toMatchObject({ lane: 0, register: 4 });
    expect(at(16, 0)).toMatchObject({ warp: 1 });
    expect(at(48, 0)).toMatchObject({ warp: 3 });
    const { map } = owner(MMA, [64, 64], [0, 0]);
    expect(map.registers).toBe(32);
    expect(Array.from(map.copies).every(c => c === 1)).toBe(true);
  });
  it('repeats warpgroups along M for a 128-row tile', () => {
    const { map, o } = owner(MMA, [128, 128], [64, 64]);
    expect(map.registers).toBe(128);
    expect(o).toMatchObject({ warp: 0, lane: 0 });
    expect(Array.from(map.copies).every(c => c === 1)).toBe(true);
  });
});

describe('dot_op (mma v3 parent, register A)', () => {
  it('covers a 64x16 A tile once with 8 registers per thread', () => {
    const attr = `#ttg.dot_op<{opIdx = 0, parent = #mma, kWidth = 2}>`;
    const resolve = (a: string) => (a === '#mma' ? MMA : null);
    const at = (r: number, c: number) => owner(attr, [64, 16], [r, c], resolve);
    expect(at(0, 0).o).toMatchObject({ lane: 0, register: 0 });
    expect(at(0, 1).o).toMatchObject({ lane: 0, register: 1 });
    expect(at(0, 2).o).toMatchObject({ lane: 1, register: 0 });
    expect(at(1, 0).o).toMatchObject({ lane: 4 });
    expect(at(8, 0).o).toMatchObject({ lane: 0, register: 2 });
    expect(at(0, 8).o).toMatchObject({ lane: 0, register: 4 });
    expect(at(16, 0).o).toMatchObject({ warp: 1 });
    expect(at(0, 0).map.registers).toBe(8);
    expect(Array.from(at(0, 0).map.copies).every(c => c === 1)).toBe(true);
  });
});

describe('shared layouts', () => {
  const nvmma = (sw: number) =>
    sharedLayout(parseAttr(`#ttg.nvmma_shared<{swizzlingByteWidth = ${sw}, transposed = false, elementBitWidth = 16}>`)!);
  it('128-byte swizzle XORs the 16-byte chunk with the row', () => {
    const l = nvmma(128);
    expect([l.vec, l.perPhase, l.maxPhase]).toEqual([8, 1, 8]);
    expect(sharedOffset(l, 0, 0, 64)).toBe(0);
    expect(sharedOffset(l, 1, 0, 64)).toBe(64 + 8); // chunk 0 of row 1 lives in chunk 1
    expect(sharedOffset(l, 3, 9, 64)).toBe(3 * 64 + (1 ^ 3) * 8 + 1);
    expect(bankConflicts(l, 64, 64)).toEqual({ columnWays: 1, rowWays: 1 });
  });
  it('64-byte swizzle repeats per two rows; blocks of width 32', () => {
    const l = nvmma(64);
    expect([l.vec, l.perPhase, l.maxPhase]).toEqual([8, 2, 4]);
    expect(sharedOffset(l, 2, 0, 64, 16)).toBe(2 * 32 + 8);
    expect(sharedOffset(l, 0, 32, 64, 16)).toBe(16 * 32); // the second 64-byte column block
  });
  it('no swizzle gives 8-way conflicts down a column', () => {
    expect(bankConflicts(nvmma(0), 64, 64).columnWays).toBe(8);
  });
  it('swizzled_shared follows vec / perPhase / maxPhase', () => {
    const sw = sharedLayout(parseAttr('#ttg.swizzled_shared<{vec = 8, perPhase = 1, maxPhase = 8, order = [1, 0]}>')!, 2);
    expect(bankConflicts(sw, 64, 64).columnWays).toBe(1);
    const plain = sharedLayout(parseAttr('#ttg.swizzled_shared<{vec = 1, perPhase = 1, maxPhase = 1, order = [1, 0]}>')!, 2);
    expect(bankConflicts(plain, 64, 64).columnWays).toBe(8);
  });
});
