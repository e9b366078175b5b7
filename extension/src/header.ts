/**
 * The viewer's header: kernel name and resource facts, the tasks of a warp-specialized kernel, and
 * a status block saying what ran, what was checked and measured (or why not), the static findings
 * and the diagnostics. Lines with a source line are clickable (they pin that line in the code tab).
 */
import { clear, el, fmtBytes, fmtNum } from './dom';
import { checkLine, measurementLine, provenance, runLine } from './summary';
import { Report } from './types';

export interface HeaderOptions {
  onOpenBeside?: () => void;
  /** A click on a finding's or diagnostic's line. */
  onLine: (line: number) => void;
}

function fact(label: string, value: string, key: string): HTMLElement {
  return el(
    'span',
    { class: 'tlx-fact', 'data-fact': key },
    el('span', { class: 'tlx-fact-label', text: label }),
    el('span', { class: 'tlx-fact-value', text: value })
  );
}

function facts(r: Report): HTMLElement {
  const m = r.metadata;
  const spills = typeof m.spills === 'number' ? m.spills : null;
  const node = el(
    'div',
    { class: 'tlx-facts' },
    fact('target', r.target || '\u2014', 'target'),
    fact('warps', fmtNum(m.num_warps), 'warps'),
    fact('shared', fmtBytes(m.shared_bytes), 'shared'),
    fact('registers', fmtNum(m.registers), 'registers'),
    fact('spills', spills === null ? '\u2014' : `${spills} B`, 'spills')
  );
  if (spills) {
    node.lastElementChild!.classList.add('tlx-bad');
  }
  if (r.tasks.length) {
    // without setmaxnreg (no task sets registers=) every warp keeps the launch's registers: no budgets to show
    const budgets = r.tasks.some(t => t.registers !== null && t.registers !== undefined);
    const text = r.tasks
      .map(
        t => `${t.partition === null ? 'default' : `p${t.partition}`} ${t.num_warps}w${budgets ? `/${t.registers ?? '?'}r` : ''}`
      )
      .join(', ');
    node.append(fact('tasks', budgets ? text : `${text} (no register budgets)`, 'tasks'));
  }
  return node;
}

function statusItem(cls: string, text: string, title = ''): HTMLElement {
  return el('li', { class: `tlx-status-item ${cls}`, text, title: title || undefined });
}

/** What ran, what was checked and what was measured: one line each. When the launch did not run, its line says
 * why once, and the checks and measurements skipped for that reason fold under one line that names them. */
function statusBlock(r: Report): HTMLElement | null {
  const list = el('ul', { class: 'tlx-run-status' });
  const last = r.runs[r.runs.length - 1];
  if (last) {
    list.append(statusItem(last.ran ? 'tlx-ok' : 'tlx-muted', runLine(last)));
  }
  const skipped: Array<{ name: string; li: HTMLElement }> = [];
  const keep = (li: HTMLElement, name: string, muted: boolean) =>
    muted && last && !last.ran ? skipped.push({ name, li }) : list.append(li);
  for (const c of r.checks) {
    const cls = c.status === 'passed' ? 'tlx-ok' : c.status === 'skipped' ? 'tlx-muted' : 'tlx-bad';
    const li = statusItem(`tlx-check ${cls}`, checkLine(c));
    li.dataset.status = c.status;
    keep(li, `check ${c.expr}`, c.status === 'skipped');
  }
  for (const m of [...r.measurements, ...(r.timeline ? [r.timeline] : [])]) {
    const ok = (m.status ?? 'ok') === 'ok';
    const li = statusItem(`tlx-measured ${ok ? '' : m.status === 'error' ? 'tlx-bad' : 'tlx-muted'}`, measurementLine(m));
    li.dataset.kind = m.kind;
    li.dataset.status = m.status ?? 'ok';
    if (ok && provenance(m)) {
      li.append(el('span', { class: 'tlx-provenance', text: ` (${provenance(m)})` }));
    }
    keep(li, m.kind, m.status === 'skipped');
  }
  if (skipped.length) {
    const fold = el(
      'details',
      { class: 'tlx-muted-fold' },
      el('summary', { class: 'tlx-muted', text: `not run either: ${skipped.map(s => s.name).join(', ')}` }),
      el('ul', { class: 'tlx-run-status' }, ...skipped.map(s => s.li))
    );
    list.insertBefore(el('li', { class: 'tlx-status-item tlx-status-fold' }, fold), list.children[1] ?? null);
  }
  return list.childElementCount ? list : null;
}

function issues(r: Report, onLine: (line: number) => void): HTMLElement | null {
  const list = el('ul', { class: 'tlx-diagnostics' });
  const add = (sev: string, line: number | null, msg: string, hint: string, extra: HTMLElement[], cls: string) => {
    const li = el(
      'li',
      { class: `tlx-diag tlx-diag-${sev} ${cls}` },
      el('span', { class: 'tlx-diag-sev', text: sev }),
      line !== null ? el('span', { class: 'tlx-diag-line', text: `line ${line}` }) : null,
      el('span', { class: 'tlx-diag-msg', text: msg }),
      // the hint and the related lines on their own line under the message, not squeezed beside it
      hint || extra.length
        ? el('div', { class: 'tlx-diag-more' }, hint ? el('span', { class: 'tlx-diag-hint', text: hint }) : null, ...extra)
        : null
    );
    if (line !== null) {
      li.addEventListener('click', ev => {
        ev.stopPropagation();
        onLine(line);
      });
    }
    list.append(li);
  };
  for (const f of r.findings) {
    const related = (f.related ?? []).map(x => {
      const span = el('span', { class: 'tlx-related', text: `${x.line !== null ? `line ${x.line}: ` : ''}${x.message}` });
      if (x.line !== null) {
        const line = x.line;
        span.addEventListener('click', ev => {
          ev.stopPropagation();
          onLine(line);
        });
      }
      return span;
    });
    add(f.severity, f.line, `[${f.rule}] ${f.message}`, f.hint ?? '', related, 'tlx-finding');
  }
  for (const d of r.diagnostics) {
    if (d.source === 'run') {
      continue; // the run line says it
    }
    add(d.severity, d.line, d.message, d.hint, [], '');
  }
  return list.childElementCount ? list : null;
}

/** What happened without a GPU, as the run lines say it (a kernel the interpreter ran was not only compiled). */
export function noGpuWhat(r: Report): string {
  return r.runs.some(run => run.mode === 'interpreter' && run.ran) ? "ran in Triton's CPU interpreter" : 'compiled only';
}

export function renderHeader(host: HTMLElement, r: Report, opts: HeaderOptions): void {
  clear(host);
  const title = el(
    'div',
    { class: 'tlx-title' },
    el('span', { class: 'tlx-kernel-name', text: r.kernelName }),
    r.device.available === false
      ? el('span', { class: 'tlx-note', text: `no GPU: ${noGpuWhat(r)}${r.device.reason ? ` (${r.device.reason})` : ''}` })
      : null
  );
  const buttons = el('div', { class: 'tlx-actions' });
  if (opts.onOpenBeside) {
    const b = el('button', {
      class: 'jp-Button tlx-open-beside',
      type: 'button',
      title: 'Open this viewer in the main area, beside the notebook (the left sidebar folds to give room); it follows this cell',
      text: 'Open beside'
    });
    b.addEventListener('click', () => opts.onOpenBeside!());
    buttons.append(b);
  }
  host.append(title, facts(r), buttons);
  // what ran, was measured, found: scrolls within a few lines so the code keeps its room
  const notes = el('div', { class: 'tlx-notes' }, statusBlock(r), issues(r, opts.onLine));
  if (notes.childElementCount) {
    host.append(notes);
  }
}
