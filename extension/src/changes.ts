/** The Changes tab (--diff): metadata that changed, and each stage's status and unified diff. */
import { clear, el } from './dom';
import type { Diff, PerformanceDiff } from './schema';
import { percent } from './summary';

function diffView(): { node: HTMLElement; show: (title: string, text: string) => void } {
  const node = el('pre', { class: 'tlx-diff' });
  const show = (title: string, text: string) => {
    clear(node);
    node.dataset.title = title;
    for (const line of String(text || '(no differences)').split('\n')) {
      const cls = line.startsWith('@@')
        ? 'tlx-hunk'
        : line.startsWith('+') && !line.startsWith('+++')
          ? 'tlx-add'
          : line.startsWith('-') && !line.startsWith('---')
            ? 'tlx-del'
            : '';
      node.append(el('span', { class: cls, text: line }), '\n');
    }
  };
  return { node, show };
}

function table(head: string[], cls: string): { table: HTMLElement; body: HTMLElement } {
  const t = el('table', { class: `tlx-table ${cls}` });
  t.append(el('thead', {}, el('tr', {}, ...head.map(h => el('th', { text: h })))));
  const body = el('tbody');
  t.append(body);
  return { table: t, body };
}

export function renderChanges(host: HTMLElement, p: Diff): void {
  clear(host);
  host.append(
    el('div', {
      class: 'tlx-layout-note',
      text:
        `Compared with ${p.label || `report ${p.id}`} (${p.created}): ` +
        (p.same_key ? 'the compilation is identical.' : 'the compilation changed.')
    })
  );
  if (p.performance) {
    host.append(performanceView(p.performance));
  }
  if (p.metadata.length) {
    const m = table(['field', 'before', 'after'], 'tlx-meta-changes');
    for (const x of p.metadata) {
      m.body.append(
        el(
          'tr',
          {},
          el('td', { text: x.field }),
          el('td', { class: 'tlx-mono', text: JSON.stringify(x.before) }),
          el('td', { class: 'tlx-mono', text: JSON.stringify(x.after) })
        )
      );
    }
    host.append(m.table);
  }
  const view = diffView();
  const s = table(['stage', 'status', 'added', 'removed'], 'tlx-stage-changes');
  const src = el('tr', {}, el('td', { text: 'source' }), el('td', { text: p.source_diff ? 'changed' : 'same' }), el('td'), el('td'));
  src.addEventListener('click', () => view.show('source', p.source_diff));
  s.body.append(src);
  for (const st of p.stages) {
    const tr = el(
      'tr',
      {},
      el('td', { class: 'tlx-mono', text: st.name }),
      el('td', { text: st.status + (st.truncated ? ' (diff truncated)' : '') }),
      el('td', { text: `+${st.added}` }),
      el('td', { text: `\u2212${st.removed}` })
    );
    tr.addEventListener('click', () => view.show(st.name, st.diff ?? ''));
    s.body.append(tr);
  }
  host.append(s.table, view.node);
  view.show('source', p.source_diff);
}

/** Why one run is faster: the ranked sentences, then the stall reasons and the roles side by side (Python ranked them). */
export function performanceView(perf: PerformanceDiff): HTMLElement {
  const box = el('div', { class: 'tlx-performance' });
  box.append(el('h4', { text: 'Performance, largest difference first' }));
  const ul = el('ul');
  for (const s of perf.ranked) {
    ul.append(el('li', { text: s }));
  }
  box.append(ul);
  const reasons = perf.stalls?.reasons ?? [];
  if (reasons.length) {
    const t = table(['stall reason', 'before', 'after', 'time it explains'], 'tlx-stall-changes');
    for (const r of reasons.slice(0, 12)) {
      const ns = typeof r.delta_ns === 'number' ? `${(r.delta_ns / 1e3 >= 0 ? '+' : '')}${(r.delta_ns / 1e3).toFixed(2)} us` : '';
      t.body.append(el('tr', {}, el('td', { text: r.reason }), el('td', { text: percent(r.before_share) }),
        el('td', { text: percent(r.after_share) }), el('td', { text: ns })));
    }
    box.append(t.table, el('div', { class: 'tlx-plot-caption', text: perf.stalls?.rule ?? '' }));
  }
  const roles = perf.stalls?.roles ?? [];
  if (roles.length) {
    const t = table(['role', 'before: top stalls', 'after: top stalls'], 'tlx-role-changes');
    const top = (x: any) => (x ? (x.top as [string, number][]).map(([k, v]) => `${k} ${percent(v)}`).join(', ') : '(none)');
    for (const r of roles) {
      t.body.append(el('tr', {}, el('td', { text: r.role }), el('td', { text: top(r.before) }), el('td', { text: top(r.after) })));
    }
    box.append(t.table);
  }
  return box;
}
