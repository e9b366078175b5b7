/**
 * Triton GPU layouts as ownership maps: which (warp, lane, register) holds each element
 * of a tensor, and where each element of a shared-memory buffer lives (swizzle, banks).
 *
 * Distributed layouts are built as Triton's linear layouts are: each input bit of the
 * register, lane and warp index contributes one basis vector (a coordinate offset) and
 * the element an input names is the XOR of the bases of its set bits. Power-of-two
 * shapes only, as in Triton. Covered: blocked, slice of any covered parent, nvidia_mma
 * (v2 and v3/wgmma accumulators), dot_op of nvidia_mma (best effort), linear (from its
 * bases), and swizzled_shared / nvmma_shared for shared memory.
 */

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

// --- attribute parsing -------------------------------------------------------------

export interface ParsedAttr {
  kind: string;
  params: { [k: string]: unknown };
}

/** Parse `[1, 8]` / `[[0, 1], [2, 0]]` / numbers / booleans / `#alias` / bare words. */
function parseValue(s: string): unknown {
  const t = s.trim();
  if (t.startsWith('[')) {
    try {
      return JSON.parse(t);
    } catch {
      return t;
    }
  }
  if (/^-?\d+$/.test(t)) {
    return parseInt(t, 10);
  }
  if (t === 'true' || t === 'false') {
    return t === 'true';
  }
  return t;
}

/** Split `a = 1, b = [1, 2], c = #x<{...}>` at top-level commas. */
function splitTop(s: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let cur = '';
  for (const ch of s) {
    if ('[{<('.includes(ch)) {
      depth++;
    } else if (']}>)'.includes(ch)) {
      depth--;
    }
    if (ch === ',' && depth === 0) {
      out.push(cur);
      cur = '';
    } else {
      cur += ch;
    }
  }
  if (cur.trim()) {
    out.push(cur);
  }
  return out;
}

/**
 * Parse a TTGIR layout attribute: `#ttg.blocked<{sizePerThread = [1, 8], ...}>`,
 * `#ttg.nvidia_mma<{versionMajor = 3, ...}>`, `#ttg.slice<{dim = 1, parent = #blocked}>`,
 * `#ttg.dot_op<{opIdx = 0, parent = #mma, kWidth = 2}>`, `#ttg.nvmma_shared<{...}>`,
 * `#ttg.swizzled_shared<{...}>`, `#ttg.linear<{register = [[0, 1]], ...}>`.
 */
export function parseAttr(attr: string): ParsedAttr | null {
  const m = /#(?:ttg|triton_gpu|ttng)\.(\w+)<\s*\{?([\s\S]*?)\}?\s*>\s*$/.exec(attr.trim());
  if (!m) {
    return null;
  }
  const params: { [k: string]: unknown } = {};
  for (const part of splitTop(m[2])) {
    const eq = part.indexOf('=');
    if (eq < 0) {
      continue;
    }
    params[part.slice(0, eq).trim()] = parseValue(part.slice(eq + 1));
  }
  return { kind: normKind(m[1]), params };
}

/** Parse Gluon's Python form: `BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0])`. */
export function parseGluon(text: string): ParsedAttr | null {
  const m = /^\s*(?:\w+\.)*(\w+)\(([\s\S]*)\)\s*$/.exec(text);
  if (!m) {
    return null;
  }
  const args = splitTop(m[2]).map(a => a.trim());
  const pos: unknown[] = [];
  const kw: { [k: string]: unknown } = {};
  for (const a of args) {
    const eq = /^(\w+)\s*=\s*([\s\S]+)$/.exec(a);
    if (eq && !a.startsWith('[')) {
      kw[eq[1]] = parseValue(eq[2].replace(/True/g, 'true').replace(/False/g, 'false'));
    } else {
      pos.push(parseValue(a.replace(/True/g, 'true').replace(/False/g, 'false')));
    }
  }
  const get = (name: string, i: number) => (name in kw ? kw[name] : pos[i]);
  switch (m[1]) {
    case 'BlockedLayout':
      return {
        kind: 'blocked',
        params: {
          sizePerThread: get('size_per_thread', 0),
          threadsPerWarp: get('threads_per_warp', 1),
          warpsPerCTA: get('warps_per_cta', 2),
          order: get('order', 3)
        }
      };
    case 'NVMMADistributedLayout':
      return {
        kind: 'nvidia_mma',
        params: {
          versionMajor: (get('version', 0) as number[] | undefined)?.[0],
          warpsPerCTA: get('warps_per_cta', 1),
          instrShape: get('instr_shape', 2)
        }
      };
    case 'NVMMASharedLayout':
      return {
        kind: 'nvmma_shared',
        params: {
          swizzlingByteWidth: get('swizzle_byte_width', 0),
          elementBitWidth: get('element_bitwidth', 1),
          transposed: get('transposed', 3) ?? false
        }
      };
    case 'SwizzledSharedLayout':
      return {
        kind: 'swizzled_shared',
        params: {
          vec: get('vec', 0),
          perPhase: get('per_phase', 1),
          maxPhase: get('max_phase', 2),
          order: get('order', 3)
        }
      };
    default:
      return null;
  }
}

function normKind(k: string): string {
  if (k === 'mma' || k === 'nvidia_mma') {
    return 'nvidia_mma';
  }
  if (k === 'dot_operand' || k === 'dot_op') {
    return 'dot_op';
  }
  if (k === 'shared' || k === 'swizzled_shared') {
    return 'swizzled_shared';
  }
  return k;
}

// --- linear layouts ----------------------------------------------------------------

const log2 = (n: number) => Math.round(Math.log2(n));
const isPow2 = (n: number) => n > 0 && (n & (n - 1)) === 0;

function unit(rank: number, dim: number, value: number): Vec {
  const v = new Array(rank).fill(0);
  v[dim] = value;
  return v;
}

function nums(v: unknown, name: string): number[] {
  if (!Array.isArray(v) || !v.every(x => typeof x === 'number')) {
    throw new Error(`layout parameter ${name} is missing or not a list of integers`);
  }
  return v as number[];
}

/**
 * Fit a layout built for its own tile onto `shape`: bases reaching past the shape
 * become zero (broadcast), and a shape larger than the tile wraps into more registers,
 * dimension by dimension in `order` (fastest first).
 */
function fitToShape(ll: LinearLayout, shape: number[], order: number[]): LinearLayout {
  const rank = shape.length;
  const clip = (bs: Vec[]) => bs.map(b => b.map((x, d) => (x >= shape[d] ? 0 : x)));
  const out: LinearLayout = {
    shape,
    register: clip(ll.register),
    lane: clip(ll.lane),
    warp: clip(ll.warp)
  };
  for (const d of order) {
    // Size covered so far along d (the span of its bases).
    let covered = 1;
    for (const b of [...out.register, ...out.lane, ...out.warp]) {
      if (b[d] > 0) {
        covered = Math.max(covered, b[d] * 2);
      }
    }
    while (covered < shape[d]) {
      out.register.push(unit(rank, d, covered));
      covered *= 2;
    }
  }
  return out;
}

export function blockedLayout(params: { [k: string]: unknown }, shape: number[]): LinearLayout {
  const spt = nums(params.sizePerThread, 'sizePerThread');
  const tpw = nums(params.threadsPerWarp, 'threadsPerWarp');
  const wpc = nums(params.warpsPerCTA, 'warpsPerCTA');
  const order = nums(params.order, 'order');
  const rank = spt.length;
  const register: Vec[] = [];
  const lane: Vec[] = [];
  const warp: Vec[] = [];
  for (const d of order) {
    for (let b = 0; b < log2(spt[d]); b++) {
      register.push(unit(rank, d, 1 << b));
    }
  }
  for (const d of order) {
    for (let b = 0; b < log2(tpw[d]); b++) {
      lane.push(unit(rank, d, spt[d] << b));
    }
  }
  for (const d of order) {
    for (let b = 0; b < log2(wpc[d]); b++) {
      warp.push(unit(rank, d, (spt[d] * tpw[d]) << b));
    }
  }
  return fitToShape({ shape, register, lane, warp }, shape, order);
}

/**
 * NVIDIA MMA accumulator (v2: mma.sync, v3: wgmma). Per warp a 16x8 tile: lane = 4*row + col/2,
 * two adjacent columns per register pair, rows +8 in the second pair; v3 repeats the 8-column
 * tile across instrShape[1] columns. Warps go down M first (a warpgroup is 4 warps x 16 rows).
 */
export function mmaLayout(params: { [k: string]: unknown }, shape: number[]): LinearLayout {
  const version = Number(params.versionMajor ?? 2);
  const wpc = nums(params.warpsPerCTA, 'warpsPerCTA');
  const instr = Array.isArray(params.instrShape) ? (params.instrShape as number[]) : [16, 8];
  const tileN = version >= 3 ? instr[1] ?? 8 : 8;
  const register: Vec[] = [
    [0, 1],
    [8, 0]
  ];
  for (let n = 8; n < tileN; n *= 2) {
    register.push([0, n]);
  }
  const lane: Vec[] = [
    [0, 2],
    [0, 4],
    [1, 0],
    [2, 0],
    [4, 0]
  ];
  const warp: Vec[] = [];
  for (let b = 0; b < log2(wpc[0]); b++) {
    warp.push([16 << b, 0]);
  }
  for (let b = 0; b < log2(wpc[1] ?? 1); b++) {
    warp.push([0, tileN << b]);
  }
  return fitToShape({ shape, register, lane, warp }, shape, [1, 0]);
}

/**
 * Register operand of an MMA (opIdx 0: A, [M, K]; opIdx 1: B, [K, N]). kWidth contiguous
 * K elements per register group; per warp A covers 16 x 8*kWidth... best effort for
 * the common cases (fp16/bf16 kWidth 2, fp8 kWidth 4), warps as in the parent.
 */
export function dotOperandLayout(
  params: { [k: string]: unknown },
  parent: ParsedAttr,
  shape: number[]
): LinearLayout {
  const opIdx = Number(params.opIdx ?? 0);
  const kWidth = Number(params.kWidth ?? 2);
  const wpc = nums(parent.params.warpsPerCTA, 'warpsPerCTA');
  // Work in (nonK, K) coordinates, then place them into the operand's (row, col).
  const toOut = (nonK: number, k: number): Vec => (opIdx === 0 ? [nonK, k] : [k, nonK]);
  const register: Vec[] = [];
  for (let i = 1; i < kWidth; i *= 2) {
    register.push(toOut(0, i));
  }
  const lane: Vec[] = [toOut(0, kWidth), toOut(0, 2 * kWidth), toOut(1, 0), toOut(2, 0), toOut(4, 0)];
  if (opIdx === 0) {
    register.push(toOut(8, 0));
  }
  register.push(toOut(0, 4 * kWidth));
  const warp: Vec[] = [];
  if (opIdx === 0) {
    for (let b = 0; b < log2(wpc[0]); b++) {
      warp.push(toOut(16 << b, 0));
    }
    for (let b = 0; b < log2(wpc[1] ?? 1); b++) {
      warp.push([0, 0]);
    }
  } else {
    for (let b = 0; b < log2(wpc[0]); b++) {
      warp.push([0, 0]);
    }
    for (let b = 0; b < log2(wpc[1] ?? 1); b++) {
      warp.push(toOut(8 << b, 0));
    }
  }
  return fitToShape({ shape, register, lane, warp }, shape, opIdx === 0 ? [1, 0] : [0, 1]);
}

export function linearFromBases(params: { [k: string]: unknown }, shape: number[]): LinearLayout {
  const get = (k: string) => (Array.isArray(params[k]) ? (params[k] as Vec[]) : []);
  return { shape, register: get('register'), lane: get('lane'), warp: get('warp') };
}

export type Resolver = (alias: string) => string | null;

/**
 * The linear layout of a distributed layout attribute for `shape`. `resolve` turns
 * an alias (`#blocked`) into its attribute text, for slice / dot_op parents.
 */
export function toLinearLayout(
  attr: ParsedAttr,
  shape: number[],
  resolve: Resolver = () => null
): LinearLayout {
  if (!shape.length || !shape.every(isPow2)) {
    throw new Error(`shape [${shape.join(', ')}] is not a list of powers of two`);
  }
  const parentOf = (): ParsedAttr => {
    const p = attr.params.parent;
    let text = typeof p === 'string' ? p : '';
    if (text && !text.includes('<')) {
      text = resolve(text) ?? '';
    }
    const parsed = text ? parseAttr(text) : null;
    if (!parsed) {
      throw new Error(`cannot resolve parent layout ${String(p)}`);
    }
    return parsed;
  };
  switch (attr.kind) {
    case 'blocked':
      return blockedLayout(attr.params, shape);
    case 'nvidia_mma':
      if (shape.length !== 2) {
        throw new Error('nvidia_mma layouts are 2-D');
      }
      return mmaLayout(attr.params, shape);
    case 'linear':
      return linearFromBases(attr.params, shape);
    case 'slice': {
      const dim = Number(attr.params.dim);
      const parentShape = [...shape.slice(0, dim), 1, ...shape.slice(dim)];
      const parent = toLinearLayout(parentOf(), parentShape, resolve);
      const drop = (bs: Vec[]) => bs.map(b => b.filter((_, d) => d !== dim));
      const register = drop(parent.register).filter(b => b.some(x => x !== 0));
      return { shape, register, lane: drop(parent.lane), warp: drop(parent.warp) };
    }
    case 'dot_op': {
      const parent = parentOf();
      if (parent.kind !== 'nvidia_mma') {
        // dot_op of a blocked parent (FMA dot): the parent's own layout is a fair picture.
        return toLinearLayout(parent, shape, resolve);
      }
      return dotOperandLayout(attr.params, parent, shape);
    }
    default:
      throw new Error(`no ownership drawing for ${attr.kind} layouts yet`);
  }
}

/** Element coordinates held by (register, lane, warp). */
export function apply(ll: LinearLayout, register: number, lane: number, warp: number): Vec {
  const out = new Array(ll.shape.length).fill(0);
  const add = (bases: Vec[], idx: number) => {
    for (let b = 0; b < bases.length; b++) {
      if (idx & (1 << b)) {
        for (let d = 0; d < out.length; d++) {
          out[d] ^= bases[b][d];
        }
      }
    }
  };
  add(ll.register, register);
  add(ll.lane, lane);
  add(ll.warp, warp);
  return out;
}

export function ownership(ll: LinearLayout): OwnershipMap {
  const total = ll.shape.reduce((a, b) => a * b, 1);
  const owners: Array<Owner | null> = new Array(total).fill(null);
  const copies = new Uint16Array(total);
  const nReg = 1 << ll.register.length;
  const nLane = 1 << ll.lane.length;
  const nWarp = 1 << ll.warp.length;
  const strides: number[] = [];
  let s = 1;
  for (let d = ll.shape.length - 1; d >= 0; d--) {
    strides[d] = s;
    s *= ll.shape[d];
  }
  for (let w = 0; w < nWarp; w++) {
    for (let l = 0; l < nLane; l++) {
      for (let r = 0; r < nReg; r++) {
        const c = apply(ll, r, l, w);
        let idx = 0;
        for (let d = 0; d < c.length; d++) {
          idx += (c[d] % ll.shape[d]) * strides[d];
        }
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

export interface SharedLayout {
  kind: 'swizzled_shared' | 'nvmma_shared';
  /** Elements per 16-byte (or vec) chunk. */
  vec: number;
  perPhase: number;
  maxPhase: number;
  /** Row length before the pattern repeats (nvmma: the swizzle width in elements). */
  elemBytes: number;
  /** Fastest-varying dimension first. */
  order: number[];
  swizzleBytes: number;
}

export function sharedLayout(attr: ParsedAttr, elemBytes = 2): SharedLayout {
  const p = attr.params;
  if (attr.kind === 'nvmma_shared') {
    const bits = Number(p.elementBitWidth ?? elemBytes * 8);
    const eb = Math.max(1, bits / 8);
    const sw = Number(p.swizzlingByteWidth ?? 128);
    const transposed = p.transposed === true;
    return {
      kind: 'nvmma_shared',
      vec: 16 / eb,
      perPhase: sw ? 128 / sw : 1,
      maxPhase: sw ? sw / 16 : 1,
      elemBytes: eb,
      order: transposed ? [0, 1] : [1, 0],
      swizzleBytes: sw
    };
  }
  if (attr.kind === 'swizzled_shared') {
    return {
      kind: 'swizzled_shared',
      vec: Number(p.vec ?? 1),
      perPhase: Number(p.perPhase ?? 1),
      maxPhase: Number(p.maxPhase ?? 1),
      elemBytes,
      order: Array.isArray(p.order) ? (p.order as number[]) : [1, 0],
      swizzleBytes: 0
    };
  }
  throw new Error(`${attr.kind} is not a shared layout`);
}

/**
 * Element offset (in elements, from the buffer start) of (row, col) in a 2-D buffer,
 * where `col` runs along the contiguous dimension (order[0]) and `cols` is its length.
 */
export function sharedOffset(
  l: SharedLayout,
  row: number,
  col: number,
  cols: number,
  rows = 64
): number {
  if (l.kind === 'nvmma_shared') {
    if (!l.swizzleBytes) {
      return row * cols + col;
    }
    // The buffer is stored as column blocks `swizzleBytes` wide, each rows x width.
    const width = Math.min(cols, l.swizzleBytes / l.elemBytes);
    const block = Math.floor(col / width);
    const c = col % width;
    const phase = Math.floor(row / l.perPhase) % l.maxPhase;
    const chunk = Math.floor(c / l.vec) ^ phase;
    return block * rows * width + row * width + chunk * l.vec + (c % l.vec);
  }
  const phase = Math.floor(row / l.perPhase) % l.maxPhase;
  const chunk = Math.floor(col / l.vec) ^ phase;
  return row * cols + chunk * l.vec + (col % l.vec);
}

export function bankOf(l: SharedLayout, offset: number): number {
  return Math.floor((offset * l.elemBytes) / 4) % 32;
}

export interface ConflictReport {
  /** Reading one 16-byte vector per thread down a column of chunks (ldmatrix / wgmma style). */
  columnWays: number;
  /** Reading a row, 4 bytes per thread, 32 threads. */
  rowWays: number;
}

/**
 * n-way bank conflicts of two access patterns on a [rows, cols] buffer (cols along the
 * contiguous dimension): 8 threads reading the same 16-byte chunk column from 8
 * consecutive rows (what ldmatrix and wgmma do per phase), and a warp reading one row.
 */
export function bankConflicts(l: SharedLayout, rows: number, cols: number): ConflictReport {
  const chunkElems = Math.max(1, 16 / l.elemBytes);
  let columnWays = 1;
  const nChunks = Math.max(1, Math.floor(cols / chunkElems));
  for (let c = 0; c < nChunks; c++) {
    for (let r0 = 0; r0 + 1 <= rows; r0 += 8) {
      const perBank = new Map<number, Set<number>>();
      for (let r = r0; r < Math.min(rows, r0 + 8); r++) {
        const off = sharedOffset(l, r, c * chunkElems, cols, rows);
        const word = Math.floor((off * l.elemBytes) / 4);
        for (let k = 0; k < 4; k++) {
          const bank = (word + k) % 32;
          let s = perBank.get(bank);
          if (!s) {
            s = new Set();
            perBank.set(bank, s);
          }
          s.add(word + k);
        }
      }
      for (const s of perBank.values()) {
        columnWays = Math.max(columnWays, s.size);
      }
    }
  }
  let rowWays = 1;
  const perWord = Math.max(1, 4 / l.elemBytes);
  for (let r = 0; r < Math.min(rows, 16); r++) {
    const perBank = new Map<number, Set<number>>();
    for (let t = 0; t < 32 && t * perWord < cols; t++) {
      const off = sharedOffset(l, r, t * perWord, cols, rows);
      const word = Math.floor((off * l.elemBytes) / 4);
      let s = perBank.get(word % 32);
      if (!s) {
        s = new Set();
        perBank.set(word % 32, s);
      }
      s.add(word);
    }
    for (const s of perBank.values()) {
      rowWays = Math.max(rowWays, s.size);
    }
  }
  return { columnWays, rowWays };
}

/** Bytes of one element of an MLIR / torch dtype name. */
export function dtypeBytes(dtype: string): number {
  const d = dtype.toLowerCase();
  if (/f8|fp8|i8|int8|uint8|e4m3|e5m2/.test(d)) {
    return 1;
  }
  if (/f16|bf16|fp16|i16|half|bfloat/.test(d)) {
    return 2;
  }
  if (/f64|i64|fp64|double|int64/.test(d)) {
    return 8;
  }
  if (/i1\b|bool/.test(d)) {
    return 1;
  }
  return 4;
}

/** Shape and element type from `tensor<128x64xf16, #blocked>` / `!ttg.memdesc<...>`. */
export function parseTensorType(t: string): { shape: number[]; dtype: string; encoding: string } | null {
  const m = /<\s*((?:\d+x)+)([\w]+)\s*(?:,\s*(#[\w.]+(?:<[^>]*>)?))?/.exec(t);
  if (!m) {
    return null;
  }
  const shape = m[1]
    .split('x')
    .filter(Boolean)
    .map(x => parseInt(x, 10));
  return { shape, dtype: m[2], encoding: m[3] ?? '' };
}
