/**
 * Plain-text lines for what a Report ran, checked and measured. A measurement's line is the one Python wrote
 * (workbench/report/summaries.py, the payload's `summary`): the numbers are worded once, in Python.
 */
import type { Check, Measurement, Run, Timeline } from './schema';

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

/** "12.5%", or "-" for a share nobody measured. */
export function percent(x: number | null | undefined): string {
  return typeof x === 'number' && isFinite(x) ? `${(100 * x).toFixed(1)}%` : '-';
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

/** "bench: median 1.2 ms (...)" or "bench: skipped, because <reason>": the line Python wrote (`summary`). */
export function measurementLine(m: Measurement | Timeline): string {
  if (m.summary) {
    return m.summary;
  }
  const status = m.status ?? 'ok';
  if (status !== 'ok') {
    return `${m.kind}: ${status}${m.reason ? `, because ${m.reason}` : ''}`;
  }
  return `${m.kind}: ${OLD_REPORT}`;
}

/** What stands for a line that a Report from before 2.5 did not carry. */
export const OLD_REPORT = 'ok (a Report from before 2.5 carries no summary line: run the cell again for it)';
