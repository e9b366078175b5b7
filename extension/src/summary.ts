/**
 * The lines in words of what a Report ran, checked and measured. Python writes them (workbench/report/summaries.py
 * and the sections' summaries: each payload's `summary` and `provenance`); the viewer shows them as they are and
 * words nothing itself. A Report from before 2.7 (a notebook saved earlier) carries no such line: its stored
 * fields are shown as they are instead.
 */
import type { Check, Measurement, Run, Timeline } from './schema';

/** What stands for an ok measurement's line that a Report from before 2.5 did not carry. */
export const OLD_REPORT = 'ok (a Report from before 2.5 carries no summary line: run the cell again for it)';

/** The run's line as Python wrote it; a Report from before 2.7: its stored device or reason. */
export function runLine(run: Run): string {
  return run.summary ?? [run.mode, run.ran ? run.device : run.reason].filter(Boolean).join(': ');
}

/** The check's line as Python wrote it; a Report from before 2.7: its stored expression, status and message. */
export function checkLine(c: Check): string {
  return c.summary ?? [c.expr, c.status, c.message].filter(Boolean).join(': ');
}

/** "12.5%", or "-" for a share nobody measured. */
export function percent(x: number | null | undefined): string {
  return typeof x === 'number' && isFinite(x) ? `${(100 * x).toFixed(1)}%` : '-';
}

/** Who measured it, where and when, as Python wrote it; a Report from before 2.7: the stored fields. */
export function provenance(m: {
  provenance?: string;
  measured_by?: string | null;
  device?: string | null;
  when?: string | null;
}): string {
  return m.provenance ?? [m.measured_by, m.device, m.when].filter(Boolean).join(', ');
}

/** The measurement's line as Python wrote it; a Report from before 2.5: its stored kind, status and reason. */
export function measurementLine(m: Measurement | Timeline): string {
  if (m.summary) {
    return m.summary;
  }
  const status = m.status ?? 'ok';
  return status === 'ok' ? `${m.kind}: ${OLD_REPORT}` : [m.kind, status, m.reason].filter(Boolean).join(': ');
}
