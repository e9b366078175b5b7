/**
 * The Report as the viewer uses it. The JSON's types are generated from the schema
 * (schema.d.ts, from workbench/report/schema.json); `loadReport` reads a Report defensively (a
 * newer Python side does not break an older viewer: unknown fields are ignored, missing ones get
 * defaults) and inflates the stage texts stored gzip+base64. Nothing from a Report is ever
 * rendered as HTML.
 */
import type {
  Bench,
  Check,
  DeclaredLayout as DeclaredLayoutData,
  Device,
  Diagnostic as DiagnosticData,
  Diff,
  Finding,
  LinearLayout,
  Measurement,
  Metadata,
  Orchestration,
  Roofline,
  Run,
  Search,
  StageDiff,
  Task,
  Timeline,
  TlxReport,
  ValueLayout as ValueLayoutData
} from './schema';

export type { Bench, Check, Diff, Finding, Measurement, Orchestration, Roofline, Run, Search, Task, Timeline, TlxReport };

export const MIME_TYPE = 'application/vnd.tlx-workbench.report+json';

/** Schema versions this viewer reads (1.0: texts in the clear; 2.0: large texts gzip+base64; 2.1: + search;
 * 2.2: + linear layouts, without which the Layouts tab lists layouts and says why it cannot draw them;
 * 2.3: + orchestration, the Orchestration tab's payload). */
export const READS = ['1.0', '2.0', '2.1', '2.2', '2.3'];

/** Stage names in the order the picker shows them. */
export const STAGE_ORDER = ['tlx', 'gluon', 'ttir', 'ttgir', 'llir', 'ptx', 'sass'];

export type Language = 'python' | 'mlir' | 'llvm' | 'ptx' | 'sass' | 'text';

export interface Stage {
  name: string;
  text: string;
  lineCount: number;
  /** Set when `text` is only the first lineCount lines (the notebook's size budget). */
  fullLineCount: number | null;
  lineMap: Map<number, number[]>;
  /** Which language the stage is highlighted as. */
  language: Language;
}

/** The schema's payloads as loadReport fills them: every optional field present (defaults where missing). */
export type DeclaredLayout = Required<DeclaredLayoutData>;
export type ValueLayout = Required<ValueLayoutData>;
export type Diagnostic = DiagnosticData & { hint: string; source: string };
export type { LinearLayout };

export interface Report {
  schemaVersion: string;
  id: string;
  created: string;
  kernelName: string;
  source: string;
  filename: string;
  /** The kernel was defined in another cell than the one whose launch this Report is of: `source` is that cell's. */
  definedElsewhere: boolean;
  /** Line of `source` where the kernel starts (1-based), if known. */
  kernelFirstLine: number | null;
  stages: Stage[];
  metadata: Metadata;
  tasks: Task[];
  declared: DeclaredLayout[];
  values: ValueLayout[];
  /** Triton's linear layouts of the values (schema 2.2; empty in older Reports): what the Layouts tab draws. */
  linear: LinearLayout[];
  runs: Run[];
  checks: Check[];
  measurements: Measurement[];
  timeline: Timeline | null;
  findings: Finding[];
  diagnostics: Diagnostic[];
  previous: Diff | null;
  target: string;
  /** Stages to show first (view.stages_first); the first one is selected. */
  stagesFirst: string[];
  selectedStage: string | null;
  device: Partial<Device>;
  /** %%tlx --search: every candidate of the search (the Search tab). */
  search: Search | null;
  /** A TLX kernel's orchestration graph and simulated schedule (the Orchestration tab). */
  orchestration: Orchestration | null;
}

export function stageLanguage(name: string): Language {
  const n = name.toLowerCase();
  if (n === 'tlx' || n === 'gluon' || n === 'python' || n === 'source') {
    return 'python';
  }
  if (n === 'ttir' || n === 'ttgir' || n === 'mlir' || (n.endsWith('ir') && n !== 'llir')) {
    return 'mlir';
  }
  if (n === 'llir' || n === 'llvm' || n === 'll') {
    return 'llvm';
  }
  if (n === 'ptx') {
    return 'ptx';
  }
  if (n === 'sass') {
    return 'sass';
  }
  return 'text';
}

function str(v: unknown, dflt = ''): string {
  if (v === null || v === undefined) {
    return dflt;
  }
  return typeof v === 'string' ? v : String(v);
}

function num(v: unknown): number | null {
  return typeof v === 'number' && isFinite(v) ? v : null;
}

type Obj = { [k: string]: unknown };

function obj(v: unknown): Obj {
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : {};
}

function arr(v: unknown): unknown[] {
  return Array.isArray(v) ? v : [];
}

/** Parse a `{ "<user line>": [stage lines] }` map into numbers, dropping junk. */
export function parseLineMap(raw: unknown): Map<number, number[]> {
  const out = new Map<number, number[]>();
  for (const [k, v] of Object.entries(obj(raw))) {
    const user = parseInt(k, 10);
    if (!isFinite(user)) {
      continue;
    }
    const lines = (Array.isArray(v) ? v : [v])
      .map(x => (typeof x === 'number' ? x : parseInt(String(x), 10)))
      .filter(x => isFinite(x) && x >= 1);
    if (lines.length) {
      out.set(user, Array.from(new Set(lines)).sort((a, b) => a - b));
    }
  }
  return out;
}

/** Inflate a gzip+base64 text (the browser's and Node's DecompressionStream). */
export async function inflate(b64: string): Promise<string> {
  const bin = atob(b64);
  const bytes = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) {
    bytes[i] = bin.charCodeAt(i);
  }
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream('gzip'));
  return new Response(stream).text();
}

/** `text` of a stage (or `diff` of a stage diff), inflating `<key>_gz` when that is how it is stored. */
export async function packedText(o: Obj, key: string): Promise<string> {
  if (typeof o[key] === 'string') {
    return o[key] as string;
  }
  const gz = o[`${key}_gz`];
  return typeof gz === 'string' ? inflate(gz) : '';
}

const LANGS: Language[] = ['python', 'mlir', 'llvm', 'ptx', 'sass', 'text'];

function knownLanguage(v: unknown): Language | null {
  return typeof v === 'string' && (LANGS as string[]).includes(v) ? (v as Language) : null;
}

async function readStages(raw: unknown): Promise<Stage[]> {
  const out: Stage[] = [];
  for (const s of arr(raw).map(obj)) {
    const name = str(s.name);
    if (!name) {
      continue;
    }
    const text = await packedText(s, 'text');
    const lineMap = s.line_map ?? (typeof s.line_map_gz === 'string' ? JSON.parse(await inflate(s.line_map_gz)) : {});
    out.push({
      name,
      text,
      lineCount: num(s.line_count) ?? text.split('\n').length,
      fullLineCount: num(s.full_line_count),
      lineMap: parseLineMap(lineMap),
      language: knownLanguage(s.language) ?? stageLanguage(name)
    });
  }
  return out;
}

async function readPrevious(raw: unknown): Promise<Diff | null> {
  if (!raw || typeof raw !== 'object') {
    return null;
  }
  const p = raw as Diff;
  const stages: StageDiff[] = [];
  for (const s of arr(p.stages).map(obj)) {
    stages.push({ ...(s as unknown as StageDiff), diff: await packedText(s, 'diff') });
  }
  return { ...p, metadata: arr(p.metadata) as Diff['metadata'], stages };
}

const ints = (v: unknown): number[] => arr(v).filter((x): x is number => typeof x === 'number');
const bases = (v: unknown): number[][] | undefined => (Array.isArray(v) ? arr(v).map(ints) : undefined);

function readLinear(v: unknown): LinearLayout {
  const o = obj(v);
  const out: LinearLayout = { alias: str(o.alias), value_shape: ints(o.value_shape), dtype: str(o.dtype) };
  if (Array.isArray(o.shape)) {
    out.shape = ints(o.shape);
  }
  for (const k of ['register', 'lane', 'warp', 'block', 'offset'] as const) {
    out[k] = bases(o[k]);
  }
  out.element_bits = num(o.element_bits) ?? undefined;
  if (typeof o.reason === 'string') {
    out.reason = o.reason;
  }
  return out;
}

function readLayouts(raw: unknown): { declared: DeclaredLayout[]; values: ValueLayout[]; linear: LinearLayout[] } {
  const layouts = obj(raw);
  const declared = arr(layouts.declared).map(d => {
    const o = obj(d);
    return {
      alias: str(o.alias),
      kind: str(o.kind),
      attr: str(o.attr),
      params: obj(o.params),
      shared: o.shared === true,
      uses: arr(o.uses).map(obj)
    } as DeclaredLayout;
  });
  const values = arr(layouts.values).map(v => {
    const o = obj(v);
    return {
      name: str(o.name),
      line: num(o.line),
      shape: arr(o.shape).filter((x): x is number => typeof x === 'number'),
      dtype: str(o.dtype),
      layout: str(o.layout),
      ttgir: str(o.ttgir),
      reason: str(o.reason),
      kind: str(o.kind, 'tensor')
    };
  });
  return { declared, values, linear: arr(layouts.linear).map(readLinear) };
}

function readSearch(v: unknown): Search | null {
  const o = obj(v);
  if (typeof o.search_id !== 'string' || !Array.isArray(o.rows)) {
    return null;
  }
  return {
    ...(o as unknown as Search),
    config_keys: arr(o.config_keys).map(x => str(x)),
    counts: obj(o.counts) as { [k: string]: number },
    info: obj(o.info),
    rows: arr(o.rows).map(r => {
      const row = obj(r);
      return { ...row, config: obj(row.config), status: str(row.status, 'pending') } as unknown as Search['rows'][0];
    })
  };
}

function readOrchestration(v: unknown): Orchestration | null {
  const o = obj(v);
  if (o.kind !== 'orchestration') {
    return null;
  }
  const lists = ['tasks', 'buffers', 'barriers', 'ops', 'edges', 'rounds', 'blocked', 'marks'];
  return { ...o, ...Object.fromEntries(lists.map(k => [k, arr(o[k])])) } as unknown as Orchestration;
}

function payload<T>(v: unknown): T | null {
  const o = obj(v);
  return typeof o.kind === 'string' ? (o as T) : null;
}

/** Turn whatever JSON the kernel sent into a Report, tolerating schema drift; inflates packed texts. */
export async function loadReport(data: unknown): Promise<Report> {
  const raw = obj(data) as Partial<TlxReport> & Obj;
  const kernel = obj(raw.kernel);
  const cell = obj(raw.cell);
  const ksrc = obj(kernel.source);
  const metadata = obj(raw.metadata) as Metadata;
  const view = obj(raw.view);
  const runs = arr(raw.runs).map(r => ({ ...obj(r), checks: arr(obj(r).checks) }) as unknown as Run);
  const diagnostics: Diagnostic[] = arr(raw.diagnostics).map(d => {
    const o = obj(d);
    const severity = ['error', 'warning', 'info'].includes(str(o.severity)) ? str(o.severity) : 'info';
    return { severity, message: str(o.message), line: num(o.line), hint: str(o.hint),
      source: str(o.source) } as Diagnostic;
  });
  return {
    schemaVersion: str(raw.schema_version),
    id: str(raw.id),
    created: str(raw.created),
    kernelName: str(kernel.name, 'kernel'),
    // user lines are lines of kernel.source.text (== cell.source when the kernel is in the cell)
    source: str(ksrc.text ?? cell.source ?? ksrc.kernel_text),
    filename: str(ksrc.filename ?? cell.filename),
    definedElsewhere: ksrc.in_cell === false && typeof ksrc.text === 'string',
    kernelFirstLine: num(ksrc.first_line ?? cell.kernel_first_line),
    stages: await readStages(raw.stages),
    metadata,
    tasks: arr(metadata.tasks).map(t => obj(t) as unknown as Task),
    ...readLayouts(raw.layouts),
    runs,
    checks: runs.flatMap(r => r.checks),
    measurements: arr(raw.measurements).map(m => payload<Measurement>(m)).filter((m): m is Measurement => !!m),
    timeline: payload<Timeline>(raw.timeline),
    findings: arr(raw.findings).map(f => obj(f) as unknown as Finding),
    diagnostics,
    previous: await readPrevious(raw.previous),
    target: str(kernel.target ?? metadata.target),
    stagesFirst: arr(view.stages_first).map(x => str(x)),
    selectedStage: typeof view.selected_stage === 'string' ? view.selected_stage : null,
    device: obj(raw.device),
    search: readSearch(raw.search),
    orchestration: readOrchestration(raw.orchestration)
  };
}

export function isBench(m: Measurement): m is Bench {
  return m.kind === 'bench';
}

export function isRoofline(m: Measurement): m is Roofline {
  return m.kind === 'roofline';
}
