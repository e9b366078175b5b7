/** The Layouts tab: values and buffers with their layouts, TTGIR's declared layouts, and drawings. */
import { Child, clear, el } from './dom';
import { drawOwnership, drawShared } from './drawing';
import { ParsedAttr, dtypeBytes, ownership, parseAttr, parseGluon, sharedLayout, toLinearLayout } from './layouts';
import { Report } from './types';

export function renderLayouts(host: HTMLElement, r: Report): void {
  const resolveAlias = (alias: string): string | null => {
    const d = r.declared.find(x => x.alias === alias || x.alias === `#${alias.replace(/^#/, '')}`);
    return d ? d.attr : null;
  };
  const attrFor = (ttgir: string, gluon: string): ParsedAttr | null => {
    let text = ttgir.trim();
    if (text && !text.includes('<')) {
      text = resolveAlias(text) ?? '';
    }
    return (text ? parseAttr(text) : null) ?? (gluon ? parseGluon(gluon) : null);
  };
  clear(host);
  const drawing = el('div', { class: 'tlx-layout-drawing' });
  const colorBy = el('select', { class: 'tlx-color-by' }) as HTMLSelectElement;
  for (const c of ['warp', 'thread', 'register']) {
    colorBy.append(el('option', { value: c, text: `colour by ${c}` }));
  }
  let redraw: (() => void) | null = null;
  colorBy.addEventListener('change', () => redraw?.());
  const select = (row: HTMLElement, attr: ParsedAttr | null, shape: number[], dtype: string, label: string) => {
    for (const tr of Array.from(host.querySelectorAll('tr.tlx-selected'))) {
      tr.classList.remove('tlx-selected');
    }
    row.classList.add('tlx-selected');
    redraw = () => drawLayout(drawing, attr, shape, dtype, label, colorBy.value, resolveAlias);
    redraw();
    colorBy.scrollIntoView({ block: 'start', behavior: 'auto' });
  };
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
      tr.addEventListener('click', () =>
        select(tr, attrFor(v.ttgir, v.layout), v.shape, v.dtype, `${v.name}: ${v.layout || v.ttgir}`)
      );
      body.append(tr);
    });
    table.append(body);
    host.append(el('h4', { text: 'Values and buffers' }), table);
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
      const shape = Array.isArray(use.shape) ? (use.shape as number[]) : [];
      tr.addEventListener('click', () => select(tr, parseAttr(d.attr), shape, String(use.dtype ?? 'f16'), `${d.alias}`));
      body.append(tr);
    }
    table.append(body);
    host.append(el('h4', { text: 'Layouts declared in TTGIR' }), table);
  }
  if (!r.values.length && !r.declared.length) {
    host.append(el('div', { class: 'tlx-empty', text: 'No layouts in this Report.' }));
    return;
  }
  host.append(el('div', { class: 'tlx-layout-tools' }, colorBy), drawing);
  drawing.append(el('div', { class: 'tlx-layout-note', text: 'Click a row to draw its layout.' }));
}

function drawLayout(
  host: HTMLElement,
  attr: ParsedAttr | null,
  shape: number[],
  dtype: string,
  label: string,
  colorBy: string,
  resolveAlias: (alias: string) => string | null
): void {
  clear(host);
  host.dataset.layout = attr?.kind ?? '';
  try {
    if (!attr) {
      throw new Error('this layout could not be parsed');
    }
    if (!shape.length) {
      throw new Error('no shape is known for this layout');
    }
    if (attr.kind.endsWith('shared')) {
      drawShared(host, sharedLayout(attr, dtypeBytes(dtype)), shape, label);
    } else {
      const map = ownership(toLinearLayout(attr, shape, resolveAlias));
      const title = el('div', { class: 'tlx-layout-title', text: `${label} \u2014 ${shape.join('\u00d7')} ${dtype}` });
      const inner = el('div');
      host.append(title, inner);
      drawOwnership(inner, map, colorBy);
    }
  } catch (e) {
    host.append(el('div', { class: 'tlx-layout-note', text: `${label}: ${(e as Error).message}` }));
  }
}
