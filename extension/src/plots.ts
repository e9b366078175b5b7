/**
 * Timeline and roofline charts. plotly.js (basic bundle) is loaded lazily, the first
 * time a chart is shown. Every string from the Report is escaped before plotly sees it,
 * since plotly interprets a subset of HTML in labels.
 */
import { el, clear } from './dom';

type Obj = { [k: string]: unknown };

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
const obj = (v: unknown): Obj => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Obj) : {});

/** The payload's own fields, or those nested under `data` / its kind. */
export function payloadData(p: Obj): Obj {
  const k = String(p.kind ?? '');
  return { ...obj(p.data), ...obj(p[k]), ...p };
}

/** "measured by X on Y, at Z": every figure says what measured it, where and when. */
export function provenance(p: Obj): string {
  const parts: string[] = [];
  if (p.measured_by) {
    parts.push(`measured by ${String(p.measured_by)}`);
  }
  if (p.device) {
    parts.push(`on ${String(p.device)}`);
  }
  if (p.when) {
    parts.push(`at ${String(p.when)}`);
  }
  if (p.ceilings_label) {
    parts.push(`ceilings: ${String(p.ceilings_label)}`);
  }
  return parts.join(', ');
}

export interface Span {
  row: string;
  name: string;
  start: number;
  end: number;
}

/** Spans from a timeline payload: events / spans / roles[*].spans, start+end or start+dur. */
export function timelineSpans(p: Obj): Span[] {
  const d = payloadData(p);
  const out: Span[] = [];
  const take = (list: unknown, rowDefault: string) => {
    if (!Array.isArray(list)) {
      return;
    }
    for (const e of list) {
      const o = obj(e);
      const start = num(o.start ?? o.start_ns ?? o.start_us ?? o.begin ?? o.ts);
      let end = num(o.end ?? o.end_ns ?? o.end_us ?? o.stop);
      const dur = num(o.dur ?? o.dur_ns ?? o.duration ?? o.duration_ns);
      if (end === null && start !== null && dur !== null) {
        end = start + dur;
      }
      if (start === null || end === null) {
        continue;
      }
      const who = o.role ?? o.row ?? (o.warp !== undefined ? `warp ${o.warp}` : rowDefault);
      // workbench.measure.timeline lanes: one row per (CTA, role).
      const row = o.cta !== undefined && o.cta !== null ? `CTA ${String(o.cta)} \u00b7 ${String(who)}` : String(who);
      out.push({ row, name: String(o.name ?? o.scope ?? o.role ?? ''), start, end });
    }
  };
  take(d.lanes, 'kernel');
  take(d.events, 'kernel');
  take(d.spans, 'kernel');
  if (Array.isArray(d.roles)) {
    for (const r of d.roles) {
      const ro = obj(r);
      take(ro.spans ?? ro.events, String(ro.name ?? ro.role ?? 'role'));
    }
  }
  return out;
}

function statusLine(host: HTMLElement, p: Obj): boolean {
  const status = String(p.status ?? 'ok');
  if (status !== 'ok') {
    host.append(
      el('div', {
        class: 'tlx-plot-status',
        text: `${String(p.kind)}: ${status}${p.reason ? ` \u2014 ${String(p.reason)}` : ''}`
      })
    );
    return false;
  }
  return true;
}

export async function renderTimeline(host: HTMLElement, p: Obj): Promise<void> {
  clear(host);
  if (!statusLine(host, p)) {
    return;
  }
  const spans = timelineSpans(p);
  const caption = el('div', { class: 'tlx-plot-caption', text: provenance(payloadData(p)) });
  if (!spans.length) {
    host.append(caption, el('pre', { class: 'tlx-json', text: JSON.stringify(p, null, 2) }));
    return;
  }
  const plotDiv = el('div', { class: 'tlx-plot' });
  host.append(caption, plotDiv);
  const Plotly = await loadPlotly();
  const byName = new Map<string, Span[]>();
  for (const s of spans) {
    const a = byName.get(s.name) ?? [];
    a.push(s);
    byName.set(s.name, a);
  }
  const t0 = Math.min(...spans.map(s => s.start));
  const traces = Array.from(byName.entries()).map(([name, ss]) => ({
    type: 'bar',
    orientation: 'h',
    name: esc(name),
    y: ss.map(s => esc(s.row)),
    base: ss.map(s => s.start - t0),
    x: ss.map(s => s.end - s.start),
    hovertemplate: `${esc(name)}<br>%{base} + %{x}<extra>%{y}</extra>`
  }));
  await Plotly.newPlot(
    plotDiv,
    traces,
    {
      barmode: 'overlay',
      height: 120 + 40 * new Set(spans.map(s => s.row)).size,
      margin: { l: 120, r: 20, t: 30, b: 40 },
      xaxis: { title: { text: esc(String(payloadData(p).unit ?? (Array.isArray(payloadData(p).lanes) ? 'ns' : 'time'))) } },
      title: { text: 'Per-role timeline' }
    },
    { displaylogo: false, responsive: true }
  );
}

export async function renderRoofline(host: HTMLElement, p: Obj): Promise<void> {
  clear(host);
  if (!statusLine(host, p)) {
    return;
  }
  const d = payloadData(p);
  const peak = num(d.peak_tflops);
  const bw = num(d.bandwidth_tbs);
  const points = (Array.isArray(d.points) ? d.points : [d]).map(obj).filter(pt => num(pt.intensity) !== null);
  const caption = el('div', { class: 'tlx-plot-caption', text: provenance(d) });
  const summary = el('div', { class: 'tlx-plot-summary' });
  summary.textContent = [
    d.bound ? `${String(d.bound)}-bound` : '',
    num(d.intensity) !== null ? `intensity ${(d.intensity as number).toFixed(2)} FLOP/B` : '',
    num(d.achieved_tflops) !== null ? `achieved ${(d.achieved_tflops as number).toFixed(1)} TFLOP/s` : '',
    num(d.roof_fraction) !== null ? `${((d.roof_fraction as number) * 100).toFixed(0)}% of the roof` : ''
  ]
    .filter(Boolean)
    .join(' \u00b7 ');
  if (peak === null || bw === null) {
    host.append(caption, summary, el('pre', { class: 'tlx-json', text: JSON.stringify(p, null, 2) }));
    return;
  }
  const plotDiv = el('div', { class: 'tlx-plot' });
  host.append(caption, summary, plotDiv);
  const Plotly = await loadPlotly();
  const ridge = peak / bw;
  const xs = [ridge / 100, ridge, ridge * 100];
  const traces: any[] = [
    {
      type: 'scatter',
      mode: 'lines',
      name: 'roof',
      x: xs,
      y: xs.map(x => Math.min(peak, bw * x)),
      line: { color: '#888' }
    }
  ];
  for (const pt of points) {
    const y = num(pt.tflops) ?? num(pt.achieved_tflops);
    traces.push({
      type: 'scatter',
      mode: 'markers',
      name: esc(pt.name ?? 'kernel'),
      x: [pt.intensity],
      y: [y ?? Math.min(peak, bw * (pt.intensity as number))],
      marker: { size: 12, symbol: y === null ? 'circle-open' : 'circle' }
    });
  }
  await Plotly.newPlot(
    plotDiv,
    traces,
    {
      height: 380,
      margin: { l: 60, r: 20, t: 30, b: 50 },
      xaxis: { type: 'log', title: { text: 'FLOP / byte' } },
      yaxis: { type: 'log', title: { text: 'TFLOP/s' } },
      title: { text: 'Roofline' }
    },
    { displaylogo: false, responsive: true }
  );
}
