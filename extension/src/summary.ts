/**
 * The lines in words of what a Report ran, checked and measured. Python writes them (workbench/report/summaries.py
 * and the sections' summaries: each payload's `summary` and `provenance`); the viewer shows them as they are and
 * words nothing itself. A Report from before a line was written says so instead.
 */
import type { Check, Measurement, Run, Timeline } from './schema';

/** What stands for a line that an older Report did not carry (`since`: the schema version that added it). */
export function olderReport(since: string): string {
  return `(a Report from before ${since} carries no line in words for this: run the cell again for it)`;
}

export const OLD_REPORT = `ok ${olderReport('2.5')}`;

/** "ran on D grid=(...)" or "not run: <why>": the run's line as Python wrote it. */
export function runLine(run: Run): string {
  return run.summary ?? `${run.mode}${run.ran ? '' : ', not run'} ${olderReport('2.7')}`;
}

/** "check <expr>: <status> (<message>)": the check's line as Python wrote it. */
export function checkLine(c: Check): string {
  return c.summary ?? `check ${c.expr}: ${c.status} ${olderReport('2.7')}`;
}

/** "12.5%", or "-" for a share nobody measured. */
export function percent(x: number | null | undefined): string {
  return typeof x === 'number' && isFinite(x) ? `${(100 * x).toFixed(1)}%` : '-';
}

/** "measured by X, on D, at W" as Python wrote it (empty for an older Report: its caption is left out). */
export function provenance(m: { provenance?: string }): string {
  return m.provenance ?? '';
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
