/**
 * The Stalls tab (`%%tlx --stalls`): where the warps of one launch waited, as Python computed it
 * (workbench.analyse.stalls): per role a stacked bar of samples by stall reason, then the user's lines and the
 * hottest SASS instructions, each row linked to the source or the SASS. This file only draws.
 */
import { clear, el } from './dom';
import type { Heat } from './editor';
import { esc, loadPlotly } from './plots';
import type { Stalls } from './schema';
import { percent, provenance } from './summary';

/** Reasons drawn as their own colour; the rest are summed as "other". */
export const SHOWN_REASONS = 7;
const ISSUED = 'selected';

export interface StallsOptions {
  /** Pin a user line in the Source & IR tab. */
  showLine: (line: number) => void;
  /** Pin a SASS line in the Source & IR tab. */
  showSass: (line: number) => void;
}

export interface RoleBars {
  roles: string[];
  traces: { reason: string; values: number[] }[];
}

/** Per role, samples of the most frequent reasons (the warp issuing last), the rest as "other". */
export function roleBars(p: Stalls): RoleBars {
  const roles = (p.roles ?? []).filter(r => r.samples > 0);
  const order = (p.reasons ?? []).filter(r => r !== ISSUED);
  const shown = order.slice(0, SHOWN_REASONS);
  const traces = shown.map(reason => ({ reason, values: roles.map(r => r.by_reason[reason] ?? 0) }));
  const other = roles.map(r => Object.entries(r.by_reason)
    .filter(([k]) => k !== ISSUED && !shown.includes(k)).reduce((s, [, v]) => s + v, 0));
  if (other.some(v => v > 0)) {
    traces.push({ reason: 'other', values: other });
  }
  traces.push({ reason: 'issuing (selected)', values: roles.map(r => r.by_reason[ISSUED] ?? 0) });
  return { roles: roles.map(r => r.role), traces };
}

/** Rows with samples as shaded lines: each row's samples against the hottest row's, the numbers on hover. */
function shade<T extends { samples: number; top?: string | null; role?: string | null }>(
  p: Stalls, rows: T[], line: (r: T) => number, head: (r: T) => string, where: (r: T) => string): Heat[] {
  const top = Math.max(0, ...rows.map(r => r.samples));
  const total = p.samples || 1;
  return top ? rows.filter(r => r.samples > 0).map(r => ({
    line: line(r),
    share: r.samples / top,
    title: `${head(r)}${r.samples} warp samples (${percent(r.samples / total)})` +
      (r.top ? `, mostly ${r.top}` : '') + where(r) + (r.role ? ` · ${r.role}` : '')
  })) : [];
}

/** The source lines' shading by their samples. */
export function heatOf(p: Stalls): Heat[] {
  return shade(p, p.lines ?? [], l => l.line, () => '', () => '');
}

/** The SASS lines of the hottest instructions, shaded the same way (the stage the samples were taken in). */
export function sassHeat(p: Stalls): Heat[] {
  return shade(p, p.hot ?? [], h => h.sass_line, h => `${h.op}: `, h => (h.line ? ` · line ${h.line}` : ''));
}

/** One sentence: how much was sampled and how much of it could be placed. */
export function stallsSummary(p: Stalls): string {
  const m = p.mapped ?? {};
  const dur = typeof p.duration_ns === 'number' ? `, the launch took ${(p.duration_ns / 1e3).toFixed(1)} us` : '';
  return `${p.samples ?? 0} warp samples${dur}: ${percent(m.role_and_line)} on a role and a line ` +
    `(${percent(m.loop_role_and_line)} of the ${m.loop_samples ?? 0} in the SASS loops)`;
}

function table(head: string[], rows: (string | number)[][], onClick: (i: number) => void, title: string): HTMLElement {
  const t = el('table', { class: 'tlx-table tlx-stalls-table' });
  const tr = el('tr');
  for (const h of head) {
    tr.append(el('th', { text: h }));
  }
  t.append(tr);
  rows.forEach((r, i) => {
    const row = el('tr', { class: 'tlx-clickable', title });
    for (const c of r) {
      row.append(el('td', { text: String(c) }));
    }
    row.addEventListener('click', () => onClick(i));
    t.append(row);
  });
  return t;
}

export async function renderStalls(host: HTMLElement, p: Stalls, opts: StallsOptions): Promise<void> {
  clear(host);
  host.append(el('div', { class: 'tlx-plot-caption', text: provenance(p) }));
  host.append(el('div', { class: 'tlx-stalls-summary', text: stallsSummary(p) }));
  if (p.report_file) {
    host.append(el('div', { class: 'tlx-plot-caption', text: `Nsight Compute report: ${p.report_file}` }));
  }
  const plotDiv = el('div', { class: 'tlx-plot' });
  host.append(plotDiv);
  const total = p.samples || 1;
  const lines = [...(p.lines ?? [])].sort((a, b) => b.samples - a.samples).slice(0, 30);
  host.append(el('h4', { text: 'Lines (most samples first; a click shows the line)' }));
  host.append(table(['line', 'role', 'samples', 'share', 'top reason'],
    lines.map(l => [l.line, l.role ?? '-', l.samples, percent(l.samples / total), l.top ?? '-']),
    i => opts.showLine(lines[i].line), 'show this line in Source & IR'));
  const hot = p.hot ?? [];
  host.append(el('h4', { text: 'SASS instructions (most samples first; a click shows it in the SASS)' }));
  host.append(table(['address', 'instruction', 'line', 'role', 'samples', 'top reason', 'in a loop'],
    hot.map(h => [`0x${h.address.toString(16)}`, h.op, h.line ?? '-', h.role ?? '-', h.samples, h.top ?? '-',
      h.loop ? 'yes' : '']),
    i => opts.showSass(hot[i].sass_line), 'show this instruction in the SASS'));
  const bars = roleBars(p);
  if (!bars.roles.length) {
    plotDiv.append(el('div', { class: 'tlx-plot-status', text: 'No samples fell on a role.' }));
    return;
  }
  const Plotly = await loadPlotly();
  await Plotly.newPlot(
    plotDiv,
    bars.traces.map(t => ({
      type: 'bar', orientation: 'h', name: esc(t.reason), y: bars.roles.map(esc), x: t.values,
      hovertemplate: `${esc(t.reason)}: %{x} samples<extra>%{y}</extra>`
    })),
    {
      barmode: 'stack',
      height: 120 + 40 * bars.roles.length,
      margin: { l: 230, r: 20, t: 30, b: 50 },
      xaxis: { title: { text: 'warp samples' } },
      yaxis: { autorange: 'reversed' },
      title: { text: `Where each role's warps were: ${esc(p.kernel ?? '')}` }
    },
    { displaylogo: false, responsive: true }
  );
}
