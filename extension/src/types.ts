/**
 * The Report as the extension sees it (schema: workbench/report/schema.json).
 *
 * Everything here is read defensively: `normalizeReport` accepts the schema's shape
 * and tolerates missing or extra fields, so a newer Python side does not break an
 * older viewer. Nothing from a Report is ever rendered as HTML.
 */

export const MIME_TYPE = 'application/vnd.tlx-workbench.report+json';

/** Stage names in the order the picker shows them. */
export const STAGE_ORDER = ['tlx', 'gluon', 'ttir', 'ttgir', 'llir', 'ptx', 'sass'];

export type RawLineMap = { [userLine: string]: number[] | number };

export interface Stage {
  name: string;
  text: string;
  lineMap: Map<number, number[]>;
  /** Which language the stage is highlighted as. */
  language: 'python' | 'mlir' | 'llvm' | 'ptx' | 'sass' | 'text';
}

export interface DeclaredLayout {
  alias: string;
  kind: string;
  attr: string;
  params: { [k: string]: unknown };
  shared: boolean;
  uses: Array<{ [k: string]: unknown }>;
}

export interface ValueLayout {
  name: string;
  line: number | null;
  shape: number[];
  dtype: string;
  layout: string;
  ttgir: string;
  reason: string;
  kind: string;
}

export interface Diagnostic {
  severity: string;
  message: string;
  line: number | null;
  hint: string;
}

export interface Measurement {
  kind: string;
  [k: string]: unknown;
}

export interface Report {
  schemaVersion: string;
  id: string;
  created: string;
  kernelName: string;
  source: string;
  filename: string;
  /** Line of `source` where the kernel starts (1-based), if known. */
  kernelFirstLine: number | null;
  stages: Stage[];
  metadata: { [k: string]: unknown };
  declared: DeclaredLayout[];
  values: ValueLayout[];
  runs: Array<{ [k: string]: unknown }>;
  measurements: Measurement[];
  timeline: { [k: string]: unknown } | null;
  roofline: { [k: string]: unknown } | null;
  diagnostics: Diagnostic[];
  target: string;
  /** Stages to show first (view.stages_first); the first one is selected. */
  stagesFirst: string[];
  selectedStage: string | null;
  device: { [k: string]: unknown };
  raw: { [k: string]: unknown };
}

export function stageLanguage(name: string): Stage['language'] {
  const n = name.toLowerCase();
  if (n === 'tlx' || n === 'gluon' || n === 'python' || n === 'source') {
    return 'python';
  }
  if (n === 'ttir' || n === 'ttgir' || n === 'mlir' || n.endsWith('ir') && n !== 'llir') {
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

function obj(v: unknown): { [k: string]: unknown } {
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as { [k: string]: unknown }) : {};
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

const LANGS = ['python', 'mlir', 'llvm', 'ptx', 'sass', 'text'];

function knownLanguage(v: unknown): Stage['language'] | null {
  return typeof v === 'string' && LANGS.includes(v) ? (v as Stage['language']) : null;
}

function sortStages(stages: Stage[]): Stage[] {
  const rank = (n: string) => {
    const i = STAGE_ORDER.indexOf(n.toLowerCase());
    return i < 0 ? STAGE_ORDER.length : i;
  };
  return stages
    .map((s, i) => ({ s, i }))
    .sort((a, b) => rank(a.s.name) - rank(b.s.name) || a.i - b.i)
    .map(x => x.s);
}

/** Turn whatever JSON the kernel sent into a Report, tolerating schema drift. */
export function normalizeReport(data: unknown): Report {
  const raw = obj(data);
  const kernel = obj(raw.kernel);
  const cell = obj(raw.cell);
  const lineMaps = obj(raw.line_maps);
  let stages: Stage[] = [];
  const rawStages = raw.stages;
  if (Array.isArray(rawStages)) {
    for (const s of rawStages) {
      const so = obj(s);
      const name = str(so.name);
      if (!name) {
        continue;
      }
      stages.push({
        name,
        text: str(so.text),
        lineMap: parseLineMap(so.line_map ?? lineMaps[name]),
        language: knownLanguage(so.language) ?? stageLanguage(name)
      });
    }
  } else {
    // Artifact-style: {stage: text} plus line_maps {stage: {...}}.
    for (const [name, text] of Object.entries(obj(rawStages))) {
      stages.push({
        name,
        text: str(text),
        lineMap: parseLineMap(lineMaps[name]),
        language: stageLanguage(name)
      });
    }
  }
  // The schema sends stages in pipeline order already; only artifact-style dicts need sorting.
  if (!Array.isArray(rawStages)) {
    stages = sortStages(stages);
  }
  const layouts = obj(raw.layouts);
  const declared: DeclaredLayout[] = arr(layouts.declared).map(d => {
    const o = obj(d);
    return {
      alias: str(o.alias),
      kind: str(o.kind),
      attr: str(o.attr),
      params: obj(o.params),
      shared: o.shared === true,
      uses: arr(o.uses).map(obj)
    };
  });
  const values: ValueLayout[] = arr(layouts.values).map(v => {
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
  const diagnostics: Diagnostic[] = arr(raw.diagnostics).map(d => {
    const o = obj(d);
    return {
      severity: str(o.severity, 'info'),
      message: str(o.message),
      line: num(o.line),
      hint: str(o.hint)
    };
  });
  const measurements = arr(raw.measurements)
    .map(obj)
    .map(m => ({ ...m, kind: str(m.kind) }) as Measurement);
  // User lines are lines of kernel.source.text (== cell.source when the kernel is in the cell).
  const ksrc = obj(kernel.source ?? raw.source);
  const source = str(ksrc.text ?? cell.source ?? ksrc.kernel_text);
  const metadata = obj(raw.metadata);
  const view = obj(raw.view);
  return {
    schemaVersion: str(raw.schema_version),
    id: str(raw.id),
    created: str(raw.created),
    kernelName: str(kernel.name ?? raw.name, 'kernel'),
    source,
    filename: str(ksrc.filename ?? cell.filename),
    kernelFirstLine: num(ksrc.first_line ?? cell.kernel_first_line),
    stages,
    metadata,
    declared,
    values,
    runs: arr(raw.runs).map(obj),
    measurements,
    timeline: raw.timeline && typeof raw.timeline === 'object' ? obj(raw.timeline) : null,
    roofline: raw.roofline && typeof raw.roofline === 'object' ? obj(raw.roofline) : null,
    diagnostics,
    target: str(kernel.target ?? metadata.target),
    stagesFirst: arr(view.stages_first).map(x => str(x)),
    selectedStage: typeof view.selected_stage === 'string' ? view.selected_stage : null,
    device: obj(raw.device),
    raw
  };
}
