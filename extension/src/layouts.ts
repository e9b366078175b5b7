/**
 * Triton GPU layouts as ownership maps, drawn from the linear layouts the Python side computed with
 * Triton's own C++ (the Report's layouts.linear): which (warp, lane, register) holds each element of a
 * tensor, and where each element of a shared-memory buffer is stored (swizzle, banks). Nothing here reads
 * IR text: each input bit of the register, lane and warp index (or of a shared offset) contributes one
 * basis vector, and the element an input names is the XOR of the bases of its set bits.
 */
import type { LinearLayout as LinearData } from './schema';

export type Vec = number[];

export interface LinearLayout {
  /** Output shape (the tensor's shape). */
  shape: number[];
  register: Vec[];
  lane: Vec[];
  warp: Vec[];
}

export interface Owner {
  warp: number;
  lane: number;
  register: number;
  /** thread = warp * 32 + lane */
  thread: number;
}

export interface OwnershipMap {
  shape: number[];
  numWarps: number;
  lanes: number;
  registers: number;
  /** One entry per element (row-major): the first owner, or null if nobody holds it. */
  owners: Array<Owner | null>;
  /** How many (warp, lane, register) triples hold each element (>1 is broadcast). */
  copies: Uint16Array;
}

/** The distributed layout of an entry of layouts.linear, or null when it is a shared one or has no bases. */
export function distributed(d: LinearData): LinearLayout | null {
  if (!d.shape || !d.register || !d.lane || !d.warp) {
    return null;
  }
  return { shape: d.shape, register: d.register, lane: d.lane, warp: d.warp };
}

function xorInto(out: number[], bases: Vec[], idx: number): void {
  for (let b = 0; b < bases.length; b++) {
    if (idx & (1 << b)) {
      for (let d = 0; d < out.length; d++) {
        out[d] ^= bases[b][d];
      }
    }
  }
}

/** Element coordinates held by (register, lane, warp). */
export function apply(ll: LinearLayout, register: number, lane: number, warp: number): Vec {
  const out = new Array(ll.shape.length).fill(0);
  xorInto(out, ll.register, register);
  xorInto(out, ll.lane, lane);
  xorInto(out, ll.warp, warp);
  return out;
}

function rowMajor(shape: number[], c: Vec): number {
  let idx = 0;
  for (let d = 0; d < shape.length; d++) {
    idx = idx * shape[d] + (c[d] % shape[d]);
  }
  return idx;
}

export function ownership(ll: LinearLayout): OwnershipMap {
  const total = ll.shape.reduce((a, b) => a * b, 1);
  const owners: Array<Owner | null> = new Array(total).fill(null);
  const copies = new Uint16Array(total);
  const nReg = 1 << ll.register.length;
  const nLane = 1 << ll.lane.length;
  const nWarp = 1 << ll.warp.length;
  for (let w = 0; w < nWarp; w++) {
    for (let l = 0; l < nLane; l++) {
      for (let r = 0; r < nReg; r++) {
        const idx = rowMajor(ll.shape, apply(ll, r, l, w));
        if (!owners[idx]) {
          owners[idx] = { warp: w, lane: l, register: r, thread: w * nLane + l };
        }
        if (copies[idx] < 65535) {
          copies[idx]++;
        }
      }
    }
  }
  return { shape: ll.shape, numWarps: nWarp, lanes: nLane, registers: nReg, owners, copies };
}

// --- shared memory -----------------------------------------------------------------

/**
 * One shared-memory buffer as stored: the element offset of every element, seen as a 2-D grid in storage
 * order (columns run along the dimension that offset 1 steps along, so a row of the grid is contiguous
 * before swizzling). N-D buffers show their last two dimensions.
 */
export interface SharedMap {
  rows: number;
  cols: number;
  elemBytes: number;
  /** True when the grid's columns are the buffer's last dimension (else the grid is transposed). */
  contiguousLast: boolean;
  /** Element offset (from the buffer start) of grid cell (row, col), row-major over rows x cols. */
  offsets: Int32Array;
}

/** The shared map of an entry of layouts.linear, or null when it is a distributed one or has no bases. */
export function sharedMap(d: LinearData): SharedMap | null {
  if (!d.shape || !d.offset) {
    return null;
  }
  const shape = d.shape.length >= 2 ? d.shape.slice(-2) : [1, d.shape[0] ?? 1];
  const last = (b: Vec) => b.slice(-2);
  const bases = d.offset.map(b => (d.shape!.length >= 2 ? last(b) : [0, b[0] ?? 0]));
  // offset 1 steps along the contiguous dimension; a buffer with no bases is one element
  const contiguousLast = !bases.length || bases[0][1] !== 0;
  const [rows, cols] = contiguousLast ? shape : [shape[1], shape[0]];
  const offsets = new Int32Array(rows * cols).fill(-1);
  for (let o = 0; o < 1 << bases.length; o++) {
    const c = [0, 0];
    xorInto(c, bases, o);
    const [r, col] = contiguousLast ? c : [c[1], c[0]];
    if (r < rows && col < cols && offsets[r * cols + col] < 0) {
      offsets[r * cols + col] = o;
    }
  }
  return { rows, cols, elemBytes: Math.max(1, (d.element_bits ?? 16) / 8), contiguousLast, offsets };
}

/** Element offset of grid cell (row, col) (storage order: col along the contiguous dimension). */
export function sharedOffset(m: SharedMap, row: number, col: number): number {
  return m.offsets[row * m.cols + col];
}

export function bankOf(m: SharedMap, offset: number): number {
  return Math.floor((offset * m.elemBytes) / 4) % 32;
}

export interface ConflictReport {
  /** Reading one 16-byte vector per thread down a column of chunks (ldmatrix / wgmma style). */
  columnWays: number;
  /** Reading a row, 4 bytes per thread, 32 threads. */
  rowWays: number;
}

/** The largest number of distinct 4-byte words any one bank serves among `words`. */
function ways(words: number[]): number {
  const perBank = new Map<number, Set<number>>();
  for (const w of words) {
    const s = perBank.get(w % 32) ?? new Set<number>();
    s.add(w);
    perBank.set(w % 32, s);
  }
  return Math.max(1, ...Array.from(perBank.values(), s => s.size));
}

/**
 * n-way bank conflicts of two access patterns on the buffer: 8 threads reading the same 16-byte chunk
 * column from 8 consecutive rows (what ldmatrix and wgmma do per phase), and a warp reading one row.
 */
export function bankConflicts(m: SharedMap): ConflictReport {
  const word = (r: number, c: number) => Math.floor((sharedOffset(m, r, c) * m.elemBytes) / 4);
  const chunkElems = Math.max(1, 16 / m.elemBytes);
  let columnWays = 1;
  for (let c = 0; c < m.cols; c += chunkElems) {
    for (let r0 = 0; r0 < m.rows; r0 += 8) {
      const words: number[] = [];
      for (let r = r0; r < Math.min(m.rows, r0 + 8); r++) {
        for (let k = 0; k < 4; k++) {
          words.push(word(r, c) + k);
        }
      }
      columnWays = Math.max(columnWays, ways(words));
    }
  }
  let rowWays = 1;
  const perWord = Math.max(1, 4 / m.elemBytes);
  for (let r = 0; r < Math.min(m.rows, 16); r++) {
    const words: number[] = [];
    for (let t = 0; t < 32 && t * perWord < m.cols; t++) {
      words.push(word(r, t * perWord));
    }
    rowWays = Math.max(rowWays, ways(words));
  }
  return { columnWays, rowWays };
}
