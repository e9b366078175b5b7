/**
 * Plain-text lines for what a Report measured and checked (the same wording as the Python side's
 * workbench/report/summaries.py): every figure with what measured it, where and when; every payload
 * that was not measured with why.
 */
import type { Bench, Check, Measurement, Roofline, Run, Timeline, Timing } from './schema';

const fixed = (v: unknown, digits: number): string | null =>
  typeof v === 'number' && isFinite(v) ? v.toFixed(digits) : null;
const sig = (v: unknown): string | null => (typeof v === 'number' && isFinite(v) ? String(Number(v.toPrecision(4))) : null);
const pct = (v: unknown): string | null => (typeof v === 'number' && isFinite(v) ? `${(100 * v).toFixed(0)}%` : null);

export function runLine(run: Run): string {
  const grid = run.grid?.length ? ` grid=(${run.grid.join(', ')})` : '';
  if (run.mode === 'gpu' && run.ran) {
    return `ran on ${run.device || 'GPU'}${grid}`;
  }
  if (run.mode === 'interpreter' && run.ran) {
    return `ran in Triton's CPU interpreter${grid} (${run.reason || 'no GPU'})`;
  }
  return `not run${grid}: ${run.reason || 'compiled only'}`;
}

export function checkLine(c: Check): string {
  return `check ${c.expr}: ${c.status}${c.message ? ` (${c.message})` : ''}`;
}

/** "measured by X, on D, at W" (the parts that are known). */
export function provenance(m: { measured_by?: string | null; device?: string | null; when?: string | null }): string {
  const parts: string[] = [];
  if (m.measured_by) {
    parts.push(`measured by ${m.measured_by}`);
  }
  if (m.device) {
    parts.push(`on ${m.device}`);
  }
  if (m.when) {
    parts.push(`at ${m.when}`);
  }
  return parts.join(', ');
}

export function timingLine(t: Timing): string {
  let out = sig(t.median_ms) ? `median ${sig(t.median_ms)} ms` : 'no median';
  if (sig(t.p10_ms) && sig(t.p90_ms)) {
    out += ` (p10 ${sig(t.p10_ms)}, p90 ${sig(t.p90_ms)}; ${t.runs} runs, ${t.method}, L2 ${t.l2})`;
  }
  // a rate of a count nobody gave (0: e.g. --flops without --bytes, in Reports recorded before that was fixed)
  if (fixed(t.tflops, 1) && t.flops !== 0) {
    out += `, ${fixed(t.tflops, 1)} TFLOP/s`;
  }
  if (fixed(t.tbs, 3) && t.bytes !== 0) {
    out += `, ${fixed(t.tbs, 3)} TB/s`;
  }
  return t.stable === false ? `${out} [unstable]` : out;
}

function benchBody(m: Bench): string {
  let out = m.timing ? timingLine(m.timing) : 'no timing';
  if (m.reference) {
    out += `; ${m.reference.name === 'reference' ? 'reference' : `reference ${m.reference.name}`}: ${timingLine(m.reference)}`;
    if (fixed(m.ratio, 2)) {
      out += `; ${fixed(m.ratio, 2)}x the reference's speed`;
    }
  }
  return out;
}

export function rooflineBody(m: Roofline): string {
  const bits: string[] = [];
  if (m.bound && fixed(m.intensity, 1)) {
    // a bound stored without a byte count (Reports before 2026-12-04) is no bound
    bits.push(`${m.bound}-bound`);
  }
  bits.push(fixed(m.intensity, 1) ? `intensity ${fixed(m.intensity, 1)} FLOP/B` : 'intensity unknown (no byte count: --bytes)');
  if (fixed(m.achieved_tflops, 1)) {
    const f = pct(m.roof_fraction);
    const measured = m.measured_peak_tflops;
    const vs = m.bound !== 'memory' && typeof measured === 'number' && measured > 0
      ? `, ${pct((m.achieved_tflops as number) / measured)} of the measured ceiling` : '';
    // a Report from before the datasheet roof (2.1): its roof was the measured ceiling
    const old = m.measured_peak_tflops === undefined && (m.roof_fraction ?? 0) > 1;
    const what = old ? ` (${f} of the measured ceiling: cuBLAS's rate at the clock of its measurement)`
      : ` (${f} of the roof${vs})`;
    bits.push(`achieved ${fixed(m.achieved_tflops, 1)} TFLOP/s${f ? what : ''}`);
  }
  if (fixed(m.peak_tflops, 0) && fixed(m.bandwidth_tbs, 2)) {
    bits.push(`roofs ${fixed(m.peak_tflops, 0)} TFLOP/s, ${fixed(m.bandwidth_tbs, 2)} TB/s`);
  }
  if (m.reason) {
    bits.push(m.reason);
  }
  return bits.join(' \u00b7 ');
}

function timelineBody(m: Timeline): string {
  const roles = (m.roles ?? []).map(
    r => `${r.role} busy ${pct(r.busy_fraction) ?? '?'}, waiting ${pct(r.waiting_fraction) ?? '?'}`
  );
  let out = roles.join('; ') || 'no roles';
  const ov = (m.timing as { overhead?: unknown } | null | undefined)?.overhead;
  if (typeof ov === 'number' && isFinite(ov)) {
    out += `; instrumentation overhead ${ov >= 0 ? '+' : ''}${(100 * ov).toFixed(1)}%`;
  }
  return out;
}

/** "bench: median 1.2 ms (...)" or "bench: skipped, because <reason>". */
export function measurementLine(m: Measurement | Timeline): string {
  const status = m.status ?? 'ok';
  if (status !== 'ok') {
    return `${m.kind}: ${status}${m.reason ? `, because ${m.reason}` : ''}`;
  }
  switch (m.kind) {
    case 'bench':
      return `bench: ${benchBody(m as Bench)}`;
    case 'roofline':
      return `roofline: ${rooflineBody(m as Roofline)}`;
    case 'timeline':
      return `timeline: ${timelineBody(m as Timeline)}`;
    default:
      return `${m.kind}: ok`;
  }
}
