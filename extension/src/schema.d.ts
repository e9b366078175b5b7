/* Generated from workbench/report/schema.json by scripts/schema-types.mjs: do not edit.
 * `npm run build:types` regenerates it; test/schema.test.ts fails when it drifts. */

/**
 * One compiler stage. Its text is either plain (text) or gzip-compressed and base64-encoded (text_gz), and so is its line map (line_map, or line_map_gz: the map's JSON); exactly one of each pair is present.
 *
 * This interface was referenced by `TlxReport`'s JSON-Schema
 * via the `definition` "stage".
 */
export type Stage = {
  [k: string]: unknown;
} & {
  /**
   * e.g. ttir, ttgir, llir, ptx, sass.
   */
  name: string;
  language: 'python' | 'mlir' | 'llvm' | 'ptx' | 'sass' | 'text';
  /**
   * Number of lines of the text.
   */
  line_count: number;
  /**
   * Present when the text is only the first line_count lines of the stage (the Report's size budget): how many lines the stage has. The Report in the kernel's session keeps them all (report.stage(name)).
   */
  full_line_count?: number;
  text?: string;
  /**
   * base64 of the gzip-compressed UTF-8 text.
   */
  text_gz?: string;
  /**
   * User line (decimal string) -> 1-based lines of this stage.
   */
  line_map?: {
    /**
     * This interface was referenced by `undefined`'s JSON-Schema definition
     * via the `patternProperty` "^[0-9]+$".
     */
    [k: string]: number[];
  };
  /**
   * base64 of the gzip-compressed JSON of line_map.
   */
  line_map_gz?: string;
};
/**
 * One basis per bit of an index, each a coordinate in the layout's shape; the coordinate an index names is the XOR of the bases of its set bits.
 *
 * This interface was referenced by `TlxReport`'s JSON-Schema
 * via the `definition` "bases".
 */
export type Bases = number[][];
/**
 * This interface was referenced by `TlxReport`'s JSON-Schema
 * via the `definition` "measurement".
 */
export type Measurement = Bench | Roofline | Capture | Stalls | OtherMeasurement;
/**
 * ok: measured; skipped: not measured, reason says why (e.g. no GPU); error: it failed, reason says how.
 *
 * This interface was referenced by `TlxReport`'s JSON-Schema
 * via the `definition` "status".
 */
export type Status = 'ok' | 'skipped' | 'error';

/**
 * One Report per kernel per %%tlx cell run. MIME type application/vnd.tlx-workbench.report+json. Minor versions (2.x) only add optional fields; a consumer must ignore properties it does not know. All line numbers are 1-based. User lines are lines of kernel.source.text; when the kernel was defined in the cell (kernel.source.in_cell), they are the cell's lines as the editor numbers them (the %%tlx line is line 1). Large texts (stages, stage diffs) are stored once, gzip-compressed and base64-encoded (text_gz, diff_gz), so a Report stays a few hundred KiB in the notebook.
 */
export interface TlxReport {
  /**
   * 2.1 added the optional search payload; 2.2 the layouts' linear-layout data (layouts.linear); 2.3 the optional orchestration payload; 2.4 the judge's rule, error and guards on a check; 2.5 the stalls measurement (--stalls); 2.6 a hung launch's live snapshot (run.snapshot) and the snapshot and stress marks on the orchestration graph; 2.7 what Python writes for the viewer to show as it is (a run's and a check's summary, a measurement's provenance, the roofline's and the timeline's view); 2.8 the timeline's lanes as the Chrome / Perfetto trace the viewer saves (view.trace).
   */
  schema_version: '2.0' | '2.1' | '2.2' | '2.3' | '2.4' | '2.5' | '2.6' | '2.7' | '2.8';
  /**
   * Unique id of this Report (hex).
   */
  id: string;
  /**
   * ISO 8601 UTC timestamp, e.g. 2025-01-01T12:00:00.000Z.
   */
  created: string;
  kernel: Kernel;
  cell: Cell;
  /**
   * Compiler stages in pipeline order (source first, SASS last).
   */
  stages: Stage[];
  metadata: Metadata;
  layouts: Layouts;
  /**
   * One entry per captured launch (capped; kernel.launches has the count).
   */
  runs: Run[];
  /**
   * Filled by workbench.measure (--bench): a bench payload (the timing) and, with FLOP/byte counts, a roofline payload; other kinds (capture, ...) may follow.
   */
  measurements: Measurement[];
  /**
   * Filled by workbench.measure.timeline (--timeline); null when not requested.
   */
  timeline: null | Timeline;
  /**
   * Findings of the static orchestration checks (workbench.check) on this kernel.
   */
  findings?: Finding[];
  diagnostics: Diagnostic[];
  device: Device;
  versions: {
    workbench: string;
    triton: string;
    torch?: string | null;
    python?: string;
  };
  /**
   * With --diff: how this Report differs from the previous run of the same cell (or the Report given). Null otherwise.
   */
  previous: null | Diff;
  /**
   * Presentation hints from the magic's options.
   */
  view: {
    /**
     * Stages to show first, in this order (--stages); the first is the one selected.
     */
    stages_first: string[];
    selected_stage?: string | null;
  };
  /**
   * The %%tlx options this Report was produced with.
   */
  options?: {};
  /**
   * Names of all kernels captured in the same cell run.
   */
  kernels?: string[];
  /**
   * With %%tlx --search: every candidate of the search this Report's kernel won (or, when none ran, the first compiled).
   */
  search?: null | Search;
  /**
   * Since 2.3, for a TLX kernel: its orchestration model and one simulated run of program 0 (workbench.report.orchestration), with the findings and a timeline's waits on it; the viewer's Orchestration tab.
   */
  orchestration?: null | Orchestration;
}
/**
 * This interface was referenced by `TlxReport`'s JSON-Schema
 * via the `definition` "kernel".
 */
export interface Kernel {
  name: string;
  kind: 'triton' | 'gluon' | 'tlx' | 'other';
  /**
   * Compile target, e.g. sm_90.
   */
  target: string;
  /**
   * Content hash of the compilation (artifact cache key).
   */
  key: string;
  cache_hit: boolean;
  compile_ms?: number | null;
  /**
   * Launches captured in this cell run (0 for a plain compile).
   */
  launches: number;
  source: {
    filename: string;
    /**
     * Line of the kernel's def (or first decorator) in text.
     */
    first_line: number;
    last_line?: number | null;
    /**
     * The whole file or cell text the user lines refer to.
     */
    text: string;
    kernel_text: string;
    /**
     * True when the kernel was defined in this cell; then text == cell.source.
     */
    in_cell: boolean;
  };
}
/**
 * This interface was referenced by `TlxReport`'s JSON-Schema
 * via the `definition` "cell".
 */
export interface Cell {
  /**
   * The whole cell, %%tlx line included (line 1).
   */
  source: string;
  /**
   * The name the cell's code was compiled under (linecache), e.g. <tlx-cell-1a2b3c4d5e>.
   */
  filename: string;
  /**
   * Cell line where the kernel starts; null when defined elsewhere.
   */
  kernel_first_line: number | null;
  magic_line?: string;
  cell_id?: string | null;
  execution_count?: number | null;
}
/**
 * Resource facts (Artifact.metadata.to_dict()).
 *
 * This interface was referenced by `TlxReport`'s JSON-Schema
 * via the `definition` "metadata".
 */
export interface Metadata {
  name?: string;
  target?: string;
  triton_version?: string;
  num_warps?: number | null;
  num_stages?: number | null;
  num_ctas?: number | null;
  shared_bytes?: number | null;
  registers?: number | null;
  spill_stores?: number | null;
  spill_loads?: number | null;
  spills?: number | null;
  local_bytes?: number | null;
  max_threads?: number | null;
  /**
   * Async tasks of a warp-specialized kernel; empty otherwise.
   */
  tasks?: Task[];
  extra?: {};
}
/**
 * One async task (and replica) of a warp-specialized kernel, read from its TTGIR.
 *
 * This interface was referenced by `TlxReport`'s JSON-Schema
 * via the `definition` "task".
 */
export interface Task {
  /**
   * null for the default task, else the partition index.
   */
  partition: number | null;
  num_warps: number;
  /**
   * Register budget per thread (setmaxnreg), null when unknown.
   */
  registers: number | null;
  requested_registers?: number | null;
  start_warp?: number | null;
  /**
   * First user line of the task's body.
   */
  first_line?: number | null;
}
/**
 * This interface was referenced by `TlxReport`'s JSON-Schema
 * via the `definition` "layouts".
 */
export interface Layouts {
  declared: DeclaredLayout[];
  values: ValueLayout[];
  /**
   * Since 2.2: Triton's linear layout of each (alias, value_shape, dtype) that the values carry, the data the viewer draws; older Reports have none.
   */
  linear?: LinearLayout[];
}
/**
 * A layout attribute the TTGIR module declares (#alias = #ttg....<...>) and the values that carry it.
 *
 * This interface was referenced by `TlxReport`'s JSON-Schema
 * via the `definition` "declaredLayout".
 */
export interface DeclaredLayout {
  alias: string;
  kind: string;
  attr: string;
  params?: {};
  shared?: boolean;
  uses?: LayoutUse[];
}
/**
 * This interface was referenced by `TlxReport`'s JSON-Schema
 * via the `definition` "layoutUse".
 */
export interface LayoutUse {
  value?: string;
  ttgir_line?: number;
  user_line?: number | null;
  type?: string;
  shape?: number[];
  dtype?: string;
}
/**
 * One tensor or buffer of the kernel and the layout it got (layout: Gluon form; ttgir: the declared attribute's text).
 *
 * This interface was referenced by `TlxReport`'s JSON-Schema
 * via the `definition` "valueLayout".
 */
export interface ValueLayout {
  name: string;
  line?: number | null;
  shape?: number[];
  dtype?: string;
  layout: string;
  ttgir?: string;
  reason?: string;
  kind?: string;
}
/**
 * Triton's linear layout (its C++ toLinearLayout at compile time) of one declared layout for one value type. Distributed layouts: register, lane, warp and block bases map a (register, lane, warp, block) index to the element it holds. Shared layouts: offset bases map an element offset within one buffer to the element stored there. reason instead of bases where Triton gives none.
 *
 * This interface was referenced by `TlxReport`'s JSON-Schema
 * via the `definition` "linearLayout".
 */
export interface LinearLayout {
  /**
   * The declaredLayout's alias.
   */
  alias: string;
  /**
   * The shape of the values it is for (layoutUse.shape, valueLayout.shape).
   */
  value_shape: number[];
  dtype: string;
  /**
   * The shape the bases cover: value_shape, or one buffer of a ring of shared buffers (its last dims).
   */
  shape?: number[];
  register?: Bases;
  lane?: Bases;
  warp?: Bases;
  block?: Bases;
  offset?: Bases;
  /**
   * Shared layouts: bits of one element (shared-memory banks are 4 bytes).
   */
  element_bits?: number;
  /**
   * Why there are no bases.
   */
  reason?: string;
}
/**
 * This interface was referenced by `TlxReport`'s JSON-Schema
 * via the `definition` "run".
 */
export interface Run {
  /**
   * gpu: launched on the device; interpreter: executed by Triton's CPU interpreter; compile: compiled only.
   */
  mode: 'gpu' | 'interpreter' | 'compile';
  /**
   * One line in words, written by workbench.report.summaries (the viewer shows it as is). Added in 2.7.
   */
  summary?: string;
  ran: boolean;
  /**
   * Why it did not run on the GPU (null when it did).
   */
  reason: string | null;
  device?: string | null;
  grid: number[] | null;
  /**
   * Host wall time of the launch call (not a measurement).
   */
  elapsed_ms?: number | null;
  arguments: Argument[];
  checks: Check[];
  /**
   * How the isolated worker ran it (workbench.run.isolate.record).
   */
  isolation?: {};
  snapshot?: Snapshot;
}
/**
 * This interface was referenced by `TlxReport`'s JSON-Schema
 * via the `definition` "argument".
 */
export interface Argument {
  name: string;
  kind: 'tensor' | 'int' | 'float' | 'bool' | 'none' | 'constexpr' | 'descriptor' | 'tuple' | 'other';
  dtype?: string | null;
  shape?: number[] | null;
  strides?: number[] | null;
  device?: string | null;
  /**
   * Scalars and constexprs: the value (JSON scalar or its repr).
   */
  value?: {
    [k: string]: unknown;
  };
}
/**
 * One --check expression and its outcome. A skipped check says why in message.
 *
 * This interface was referenced by `TlxReport`'s JSON-Schema
 * via the `definition` "check".
 */
export interface Check {
  /**
   * The --check expression as given.
   */
  expr: string;
  /**
   * One line in words, written by workbench.report.summaries (the viewer shows it as is). Added in 2.7.
   */
  summary?: string;
  actual?: string | null;
  expected?: string | null;
  status: 'passed' | 'failed' | 'skipped' | 'error';
  message: string;
  atol?: number | null;
  rtol?: number | null;
  max_abs_err?: number | null;
  max_rel_err?: number | null;
  mismatched?: number | null;
  total?: number | null;
  first_mismatch?: number[] | null;
  /**
   * The judge's rule in words (workbench.run.judge): the working precision, the ulp and norm bounds, the reference's precision; or the given atol/rtol. Added in 2.4.
   */
  rule?: string;
  error?: CheckError;
  /**
   * What the judge's guards found (an all-zero or constant output, NaN/Inf where the reference is finite). Added in 2.4.
   */
  guards?: {
    guard: string;
    message: string;
  }[];
  /**
   * Why the reference was not evaluated again at a higher precision. Added in 2.4.
   */
  reference_note?: string;
}
/**
 * The error distribution behind a verdict: ulps of the working precision at max(|expected|, rms(expected)). Added in 2.4.
 *
 * This interface was referenced by `TlxReport`'s JSON-Schema
 * via the `definition` "checkError".
 */
export interface CheckError {
  max_ulps?: number | null;
  p99_ulps?: number | null;
  norm_rel_err?: number | null;
  /**
   * The precision the ulps are counted in (float16, bfloat16, tf32...).
   */
  working?: string;
  /**
   * The precision the reference was computed in.
   */
  reference?: string;
  worst?: {
    index?: number[];
    actual?: number;
    expected?: number;
  } | null;
}
/**
 * --snapshot: where a hung launch's warps waited, read live while it ran (workbench.run.snapshot.waiting). Added in 2.6.
 *
 * This interface was referenced by `TlxReport`'s JSON-Schema
 * via the `definition` "snapshot".
 */
export interface Snapshot {
  /**
   * Seconds into the run when the snapshot was read.
   */
  when_s?: number | null;
  waits: {
    role: string;
    /**
     * The orchestration payload's task index.
     */
    task?: number | null;
    /**
     * Warps of a CTA, numbered in the CTA.
     */
    warps: number[];
    /**
     * CTAs with a warp waiting so.
     */
    ctas: number;
    site?: number;
    kind: 'wait' | 'named-barrier';
    line: number | null;
    /**
     * The mbarrier's shared address, or the named barrier's id.
     */
    barrier: number;
    /**
     * The phase waited for, or the named barrier's thread count.
     */
    phase: number;
  }[];
}
/**
 * --bench: the kernel's timing (and the --bench-ref reference's), from workbench.measure.report_items.
 *
 * This interface was referenced by `TlxReport`'s JSON-Schema
 * via the `definition` "bench".
 */
export interface Bench {
  kind: 'bench';
  status: Status;
  reason: string | null;
  measured_by?: string | null;
  device?: string | null;
  when?: string | null;
  /**
   * One line in words, written by its section (workbench.report.sections; the viewer shows it as is). Added in 2.5.
   */
  summary?: string;
  /**
   * 'measured by X, on D, at W' (the parts that are known), written by workbench.report.summaries (the viewer shows it as is). Added in 2.7.
   */
  provenance?: string;
  timing?: null | Timing;
  reference?: null | Timing;
  /**
   * reference median / kernel median: above 1 = faster than the reference.
   */
  ratio?: number | null;
  errors?: MeasureError[];
}
/**
 * One timing (workbench.measure.BenchResult.to_dict()); times in ms per call.
 *
 * This interface was referenced by `TlxReport`'s JSON-Schema
 * via the `definition` "timing".
 */
export interface Timing {
  name: string;
  median_ms: number | null;
  p10_ms: number | null;
  p90_ms: number | null;
  mean_ms?: number | null;
  min_ms?: number | null;
  runs: number;
  calls_per_run?: number;
  /**
   * cuda-events or cuda-graph.
   */
  method: string;
  /**
   * flushed, warm or rotating N input sets.
   */
  l2: string;
  /**
   * (p90 - p10) / median.
   */
  spread?: number | null;
  stable: boolean;
  spread_limit?: number;
  warning?: string | null;
  notes?: string[];
  env?: Env;
  flops?: number | null;
  bytes?: number | null;
  tflops?: number | null;
  tbs?: number | null;
}
/**
 * Where and when a number was measured.
 *
 * This interface was referenced by `TlxReport`'s JSON-Schema
 * via the `definition` "env".
 */
export interface Env {
  measured_at?: string | null;
  device?: string | null;
  driver?: string | null;
  torch?: string | null;
  triton?: string | null;
  python?: string | null;
  cuda_runtime?: string | null;
}
/**
 * This interface was referenced by `TlxReport`'s JSON-Schema
 * via the `definition` "measureError".
 */
export interface MeasureError {
  type: string;
  message: string;
  /**
   * counts, timing, reference or roofline.
   */
  where?: string | null;
}
/**
 * Where the kernel sits against the device's roofs (workbench.measure.Roofline.to_dict()). Static (no seconds) when not timed.
 *
 * This interface was referenced by `TlxReport`'s JSON-Schema
 * via the `definition` "roofline".
 */
export interface Roofline {
  kind: 'roofline';
  status: Status;
  reason: string | null;
  measured_by?: string | null;
  device?: string | null;
  when?: string | null;
  /**
   * One line in words, written by its section (workbench.report.sections; the viewer shows it as is). Added in 2.5.
   */
  summary?: string;
  /**
   * 'measured by X, on D, at W' (the parts that are known), written by workbench.report.summaries (the viewer shows it as is). Added in 2.7.
   */
  provenance?: string;
  name?: string;
  dtype?: string;
  flops?: number | null;
  bytes?: number | null;
  counts?: {
    flops?: number | null;
    bytes?: number | null;
    source?: string;
    note?: string;
    estimate?: boolean;
  };
  /**
   * FLOP per byte of device-memory traffic.
   */
  intensity?: number | null;
  /**
   * compute or memory.
   */
  bound?: string | null;
  ridge?: number | null;
  /**
   * The compute roof: the datasheet peak where known.
   */
  peak_tflops: number | null;
  /**
   * The memory roof: the datasheet bandwidth where known.
   */
  bandwidth_tbs: number | null;
  view?: RooflineView;
  /**
   * The measured compute ceiling (what cuBLAS reached), drawn as a second line; null when not measured.
   */
  measured_peak_tflops?: number | null;
  measured_bandwidth_tbs?: number | null;
  attainable_tflops?: number | null;
  seconds?: number | null;
  achieved_tflops?: number | null;
  achieved_tbs?: number | null;
  compute_fraction?: number | null;
  memory_fraction?: number | null;
  roof_fraction?: number | null;
  ceilings?: Ceilings;
  ceilings_label?: string;
  points: RooflinePoint[];
  notes?: string[];
}
/**
 * What the Roofline tab draws, computed by workbench.report.sections.roofline from the payload (the viewer only draws it). Added in 2.7.
 *
 * This interface was referenced by `TlxReport`'s JSON-Schema
 * via the `definition` "rooflineView".
 */
export interface RooflineView {
  /**
   * The roof (the datasheet's: a Report from before 2.1 stored its measured ceiling as the roof) and the measured ceiling; null when the device's ceilings are unknown.
   */
  roofs: {
    peak_tflops: number;
    bandwidth_tbs: number;
    measured_peak_tflops: number | null;
    measured_bandwidth_tbs: number | null;
  } | null;
  /**
   * The timed points, each moved a few percent along x from those it would cover; left: its label goes on the left.
   */
  placed: {
    name: string;
    kind: string;
    x: number;
    y: number;
    left: boolean;
  }[];
  /**
   * Whether the kernel itself was timed (else only its intensity, a dotted line, when known).
   */
  timed: boolean;
}
/**
 * This interface was referenced by `TlxReport`'s JSON-Schema
 * via the `definition` "ceilings".
 */
export interface Ceilings {
  device: string;
  /**
   * measured or datasheet.
   */
  source: string;
  /**
   * Peak TFLOP/s by dtype.
   */
  tflops?: {
    [k: string]: number | null;
  };
  bandwidth_tbs?: number | null;
  measured_at?: string | null;
  driver?: string | null;
  notes?: string[];
  method?: {};
  env?: {};
  datasheet?: null | {};
}
/**
 * This interface was referenced by `TlxReport`'s JSON-Schema
 * via the `definition` "rooflinePoint".
 */
export interface RooflinePoint {
  name: string;
  kind?: string;
  flops?: number | null;
  bytes?: number | null;
  seconds?: number | null;
  intensity: number | null;
  tflops?: number | null;
  tbs?: number | null;
}
/**
 * torch.profiler per-kernel table of one call (workbench.measure.Capture.to_dict()).
 *
 * This interface was referenced by `TlxReport`'s JSON-Schema
 * via the `definition` "capture".
 */
export interface Capture {
  kind: 'capture';
  status: Status;
  reason: string | null;
  measured_by?: string | null;
  device?: string | null;
  when?: string | null;
  /**
   * One line in words, written by its section (workbench.report.sections; the viewer shows it as is). Added in 2.5.
   */
  summary?: string;
  /**
   * 'measured by X, on D, at W' (the parts that are known), written by workbench.report.summaries (the viewer shows it as is). Added in 2.7.
   */
  provenance?: string;
  kernels?: {
    name: string;
    kind?: string;
    calls?: number;
    device_us?: number | null;
    mean_us?: number | null;
    share?: number | null;
  }[];
  device_ms?: number | null;
  span_ms?: number | null;
  event_ms?: number | null;
  busy_fraction?: number | null;
  repeat?: number;
  env?: Env;
  notes?: string[];
}
/**
 * --stalls: one launch's warp-state samples (Nsight Compute, SourceCounters) per role, per user line and per SASS instruction (workbench.measure.stalls). Added in 2.5.
 *
 * This interface was referenced by `TlxReport`'s JSON-Schema
 * via the `definition` "stalls".
 */
export interface Stalls {
  kind: 'stalls';
  status: Status;
  reason: string | null;
  measured_by?: string | null;
  device?: string | null;
  when?: string | null;
  /**
   * One line in words, written by its section (workbench.report.sections; the viewer shows it as is). Added in 2.5.
   */
  summary?: string;
  /**
   * 'measured by X, on D, at W' (the parts that are known), written by workbench.report.summaries (the viewer shows it as is). Added in 2.7.
   */
  provenance?: string;
  kernel?: string;
  /**
   * Wall time of the profiled launch, its worker's start and the report's reading.
   */
  seconds?: number | null;
  /**
   * The profiled launch's duration as ncu measured it.
   */
  duration_ns?: number | null;
  ncu_version?: string | null;
  /**
   * The .ncu-rep, to open in Nsight Compute.
   */
  report_file?: string | null;
  samples?: number;
  /**
   * Reasons with samples, most first.
   */
  reasons?: string[];
  by_reason?: StallCounts;
  /**
   * Shares of the samples placed on an instruction, a line, a role, both; and inside the SASS loops.
   */
  mapped?: {
    instruction?: number | null;
    line?: number | null;
    role?: number | null;
    role_and_line?: number | null;
    loop_samples?: number;
    loop_role_and_line?: number | null;
  };
  pc_offset?: number;
  roles?: {
    role: string;
    line?: number | null;
    warps?: number;
    samples: number;
    stalled?: number | null;
    by_reason: StallCounts1;
  }[];
  lines?: {
    line: number;
    samples: number;
    top?: string | null;
    role?: string | null;
    by_reason: StallCounts1;
  }[];
  hot?: {
    address: number;
    sass_line: number;
    op: string;
    samples: number;
    top?: string | null;
    line?: number | null;
    role?: string | null;
    loop?: boolean;
    by_reason?: StallCounts1;
  }[];
}
/**
 * Every sample by reason, placed on a role and a line or not.
 */
export interface StallCounts {
  [k: string]: number;
}
/**
 * Warp samples by stall reason (Nsight Compute's names: long_scoreboard, barrier, wait, ...; selected: the warp issued).
 *
 * This interface was referenced by `TlxReport`'s JSON-Schema
 * via the `definition` "stallCounts".
 */
export interface StallCounts1 {
  [k: string]: number;
}
/**
 * A measurement of a kind this schema version does not type; shown as its fields.
 *
 * This interface was referenced by `TlxReport`'s JSON-Schema
 * via the `definition` "otherMeasurement".
 */
export interface OtherMeasurement {
  kind: string;
  status?: Status;
  reason?: string | null;
  measured_by?: string | null;
  device?: string | null;
  when?: string | null;
  /**
   * One line in words, written by its section (workbench.report.sections; the viewer shows it as is). Added in 2.5.
   */
  summary?: string;
  /**
   * 'measured by X, on D, at W' (the parts that are known), written by workbench.report.summaries (the viewer shows it as is). Added in 2.7.
   */
  provenance?: string;
}
/**
 * --timeline: per-role lanes of a sample of CTAs and per-role stats from one instrumented launch (workbench.measure.timeline). Compact: aggregated lanes, not raw events.
 *
 * This interface was referenced by `TlxReport`'s JSON-Schema
 * via the `definition` "timeline".
 */
export interface Timeline {
  kind: 'timeline';
  status: Status;
  reason: string | null;
  measured_by?: string | null;
  device?: string | null;
  when?: string | null;
  /**
   * One line in words, written by its section (workbench.report.sections; the viewer shows it as is). Added in 2.5.
   */
  summary?: string;
  /**
   * 'measured by X, on D, at W' (the parts that are known), written by workbench.report.summaries (the viewer shows it as is). Added in 2.7.
   */
  provenance?: string;
  kernel?: string;
  ctas_recorded?: number;
  ctas_total?: number;
  /**
   * The SM clock used to turn cycles into ns (mhz, source).
   */
  clock?: {};
  roles?: TimelineRole[];
  lanes?: TimelineLane[];
  view?: TimelineView;
  overlap?: {} | null;
  cta_start_skew?: {} | null;
  dropped?: {} | null;
  /**
   * Plain vs instrumented timing and the overhead.
   */
  timing?: {} | null;
  warnings?: string[];
  errors?: unknown[];
  env?: Env;
}
/**
 * This interface was referenced by `TlxReport`'s JSON-Schema
 * via the `definition` "timelineRole".
 */
export interface TimelineRole {
  role: string;
  /**
   * producer, consumer or other.
   */
  kind?: string;
  warps?: unknown;
  busy_fraction?: number | null;
  waiting_fraction?: number | null;
  span_ns?: number | null;
  activity_share?: {};
  iterations?: {};
  phases_ns?: {};
  notes?: string[];
}
/**
 * One bar of the per-role timeline: a CTA's role (all its warps folded) doing one activity.
 *
 * This interface was referenced by `TlxReport`'s JSON-Schema
 * via the `definition` "timelineLane".
 */
export interface TimelineLane {
  cta?: number | null;
  role: string;
  /**
   * task, waiting, tma, mma, epilogue, other.
   */
  category?: string;
  name?: string;
  start_ns?: number;
  dur_ns?: number;
  cycles?: number | null;
}
/**
 * What the Timeline tab draws besides the lanes, computed by workbench.report.sections.timeline (the viewer only draws it): the lanes' categories in drawing order with their colours and legend labels (2.7), and the lanes as the Chrome / Perfetto trace its download link saves (workbench.measure.timeline.chart.lanes_trace, 2.8).
 *
 * This interface was referenced by `TlxReport`'s JSON-Schema
 * via the `definition` "timelineView".
 */
export interface TimelineView {
  categories: {
    category: string;
    color: string;
    label: string;
  }[];
  /**
   * Trace Event JSON: displayTimeUnit, traceEvents (process = CTA, thread = role, ts/dur in us, args.cycles), otherData.
   */
  trace?: {
    displayTimeUnit?: string;
    traceEvents: {}[];
    otherData?: {};
  } | null;
}
/**
 * A finding of a static orchestration check, pointing at the user's line.
 *
 * This interface was referenced by `TlxReport`'s JSON-Schema
 * via the `definition` "finding".
 */
export interface Finding {
  /**
   * Which check, e.g. wait-never-completed.
   */
  rule: string;
  severity: 'error' | 'warning' | 'info';
  line: number | null;
  message: string;
  related?: {
    line: number | null;
    message: string;
  }[];
  hint?: string | null;
}
/**
 * This interface was referenced by `TlxReport`'s JSON-Schema
 * via the `definition` "diagnostic".
 */
export interface Diagnostic {
  severity: 'error' | 'warning' | 'info';
  message: string;
  /**
   * User line (see top description).
   */
  line: number | null;
  col?: number | null;
  hint: string | null;
  /**
   * What produced it: compile, tlx, run, check, magic, profile, ...
   */
  source?: string | null;
}
/**
 * This interface was referenced by `TlxReport`'s JSON-Schema
 * via the `definition` "device".
 */
export interface Device {
  available: boolean;
  kind: 'cuda' | 'hip' | 'none';
  name: string | null;
  /**
   * e.g. sm_90
   */
  arch?: string | null;
  /**
   * Why no GPU is available.
   */
  reason?: string | null;
}
/**
 * This interface was referenced by `TlxReport`'s JSON-Schema
 * via the `definition` "diff".
 */
export interface Diff {
  id: string;
  created: string;
  /**
   * How the user names the earlier Report: the --diff expression (r2, s.report(5)) or its cell's run (In [4]).
   */
  label?: string;
  /**
   * The compilation is identical.
   */
  same_key: boolean;
  /**
   * Unified diff of the kernel source (empty when equal).
   */
  source_diff: string;
  metadata: {
    field: string;
    before: unknown;
    after: unknown;
  }[];
  stages: StageDiff[];
  measurements?: {
    kind: string;
    before?: unknown;
    after?: unknown;
  }[];
  /**
   * Why one run is faster (workbench.report.compare): time, warp-stall reasons ranked by the time they explain, per-role stalls and the hottest SASS loop's instruction mix, each where both Reports have it. Added in 2.5.
   */
  performance?: null | PerformanceDiff;
}
/**
 * How one stage changed; the unified diff is plain (diff) or gzip+base64 (diff_gz).
 *
 * This interface was referenced by `TlxReport`'s JSON-Schema
 * via the `definition` "stageDiff".
 */
export interface StageDiff {
  name: string;
  status: 'same' | 'changed' | 'added' | 'removed';
  added: number;
  removed: number;
  /**
   * Unified diff (possibly truncated).
   */
  diff?: string;
  /**
   * The same, gzip-compressed and base64-encoded.
   */
  diff_gz?: string;
  truncated?: boolean;
}
/**
 * This interface was referenced by `TlxReport`'s JSON-Schema
 * via the `definition` "performanceDiff".
 */
export interface PerformanceDiff {
  time?: {
    before_ms?: number;
    after_ms?: number;
    speedup?: number;
    measured?: string;
  } | null;
  stalls?: {
    before?: {};
    after?: {};
    rule?: string;
    reasons?: {
      reason: string;
      before_share: number;
      after_share: number;
      before_ns?: number;
      after_ns?: number;
      delta_ns?: number;
    }[];
    roles?: {
      role: string;
      before?: unknown;
      after?: unknown;
    }[];
  } | null;
  loop_mix?: {
    before?: {};
    after?: {};
    rows?: {
      class: string;
      before: number;
      after: number;
      delta: number;
    }[];
  } | null;
  timeline?:
    | {
        role: string;
        before?: unknown;
        after?: unknown;
      }[]
    | null;
  /**
   * One sentence per difference, the largest first.
   */
  ranked: string[];
}
/**
 * A search over configs (workbench.search): one row per candidate; the viewer's Search tab. search_id names the SearchResult in the kernel that made it, so a row can ask for that candidate's Report.
 *
 * This interface was referenced by `TlxReport`'s JSON-Schema
 * via the `definition` "search".
 */
export interface Search {
  search_id: string;
  kernel: string;
  target: string;
  /**
   * The candidate this Report is of.
   */
  shown?: number | null;
  best: number | null;
  config_keys: string[];
  counts: {
    [k: string]: number;
  };
  /**
   * When, where (cluster, GPUs), per-phase seconds, utilisation, notes.
   */
  info: {};
  rows: SearchRow[];
}
/**
 * This interface was referenced by `TlxReport`'s JSON-Schema
 * via the `definition` "searchRow".
 */
export interface SearchRow {
  index: number;
  config: {};
  status: 'ok' | 'compiled' | 'skipped' | 'compile-error' | 'check-failed' | 'hang' | 'fault' | 'lost' | 'pending';
  ms?: number | null;
  tflops?: number | null;
  tbs?: number | null;
  /**
   * Reference time / candidate time, same rounds.
   */
  ratio?: number | null;
  registers?: number | null;
  spills?: number | null;
  shared_kib?: number | null;
  compile_s?: number | null;
  /**
   * Served from Triton's cache: compile_s is then a lookup, not a compile.
   */
  cache_hit?: boolean | null;
  findings?: string | null;
  error?: string | null;
  node?: string | null;
  /**
   * Timed again with the other leaders, in the same rounds.
   */
  confirmed?: boolean | null;
  /**
   * A row kept from an earlier search (workbench.search.result_cache): when it was measured. Null: this search measured it.
   */
  cached?: string | null;
}
/**
 * What the Orchestration tab draws: one lane per task, buffer rings as slot rows, barrier sets as nodes, arrive / expect-bytes / copy edges into a barrier set and wait edges out of it, and the simulated schedule round by round (round r of a barrier is its r-th phase, of a wait its r-th pass on that barrier). Ids index their arrays.
 *
 * This interface was referenced by `TlxReport`'s JSON-Schema
 * via the `definition` "orchestration".
 */
export interface Orchestration {
  kind: 'orchestration';
  status: Status;
  reason: string | null;
  kernel?: string;
  warp_specialized?: boolean;
  tasks: OrchestrationTask[];
  buffers: OrchestrationBuffer[];
  barriers: OrchestrationBarrier[];
  ops: OrchestrationOp[];
  edges: OrchestrationEdge[];
  rounds: OrchestrationRound[];
  /**
   * The waits the simulated run ended in (a hang), each at its round.
   */
  blocked: OrchestrationWait[];
  /**
   * The ring slots' changes in the order the simulated run made them (filling, full, released), each with every ring's slot states after it: what the step control walks through.
   */
  steps?: OrchestrationStep[];
  /**
   * How far the simulated run went and with which launch values.
   */
  simulation?: {
    finished?: number[];
    /**
     * Tasks the run could not follow past a line, and why.
     */
    lost?: {
      task: number;
      line: number | null;
      why: string;
    }[];
    truncated?: boolean;
    steps?: number;
    seconds?: number;
    values?: {
      [k: string]: number;
    };
    grid?: number[] | null;
  };
  marks?: OrchestrationMark[];
  /**
   * Where the wait edges' measured times come from (the Report's timeline).
   */
  measured?: {
    measured_by?: string | null;
    device?: string | null;
    when?: string | null;
    ctas_recorded?: number | null;
    level?: string | null;
  } | null;
}
/**
 * One async task or replica (a lane). region: the TTGIR region it runs in (default, partitionN, kernel); role: the timeline's role of that region.
 *
 * This interface was referenced by `TlxReport`'s JSON-Schema
 * via the `definition` "orchestrationTask".
 */
export interface OrchestrationTask {
  index: number;
  name: string;
  partition?: number | null;
  replica?: number | null;
  num_warps: number;
  start_warp?: number | null;
  registers?: number | null;
  line?: number | null;
  region?: string;
  role?: string | null;
  ops: number[];
}
/**
 * A buffer set (a ring of count slots); filled_by / released_by: the barrier sets whose phases say a slot holds data / is free again; slot_barriers: each slot's barrier index in them (from the copies the simulated run made into each slot, else slot i with barrier i; null for a slot the run never filled); unpaired: why a ring announced by a barrier set is not paired with it (no slot states are drawn).
 *
 * This interface was referenced by `TlxReport`'s JSON-Schema
 * via the `definition` "orchestrationBuffer".
 */
export interface OrchestrationBuffer {
  id: number;
  name: string;
  line?: number | null;
  shape?: number[];
  dtype?: string;
  count: number;
  storage?: string;
  bytes?: number;
  filled_by?: number | null;
  released_by?: number | null;
  slot_barriers?: (number | null)[] | null;
  unpaired?: string | null;
}
/**
 * This interface was referenced by `TlxReport`'s JSON-Schema
 * via the `definition` "orchestrationBarrier".
 */
export interface OrchestrationBarrier {
  id: number;
  name: string;
  line?: number | null;
  count: number;
  arrive_count: number;
  /**
   * A hardware named barrier (bar.sync / bar.arrive) with this id, not an mbarrier set: arrive_count is its thread count.
   */
  named?: number | null;
}
/**
 * An orchestration op of a task as written (kind as workbench.analyse's SyncOp: wait, arrive, expect, tma_load, mma, local_load, ...); repeats: how many ops an unrolled loop made of it.
 *
 * This interface was referenced by `TlxReport`'s JSON-Schema
 * via the `definition` "orchestrationOp".
 */
export interface OrchestrationOp {
  id: number;
  task: number;
  kind: string;
  line: number | null;
  barrier?: number | null;
  buffers?: number[];
  bytes?: number | null;
  count?: number | null;
  in_loop?: boolean;
  repeats?: number;
}
/**
 * arrive / expect / copy / commit: from an op into a barrier set; wait: from a barrier set into a wait op, with the phases it waited for round by round (label: the first two rounds) and, with a timeline, its role's measured waits on that set.
 *
 * This interface was referenced by `TlxReport`'s JSON-Schema
 * via the `definition` "orchestrationEdge".
 */
export interface OrchestrationEdge {
  id: number;
  kind: 'arrive' | 'expect' | 'copy' | 'commit' | 'wait';
  op: number;
  barrier: number;
  label: string;
  phases?: number[][];
  measured?: OrchestrationWaitTime;
  /**
   * The measured wait with the largest mean.
   */
  slowest?: boolean;
}
/**
 * A role's waits on one barrier set, from the timeline (ns); shared: how many wait ops of the task on that set share these numbers.
 *
 * This interface was referenced by `TlxReport`'s JSON-Schema
 * via the `definition` "orchestrationWaitTime".
 */
export interface OrchestrationWaitTime {
  role: string | null;
  count: number;
  mean_ns?: number | null;
  p95_ns?: number | null;
  total_ns?: number | null;
  fraction?: number | null;
  per_cta?: number | null;
  shared?: number;
}
/**
 * This interface was referenced by `TlxReport`'s JSON-Schema
 * via the `definition` "orchestrationRound".
 */
export interface OrchestrationRound {
  round: number;
  /**
   * Phase `round` of each barrier that reached it: completed or not, who arrived, the bytes expected and copied.
   */
  barriers: {
    barrier: number;
    index: number;
    completed: boolean;
    arrivals?: {
      task: number;
      line: number | null;
      count: number;
    }[];
    expected?: number;
    copied?: number;
    pending?: number;
  }[];
  slots: {
    buffer: number;
    index: number;
    state: 'empty' | 'filling' | 'full' | 'released';
  }[];
  waits: OrchestrationWait[];
}
/**
 * A wait op in a round: the barrier index, the phase (parity) it waited for, whether it passed.
 *
 * This interface was referenced by `TlxReport`'s JSON-Schema
 * via the `definition` "orchestrationWait".
 */
export interface OrchestrationWait {
  op: number;
  task?: number;
  line?: number | null;
  barrier?: number | null;
  index?: number | null;
  parity?: number | null;
  named?: number | null;
  round?: number;
  passed?: boolean;
}
/**
 * This interface was referenced by `TlxReport`'s JSON-Schema
 * via the `definition` "orchestrationStep".
 */
export interface OrchestrationStep {
  round: number;
  buffer: number;
  slots: number[];
  state: 'filling' | 'full' | 'released';
  task: number | null;
  line: number | null;
  states: {
    buffer: number;
    states: string[];
  }[];
}
/**
 * A finding, a live snapshot's wait or a stress run's telling delay drawn on the graph: red, a wait that never completes; orange, a read too early; other, any other finding at an op's line; live (2.6), warps a hung launch's live snapshot found waiting there; delay (2.6), a site whose delay went with failing --stress runs. finding indexes the Report's findings (null for the others).
 *
 * This interface was referenced by `TlxReport`'s JSON-Schema
 * via the `definition` "orchestrationMark".
 */
export interface OrchestrationMark {
  /**
   * What the mark is of (2.6; a mark without it is a finding's).
   */
  source?: 'finding' | 'snapshot' | 'stress';
  finding: number | null;
  rule: string;
  severity?: 'error' | 'warning' | 'info';
  color: 'red' | 'orange' | 'other' | 'live' | 'delay';
  line?: number | null;
  message?: string;
  ops: number[];
  edges: number[];
}
