/**
 * The Search tab: every candidate of a `%%tlx --search` (workbench.search) in a table that sorts by any column,
 * and a chart of time by candidate coloured by status. A row's button asks the kernel for that candidate's
 * Report (onOpen); the row of the Report shown is marked. Nothing from the payload is rendered as HTML.
 */
import { clear, el } from './dom';
import { esc, loadPlotly } from './plots';
import type { Search, SearchRow } from './schema';

export const STATUS_COLOURS: { [s: string]: string } = {
  ok: '#2ca02c',
  compiled: '#1f77b4',
  skipped: '#ff7f0e',
  'compile-error': '#7f7f7f',
  'check-failed': '#d62728',
  hang: '#9467bd',
  fault: '#8c564b',
  lost: '#e377c2',
  pending: '#bbbbbb'
};

export interface SearchOptions {
  /** Ask for candidate `index`'s Report; resolves when shown, rejects with what went wrong. */
  onOpen?: (searchId: string, index: number) => Promise<void>;
}

interface Column {
  key: string;
  label: string;
  value: (r: SearchRow) => string | number | null;
  format?: (v: number) => string;
  /** What the cell shows instead of the formatted value (it still sorts by the value), or null. */
  text?: (r: SearchRow) => string | null;
}

const num = (v: unknown): number | null => (typeof v === 'number' && isFinite(v) ? v : null);

function columns(p: Search): Column[] {
  const cfg: Column[] = p.config_keys.map(k => ({
    key: `cfg:${k}`,
    label: k,
    value: r => {
      const v = (r.config as { [k: string]: unknown })[k];
      return typeof v === 'number' ? v : v === undefined || v === null ? null : String(v);
    }
  }));
  const n = (key: keyof SearchRow, label: string, format?: (v: number) => string): Column => ({
    key: String(key),
    label,
    value: r => num(r[key]),
    format
  });
  return [
    { key: 'index', label: '#', value: r => r.index },
    ...cfg,
    { key: 'status', label: 'status', value: r => r.status },
    n('ms', 'ms', v => v.toPrecision(4)),
    n('tflops', 'TFLOP/s', v => v.toFixed(0)),
    n('tbs', 'TB/s', v => v.toFixed(2)),
    n('ratio', 'vs ref', v => `${v.toFixed(3)}x`),
    n('registers', 'regs'),
    n('spills', 'spills'),
    n('shared_kib', 'smem KiB', v => v.toFixed(0)),
    { ...n('compile_s', 'compile s', v => v.toFixed(1)), text: r => (r.cache_hit ? 'cached' : null) },
    { key: 'node', label: 'node', value: r => r.node ?? null },
    { key: 'cached', label: 'kept from', value: r => (r.cached ? r.cached.replace('T', ' ').slice(0, 16) : null) },
    { key: 'why', label: 'findings / error', value: r => r.error ?? r.findings ?? null }
  ];
}

function compare(a: string | number | null, b: string | number | null): number {
  if (a === null) {
    return b === null ? 0 : 1; // empty cells last whichever way
  }
  if (b === null) {
    return -1;
  }
  return typeof a === 'number' && typeof b === 'number' ? a - b : String(a).localeCompare(String(b));
}

function summary(p: Search): string {
  const counts = Object.entries(p.counts)
    .map(([k, v]) => `${v} ${k}`)
    .join(', ');
  const info = p.info as { [k: string]: any };
  const gpus = Array.isArray(info.gpus) ? info.gpus.map((g: any) => g?.device).filter(Boolean) : [];
  const where = gpus.length ? `on ${Array.from(new Set(gpus)).join(', ')}` : 'compiled only (no GPU)';
  const when = typeof info.date === 'string' ? `, ${info.date}` : '';
  const kept = p.rows.filter(r => r.cached).length;
  const keptNote = kept
    ? `; ${kept} of ${p.rows.length} rows kept from earlier searches ("kept from": when; --remeasure measures again)`
    : '';
  return `${p.rows.length} candidates of ${p.kernel} (${p.target}) ${where}${when}: ${counts}${keptNote}`;
}

/** Render the Search tab into `host`. */
export function renderSearch(host: HTMLElement, p: Search, options: SearchOptions = {}): void {
  clear(host);
  host.append(el('div', { class: 'tlx-search-summary', text: summary(p) }));
  const status = el('div', { class: 'tlx-search-status', role: 'status' });
  const chart = el('div', { class: 'tlx-search-chart' });
  const table = el('table', { class: 'tlx-table tlx-search-table' });
  host.append(chart, status, el('div', { class: 'tlx-search-scroll' }, table));
  // a column no candidate has a value for (no times in a compile-only search) is left out, as in result.table
  const kept = new Set(['index', 'status']);
  const cols = columns(p).filter(c => kept.has(c.key) || p.rows.some(r => c.value(r) !== null || c.text?.(r)));
  const has = (key: string) => cols.some(c => c.key === key);
  let sortKey = num(p.best) === null ? 'index' : has('ratio') ? 'ratio' : has('ms') ? 'ms' : 'index';
  let ascending = sortKey !== 'ratio'; // the best first: the highest ratio, the lowest time
  const draw = () => drawRows(table, p, cols, sortKey, ascending, status, options, (k: string) => {
    ascending = sortKey === k ? !ascending : true;
    sortKey = k;
    draw();
  });
  draw();
  void drawChart(chart, p).catch(e => chart.append(el('div', { class: 'tlx-plot-status', text: `could not draw: ${e}` })));
}

function drawRows(table: HTMLElement, p: Search, cols: Column[], sortKey: string, ascending: boolean,
  status: HTMLElement, options: SearchOptions, onSort: (k: string) => void): void {
  clear(table);
  const head = el('tr', {});
  for (const c of cols) {
    const arrow = c.key === sortKey ? (ascending ? ' \u25b2' : ' \u25bc') : '';
    const th = el('th', { text: c.label + arrow, title: `sort by ${c.label}`, 'data-col': c.key });
    th.addEventListener('click', () => onSort(c.key));
    head.append(th);
  }
  head.append(el('th', { text: '' }));
  table.append(el('thead', {}, head));
  const col = cols.find(c => c.key === sortKey) ?? cols[0];
  const rows = [...p.rows].sort((a, b) => (ascending ? 1 : -1) * compare(col.value(a), col.value(b)));
  const body = el('tbody', {});
  for (const r of rows) {
    const tr = el('tr', { 'data-index': String(r.index), 'data-status': r.status });
    if (r.index === p.shown) {
      tr.classList.add('tlx-search-shown');
    }
    for (const c of cols) {
      const v = c.value(r);
      const text = c.text?.(r) ?? (v === null ? '' : typeof v === 'number' && c.format ? c.format(v) : String(v));
      const td = el('td', { text: c.key === 'why' && text.length > 160 ? text.slice(0, 157) + '...' : text });
      if (c.key === 'status') {
        td.style.color = STATUS_COLOURS[r.status] ?? '';
      }
      if (c.key === 'why' && text) {
        td.title = text;
      }
      if (c.key === 'index' && r.index === p.best) {
        td.textContent = `${r.index} \u2605`;
        td.title = r.confirmed ? 'best (timed again with the other leaders)' : 'best';
      }
      tr.append(td);
    }
    tr.append(el('td', {}, openButton(p, r, status, options)));
    body.append(tr);
  }
  table.append(body);
}

function openButton(p: Search, r: SearchRow, status: HTMLElement, options: SearchOptions): HTMLElement {
  const compiled = r.registers !== null && r.registers !== undefined;
  const b = el('button', {
    class: 'tlx-search-open',
    type: 'button',
    text: 'Report',
    title: compiled ? `open candidate ${r.index}'s Report beside the notebook` : 'not compiled: no Report'
  }) as HTMLButtonElement;
  b.disabled = !compiled || !options.onOpen;
  b.addEventListener('click', () => {
    status.textContent = `asking the kernel for candidate ${r.index}'s Report...`;
    options.onOpen!(p.search_id, r.index).then(
      () => (status.textContent = `candidate ${r.index}'s Report is open beside the notebook`),
      e => (status.textContent = `could not open candidate ${r.index}: ${String(e?.message ?? e)}`)
    );
  });
  return b;
}

async function drawChart(host: HTMLElement, p: Search): Promise<void> {
  const timed = p.rows.map(r => num(r.ms)).filter((v): v is number => v !== null);
  if (!timed.length) {
    host.append(el('div', { class: 'tlx-plot-status', text: 'no candidate was timed (compiled and statically checked only: nothing ran)' }));
    return;
  }
  const Plotly = await loadPlotly();
  const floor = Math.min(...timed) * 0.9;
  const statuses = Array.from(new Set(p.rows.map(r => r.status)));
  const traces = statuses.map(s => {
    const rows = p.rows.filter(r => r.status === s);
    return {
      type: 'scatter',
      mode: 'markers',
      name: `${esc(s)} (${rows.length})`,
      x: rows.map(r => r.index),
      y: rows.map(r => num(r.ms) ?? floor),
      marker: { color: STATUS_COLOURS[s] ?? '#999', size: 9, symbol: s === 'ok' ? 'circle' : 'x' },
      text: rows.map(r => esc(`#${r.index} ${r.status}: ${Object.entries(r.config).map(([k, v]) => `${k}=${v}`).join(' ')}`)),
      hoverinfo: 'text+y'
    };
  });
  await Plotly.newPlot(host, traces, {
    height: 300,
    margin: { l: 60, r: 20, t: 10, b: 40 },
    xaxis: { title: { text: 'candidate' } },
    yaxis: { title: { text: 'ms (median; not timed: on the floor)' } },
    legend: { orientation: 'h' }
  }, { displaylogo: false, responsive: true });
}
