/**
 * The Layouts tab: values and buffers with their layouts, TTGIR's declared layouts, and drawings made from
 * the linear layouts the Report carries (layouts.linear, computed by Triton's C++ when the kernel compiled).
 */
import { Child, clear, el } from './dom';
import { drawOwnership, drawShared } from './drawing';
import { distributed, ownership, sharedMap } from './layouts';
import { LinearLayout, Report } from './types';

/** What to draw for a row: the declared layout's alias and kind, and the shape and dtype of its value. */
interface Target {
  alias: string;
  kind: string;
  shape: number[];
  dtype: string;
  label: string;
}

const sameShape = (a: number[], b: number[]) => a.length === b.length && a.every((x, i) => x === b[i]);

export function renderLayouts(host: HTMLElement, r: Report): void {
  clear(host);
  // the tables on the left, the drawing of the selected row beside them (it stays in view while they scroll)
  const tables = el('div', { class: 'tlx-layout-tables' });
  const drawing = el('div', { class: 'tlx-layout-drawing' });
  const colorBy = el('select', { class: 'tlx-color-by' }) as HTMLSelectElement;
  for (const c of ['warp', 'thread', 'register']) {
    colorBy.append(el('option', { value: c, text: `colour by ${c}` }));
  }
  let redraw: (() => void) | null = null;
  colorBy.addEventListener('change', () => redraw?.());
  const select = (row: HTMLElement, t: Target) => {
    for (const tr of Array.from(host.querySelectorAll('tr.tlx-selected'))) {
      tr.classList.remove('tlx-selected');
    }
    row.classList.add('tlx-selected');
    const data = r.linear.find(l => l.alias === t.alias && sameShape(l.value_shape, t.shape) && l.dtype === t.dtype);
    redraw = () => drawLayout(drawing, t, data ?? null, colorBy.value, r);
    redraw();
  };
  const draws: Array<() => void> = []; // the rows' select actions, in order: the first is drawn at once
  const cell = (t: Child, cls = '') => el('td', { class: cls }, t);
  if (r.values.length) {
    const table = el('table', { class: 'tlx-table tlx-values' });
    table.append(
      el('thead', {}, el('tr', {}, ...['value', 'line', 'kind', 'shape', 'dtype', 'layout', 'why'].map(h => el('th', { text: h }))))
    );
    const body = el('tbody');
    r.values.forEach((v, i) => {
      const tr = el(
        'tr',
        { 'data-index': i, tabindex: 0 },
        cell(v.name, 'tlx-mono'),
        cell(v.line === null ? '' : String(v.line)),
        cell(v.kind),
        cell(v.shape.join('\u00d7'), 'tlx-mono'),
        cell(v.dtype, 'tlx-mono'),
        cell(v.layout || v.ttgir, 'tlx-mono'),
        cell(v.reason)
      );
      tr.title = v.ttgir;
      // a value's layout is the declared attribute it carries (its text, or its alias)
      const d = r.declared.find(x => x.attr === v.ttgir || x.alias === v.ttgir);
      const label = `${v.name}: ${v.layout || v.ttgir}`;
      const draw = () => select(tr, { alias: d?.alias ?? '', kind: d?.kind ?? '', shape: v.shape, dtype: v.dtype, label });
      tr.addEventListener('click', draw);
      draws.push(draw);
      body.append(tr);
    });
    table.append(body);
    tables.append(el('h4', { text: 'Values and buffers' }), table);
  }
  if (r.declared.length) {
    const table = el('table', { class: 'tlx-table tlx-declared' });
    table.append(el('thead', {}, el('tr', {}, ...['alias', 'kind', 'attribute', 'uses'].map(h => el('th', { text: h })))));
    const body = el('tbody');
    for (const d of r.declared) {
      const tr = el(
        'tr',
        { tabindex: 0 },
        cell(d.alias, 'tlx-mono'),
        cell(d.kind),
        cell(d.attr, 'tlx-mono tlx-attr'),
        cell(String(d.uses.length))
      );
      const use = d.uses[0] ?? {};
      const t = { alias: d.alias, kind: d.kind, shape: use.shape ?? [], dtype: use.dtype ?? '', label: d.alias };
      tr.addEventListener('click', () => select(tr, t));
      draws.push(() => select(tr, t));
      body.append(tr);
    }
    table.append(body);
    tables.append(el('h4', { text: 'Layouts declared in TTGIR' }), table);
  }
  if (!r.values.length && !r.declared.length) {
    host.append(el('div', { class: 'tlx-empty', text: 'No layouts in this Report.' }));
    return;
  }
  const side = el('div', { class: 'tlx-layout-side' }, el('div', { class: 'tlx-layout-tools' }, colorBy), drawing);
  host.append(el('div', { class: 'tlx-layout-split' }, tables, side));
  drawing.append(el('div', { class: 'tlx-layout-note', text: 'Click a row to draw its layout.' }));
  draws[0]?.(); // the first row's drawing without a click
}

/** Why a row has nothing to draw, in the words a user can act on. */
function missing(t: Target, data: LinearLayout | null, r: Report): string {
  if (!t.shape.length) {
    return 'no value carries this layout, so there is no shape to draw it for';
  }
  if (!r.linear.length) {
    return `this Report (schema ${r.schemaVersion || 'unknown'}) was made before Reports carried layout data (2.2); run the cell again to draw its layouts`;
  }
  if (data?.reason) {
    return `Triton gives no linear layout for it: ${data.reason}`;
  }
  return 'the Report has no linear layout for this value';
}

function drawLayout(host: HTMLElement, t: Target, data: LinearLayout | null, colorBy: string, r: Report): void {
  clear(host);
  host.dataset.layout = t.kind;
  const shared = data ? sharedMap(data) : null;
  const dist = data ? distributed(data) : null;
  if (shared) {
    drawShared(host, shared, t.label);
  } else if (dist) {
    const title = el('div', { class: 'tlx-layout-title', text: `${t.label} \u2014 ${t.shape.join('\u00d7')} ${t.dtype}` });
    const inner = el('div');
    host.append(title, inner);
    drawOwnership(inner, ownership(dist), colorBy);
  } else {
    host.append(el('div', { class: 'tlx-layout-note', text: `${t.label}: ${missing(t, data, r)}` }));
  }
}
