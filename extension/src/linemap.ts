/**
 * Line linking between the user's source and the compiler stages.
 *
 * A stage's map is `user line -> stage lines` (1-based). Hovering a source line
 * highlights its stage lines; hovering a stage line highlights the user lines it
 * came from and, in a second stage shown beside it, every line those user lines map to.
 */

export class LineIndex {
  readonly forward: Map<number, number[]>;
  readonly reverse: Map<number, number[]>;

  constructor(forward: Map<number, number[]>) {
    this.forward = forward;
    const rev = new Map<number, Set<number>>();
    for (const [user, lines] of forward) {
      for (const l of lines) {
        let s = rev.get(l);
        if (!s) {
          s = new Set();
          rev.set(l, s);
        }
        s.add(user);
      }
    }
    this.reverse = new Map();
    for (const [l, s] of rev) {
      this.reverse.set(
        l,
        Array.from(s).sort((a, b) => a - b)
      );
    }
  }

  /** Stage lines for one or more user lines (sorted, unique). */
  stageLines(userLines: number | number[]): number[] {
    const us = Array.isArray(userLines) ? userLines : [userLines];
    return uniqueSorted(us.flatMap(u => this.forward.get(u) ?? []));
  }

  /** User lines that a stage line (or lines) came from. */
  userLines(stageLines: number | number[]): number[] {
    const ls = Array.isArray(stageLines) ? stageLines : [stageLines];
    return uniqueSorted(ls.flatMap(l => this.reverse.get(l) ?? []));
  }

  /** User lines that have at least one mapped stage line. */
  mappedUserLines(): number[] {
    return uniqueSorted(Array.from(this.forward.keys()));
  }
}

export function uniqueSorted(xs: number[]): number[] {
  return Array.from(new Set(xs)).sort((a, b) => a - b);
}

export type LinkOrigin =
  | { kind: 'source'; line: number }
  | { kind: 'stage'; stage: string; line: number };

export interface LinkResult {
  source: number[];
  stages: { [stage: string]: number[] };
}

/**
 * Everything to highlight for a hovered or clicked line: the source lines and the
 * lines in each of `stages`. From a stage line we go back to its user lines and
 * forward again into the other stages; the origin stage keeps just the origin line
 * plus its siblings (other lines from the same user lines).
 */
export function linkedLines(
  indexes: { [stage: string]: LineIndex },
  origin: LinkOrigin,
  stages: string[]
): LinkResult {
  let user: number[];
  if (origin.kind === 'source') {
    user = [origin.line];
  } else {
    const idx = indexes[origin.stage];
    user = idx ? idx.userLines(origin.line) : [];
  }
  const result: LinkResult = { source: user, stages: {} };
  for (const s of stages) {
    const idx = indexes[s];
    if (!idx) {
      result.stages[s] = [];
      continue;
    }
    let lines = idx.stageLines(user);
    if (origin.kind === 'stage' && origin.stage === s && !lines.includes(origin.line)) {
      lines = uniqueSorted([...lines, origin.line]);
    }
    result.stages[s] = lines;
  }
  return result;
}

/** Compress sorted line numbers into ranges: [1,2,3,7] -> [[1,3],[7,7]]. */
export function toRanges(lines: number[]): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  for (const l of uniqueSorted(lines)) {
    const last = out[out.length - 1];
    if (last && l === last[1] + 1) {
      last[1] = l;
    } else {
      out.push([l, l]);
    }
  }
  return out;
}

/** "3-5, 9" for a status line. */
export function describeRanges(lines: number[]): string {
  return toRanges(lines)
    .map(([a, b]) => (a === b ? `${a}` : `${a}\u2013${b}`))
    .join(', ');
}

/** The instructions a source line is mostly about, per stage language, most telling first: a `tl.dot` is its
 * HGMMA (not the UMOV that sets up its descriptor), a `tl.load` its global load or TMA copy. */
const MAIN_OPS: { [language: string]: RegExp[] } = {
  sass: [/\b[HQI]GMMA\b|\bHMMA\b|\bIMMA\b/, /\bUTMA(LDG|STG)\b|\bUBLKCP\b|\bLDGSTS\b/, /\b(LDG|STG|LDSM|LDS|STS|ATOMG|RED)\b/,
    /\bSYNCS\b|\bBAR\b/],
  ptx: [/\bwgmma\.mma_async|\bmma\.sync|\btcgen05\.mma/, /\bcp\.async\.bulk\.tensor|\bcp\.async\b/,
    /\b(ld|st)\.global|\bldmatrix|\b(ld|st)\.shared|\batom\./, /\bmbarrier\./],
  mlir: [/warp_group_dot\b|\btt\.dot\b|\bttng\.tc_gen5_mma\b/, /async_tma_copy|async_copy_global_to_local|descriptor_load/,
    /\btt\.(load|store)\b|local_(load|store)\b/, /barrier/],
  llvm: [/wgmma|\bmma\b/, /cp\.async/, /\b(load|store)\b/]
};

/** Where to scroll among `lines` (1-based) of a stage: the first line of the most telling kind
 * (`MAIN_OPS`), else the first line; null when there are none. `text(l)` gives line l's text. */
export function mainLine(lines: number[], text: (line: number) => string, language: string): number | null {
  const sorted = uniqueSorted(lines);
  for (const re of MAIN_OPS[language] ?? []) {
    const hit = sorted.find(l => re.test(text(l)));
    if (hit !== undefined) {
      return hit;
    }
  }
  return sorted.length ? sorted[0] : null;
}

export interface Match {
  from: number;
  to: number;
  line: number;
}

/**
 * Case-insensitive plain-text search (no regex surprises from user input).
 * Returns document offsets, capped at `limit` matches.
 */
export function findMatches(text: string, query: string, limit = 10000): Match[] {
  const out: Match[] = [];
  if (!query) {
    return out;
  }
  const hay = text.toLowerCase();
  const needle = query.toLowerCase();
  let line = 1;
  let lineScan = 0;
  let i = hay.indexOf(needle);
  while (i >= 0 && out.length < limit) {
    while (lineScan < i) {
      const nl = hay.indexOf('\n', lineScan);
      if (nl < 0 || nl >= i) {
        break;
      }
      line++;
      lineScan = nl + 1;
    }
    out.push({ from: i, to: i + needle.length, line });
    i = hay.indexOf(needle, i + Math.max(needle.length, 1));
  }
  return out;
}
