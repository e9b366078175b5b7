/**
 * Timeline and roofline charts. plotly.js (basic bundle) is loaded lazily, the first
 * time a chart is shown. Every string from the Report is escaped before plotly sees it,
 * since plotly interprets a subset of HTML in labels.
 */
import { clear, el } from './dom';
import type { Roofline, RooflineView, Timeline } from './schema';
import { OLD_REPORT, provenance } from './summary';

let plotlyPromise: Promise<any> | null = null;

export function loadPlotly(): Promise<any> {
  if (!plotlyPromise) {
    plotlyPromise = import(/* webpackChunkName: "tlx-plotly" */ 'plotly.js-basic-dist-min').then(
      m => (m as any).default ?? m
    );
  }
  return plotlyPromise;
}

export function esc(s: unknown): string {
  return String(s ?? '')
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;');
}

const num = (v: unknown): number | null => (typeof v === 'number' && isFinite(v) ? v : null);

export interface Span {
  row: string;
  name: string;
  category: string;
  start: number;
  end: number;
}

/** Bars of a timeline payload: one per lane entry (a CTA's role doing one activity), in ns. */
export function timelineSpans(p: Timeline): Span[] {
  const out: Span[] = [];
  for (const l of p.lanes ?? []) {
    const start = num(l.start_ns);
    const dur = num(l.dur_ns);
    if (start === null || dur === null) {
      continue;
    }
    const row = l.cta !== undefined && l.cta !== null ? `CTA ${l.cta} \u00b7 ${l.role}` : l.role;
    out.push({ row, name: l.name ?? l.category ?? '', category: l.category ?? l.name ?? 'other', start, end: start + dur });
  }
  return out;
}

/**
 * A link that saves the timeline's lanes as a Perfetto / Chrome trace: the Trace Event JSON Python wrote
 * (view.trace, workbench.measure.timeline.chart.lanes_trace, the layout of Timeline.to_perfetto); null when the
 * Report has none (no lanes, or written before schema 2.8).
 */
export function traceLink(p: Timeline): HTMLElement | null {
  const trace = p.view?.trace;
  if (!trace || !(trace.traceEvents ?? []).length) {
    return null;
  }
  const blob = new Blob([JSON.stringify(trace)], { type: 'application/json' });
  const link = el('a', {
    class: 'tlx-trace-link',
    href: URL.createObjectURL(blob),
    download: `${(p.kernel ?? 'kernel').replace(/[^\w.-]/g, '_')}-timeline.json`,
    text: 'Download as a Perfetto / Chrome trace'
  });
  return el('div', { class: 'tlx-plot-status' }, link,
    ' (ui.perfetto.dev or chrome://tracing open it; the whole per-warp trace: Timeline.to_perfetto(path) in Python)');
}

function roleTable(p: Timeline): HTMLElement | null {
  const roles = p.roles ?? [];
  if (!roles.length) {
    return null;
  }
  const pct = (v: unknown) => (num(v) === null ? '\u2014' : `${(100 * (v as number)).toFixed(0)}%`);
  const t = el('table', { class: 'tlx-table tlx-roles' });
  t.append(el('thead', {}, el('tr', {}, ...['role', 'kind', 'busy', 'waiting', 'span'].map(h => el('th', { text: h })))));
  const body = el('tbody');
  for (const r of roles) {
    const span = num(r.span_ns);
    body.append(
      el(
        'tr',
        {},
        el('td', { class: 'tlx-mono', text: r.role }),
        el('td', { text: r.kind ?? '' }),
        el('td', { text: pct(r.busy_fraction) }),
        el('td', { text: pct(r.waiting_fraction) }),
        el('td', { text: span === null ? '\u2014' : `${(span / 1e3).toFixed(1)} \u00b5s` })
      )
    );
  }
  t.append(body);
  return t;
}

export async function renderTimeline(host: HTMLElement, p: Timeline): Promise<void> {
  clear(host);
  const spans = timelineSpans(p);
  const caption = el('div', { class: 'tlx-plot-caption', text: provenance(p) });
  host.append(caption);
  const warnings = p.warnings ?? [];
  if (warnings.length) {
    host.append(el('div', { class: 'tlx-plot-status', text: warnings.join(' \u00b7 ') }));
  }
  const plotDiv = el('div', { class: 'tlx-plot' });
  if (spans.length) {
    host.append(plotDiv);
  }
  const link = traceLink(p);
  if (link) {
    host.append(link);
  }
  const roles = roleTable(p);
  if (roles) {
    host.append(roles);
  }
  if (!spans.length) {
    host.append(el('div', { class: 'tlx-plot-status', text: 'This timeline has no lanes to draw.' }));
    return;
  }
  const Plotly = await loadPlotly();
  const t0 = Math.min(...spans.map(s => s.start));
  // the categories in drawing order, each with the colour and label Python gives it (the notebook's chart too)
  const categories = p.view?.categories ?? storedCategories(spans);
  const traces = categories.map(style => {
    const ss = spans.filter(s => s.category === style.category);
    return {
      type: 'bar',
      orientation: 'h',
      name: esc(style.label),
      ...(style.color ? { marker: { color: style.color, line: { width: 0 } } } : {}),
      y: ss.map(s => esc(s.row)),
      base: ss.map(s => s.start - t0),
      x: ss.map(s => s.end - s.start),
      text: ss.map(s => esc(s.name)),
      textposition: 'none', // names on hover: inside the bars they pile up
      hovertemplate: '%{text}<br>%{base:.0f} + %{x:.0f} ns<extra>%{y}</extra>'
    };
  });
  await Plotly.newPlot(
    plotDiv,
    traces,
    {
      barmode: 'overlay',
      height: 140 + 26 * new Set(spans.map(s => s.row)).size,
      margin: { l: 160, r: 20, t: 30, b: 60 }, // room for the tick labels and the axis title under them
      xaxis: { title: { text: 'ns since the first CTA started' } },
      yaxis: { autorange: 'reversed' },
      title: { text: `Per-role timeline: ${esc(p.kernel ?? '')}` }
    },
    { displaylogo: false, responsive: true }
  );
}

export async function renderRoofline(host: HTMLElement, p: Roofline): Promise<void> {
  clear(host);
  const caption = el('div', {
    class: 'tlx-plot-caption',
    text: [provenance(p), p.ceilings_label ? `roofs: ${p.ceilings_label}` : ''].filter(Boolean).join(' \u00b7 ')
  });
  const summary = el('div', { class: 'tlx-plot-summary', text: (p.summary ?? OLD_REPORT).replace(/^roofline: /, '') });
  host.append(caption, summary);
  for (const n of p.notes ?? []) {
    host.append(el('div', { class: 'tlx-plot-status', text: n }));
  }
  const view = p.view ?? storedRoofline(p);
  // Python's view names the datasheet roof; a Report from before 2.7 draws its stored roof without that claim (one
  // from before 2.1 stored its measured ceiling there: the caption's ceilings say which)
  const roofName = p.view ? 'roof (datasheet)' : 'roof (as stored)';
  const roofs = view.roofs;
  if (!roofs) {
    host.append(el('div', { class: 'tlx-plot-status', text: 'No roofs: the ceilings of the device are unknown.' }));
    return;
  }
  const x0 = num(p.intensity);
  if (!view.timed && x0 === null && !view.placed.length) {
    // nothing to place: say what is missing instead of drawing bare roofs
    host.append(
      el('div', {
        class: 'tlx-plot-status tlx-roofline-missing',
        text:
          'Nothing to place under the roofs: the kernel was not timed (that needs a GPU) and its FLOP and byte ' +
          'counts are unknown (give --flops and --bytes, or a launch_metadata hook, for its intensity).'
      })
    );
    return;
  }
  const plotDiv = el('div', { class: 'tlx-plot' });
  host.append(plotDiv);
  const Plotly = await loadPlotly();
  const peak = roofs.peak_tflops;
  const bw = roofs.bandwidth_tbs;
  const mPeak = roofs.measured_peak_tflops ?? null;
  const mBw = roofs.measured_bandwidth_tbs ?? null;
  const ridge = peak / bw;
  const xs = [ridge / 100, ridge, ridge * 100];
  const traces: unknown[] = [
    { type: 'scatter', mode: 'lines', name: roofName, x: xs, y: xs.map(x => Math.min(peak, bw * x)),
      line: { color: '#888' } }
  ];
  if (mPeak !== null && mBw !== null) {
    traces.push({ type: 'scatter', mode: 'lines', name: 'measured ceiling', x: xs, y: xs.map(x => Math.min(mPeak, mBw * x)),
      line: { color: '#9467bd', dash: 'dash' } });
  }
  const shapes: unknown[] = [];
  for (const pt of view.placed) {
    traces.push({
      type: 'scatter',
      mode: 'markers+text',
      name: esc(pt.name),
      text: [esc(pt.name)],
      textposition: pt.left ? 'middle left' : 'middle right',
      x: [pt.x],
      y: [pt.y],
      marker: { size: 12, symbol: pt.kind === 'reference' ? 'diamond' : 'circle' }
    });
  }
  if (!view.timed && x0 !== null) {  // not timed: its intensity only, no point under the roof
    shapes.push({ type: 'line', x0, x1: x0, yref: 'paper', y0: 0, y1: 1, line: { color: '#bbb', dash: 'dot' } });
  }
  await Plotly.newPlot(
    plotDiv,
    traces,
    {
      height: 380,
      margin: { l: 80, r: 20, t: 40, b: 60 }, // room for log tick labels and the axis titles beside them
      xaxis: { type: 'log', title: { text: 'FLOP / byte' }, automargin: true },
      yaxis: { type: 'log', title: { text: 'TFLOP/s' }, automargin: true },
      title: {
        text: `Roofline (${esc(p.dtype ?? '')})${
          view.timed || x0 === null ? '' : ': not timed, the dotted line is its intensity'
        }`
      },
      shapes
    },
    { displaylogo: false, responsive: true }
  );
}

/** A Report from before 2.7 carries no view: its lanes' categories as they come, in plotly's colours. */
function storedCategories(spans: Span[]): Array<{ category: string; color: string; label: string }> {
  return Array.from(new Set(spans.map(s => s.category))).map(category => ({ category, color: '', label: category }));
}

/** A Report from before 2.7 carries no view: its stored roofs and timed points as they are. */
function storedRoofline(p: Roofline): RooflineView {
  const peak = num(p.peak_tflops);
  const bw = num(p.bandwidth_tbs);
  const points = (p.points ?? []).filter(pt => num(pt.intensity) !== null && (num(pt.tflops) ?? 0) > 0);
  return {
    roofs: peak === null || bw === null ? null : { peak_tflops: peak, bandwidth_tbs: bw,
      measured_peak_tflops: num(p.measured_peak_tflops), measured_bandwidth_tbs: num(p.measured_bandwidth_tbs) },
    placed: points.map(pt => ({ name: String(pt.name ?? 'kernel'), kind: String(pt.kind ?? 'kernel'), x: pt.intensity as number,
      y: pt.tflops as number, left: false })),
    timed: (p.points ?? []).some(pt => pt.kind !== 'reference' && num(pt.tflops) !== null)
  };
}
