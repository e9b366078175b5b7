/**
 * A read-only CodeMirror 6 view (JupyterLab's own CodeMirror packages, shared at run time)
 * for one stage or the source: line numbers, syntax highlighting, linked-line and search
 * decorations. CodeMirror renders only the visible lines, so a 50,000-line SASS scrolls.
 */
import { syntaxHighlighting } from '@codemirror/language';
import {
  Compartment,
  EditorState,
  Extension,
  Range,
  RangeSetBuilder,
  StateEffect,
  StateField,
  Text
} from '@codemirror/state';
import { Decoration, DecorationSet, EditorView, lineNumbers } from '@codemirror/view';
import { jupyterHighlightStyle, jupyterTheme } from '@jupyterlab/codemirror';
import { Match, findMatches, mainLine, toRanges } from './linemap';
import { languageExtension } from './languages';
import { findNoise } from './noise';

interface Marks {
  linked: number[];
  mapped: number[];
  matches: Match[];
  current: number;
}

const setMarks = StateEffect.define<Partial<Marks>>();

const linkedDeco = Decoration.line({ class: 'tlx-linked' });
const mappedDeco = Decoration.line({ class: 'tlx-mapped' });
const matchDeco = Decoration.mark({ class: 'tlx-search-match' });
const currentDeco = Decoration.mark({ class: 'tlx-search-match tlx-search-current' });

function buildDecorations(state: EditorState, m: Marks): DecorationSet {
  const doc = state.doc;
  const byLine = new Map<number, Array<{ from: number; to: number; d: Decoration }>>();
  const add = (line: number, from: number, to: number, d: Decoration) => {
    let a = byLine.get(line);
    if (!a) {
      a = [];
      byLine.set(line, a);
    }
    a.push({ from, to, d });
  };
  const linked = new Set(m.linked);
  for (const l of new Set([...m.mapped, ...m.linked])) {
    if (l < 1 || l > doc.lines) {
      continue;
    }
    const pos = doc.line(l).from;
    // Line decorations first (from == to), then marks on the same line.
    add(l, pos, pos, linked.has(l) ? linkedDeco : mappedDeco);
  }
  m.matches.forEach((mt, i) => {
    if (mt.to <= doc.length) {
      add(mt.line, mt.from, mt.to, i === m.current ? currentDeco : matchDeco);
    }
  });
  const builder = new RangeSetBuilder<Decoration>();
  for (const l of Array.from(byLine.keys()).sort((a, b) => a - b)) {
    const items = byLine.get(l)!.sort((a, b) => a.from - b.from || (a.from === a.to ? -1 : 1));
    for (const it of items) {
      builder.add(it.from, it.to, it.d);
    }
  }
  return builder.finish();
}

const marksField = StateField.define<{ marks: Marks; deco: DecorationSet }>({
  create(state) {
    const marks: Marks = { linked: [], mapped: [], matches: [], current: -1 };
    return { marks, deco: buildDecorations(state, marks) };
  },
  update(value, tr) {
    let marks = value.marks;
    let changed = false;
    for (const e of tr.effects) {
      if (e.is(setMarks)) {
        marks = { ...marks, ...e.value };
        changed = true;
      }
    }
    return changed ? { marks, deco: buildDecorations(tr.state, marks) } : value;
  },
  provide: f => EditorView.decorations.from(f, v => v.deco)
});

/** Decorations made once from the document (a pane's text never changes); none: no extension. */
function staticDecorations(build: (doc: Text) => Range<Decoration>[]): Extension {
  return StateField.define<DecorationSet>({
    create: state => Decoration.set(build(state.doc), true),
    update: value => value,
    provide: f => EditorView.decorations.from(f)
  });
}

/** The noise of `findNoise` as decorations: inline ranges replaced by nothing, whole lines by nothing (block). */
function noiseField(text: string, language: string): Extension {
  const noise = findNoise(text, language);
  if (!noise.inline.length && !noise.lines.length) {
    return [];
  }
  return staticDecorations(doc => [
    ...noise.inline.map(([from, to]) => Decoration.replace({}).range(from, to)),
    ...noise.lines
      .filter(l => l <= doc.lines)
      .map(l => Decoration.replace({ block: true }).range(doc.line(l).from, doc.line(l).to))
  ]);
}

/** A finding or diagnostic at a line: the line is marked in the gutter side, its message on hover. */
export interface Flag {
  line: number;
  severity: string;
  message: string;
}

function flagField(flags: Flag[]): Extension {
  if (!flags.length) {
    return [];
  }
  const rank = (s: string) => (s === 'error' ? 0 : s === 'warning' ? 1 : 2);
  return staticDecorations(doc => {
    const byLine = new Map<number, Flag[]>();
    for (const f of flags) {
      if (f.line >= 1 && f.line <= doc.lines) {
        byLine.set(f.line, [...(byLine.get(f.line) ?? []), f]);
      }
    }
    return Array.from(byLine.entries()).map(([line, fs]) => {
      const worst = fs.map(f => f.severity).sort((a, b) => rank(a) - rank(b))[0];
      return Decoration.line({
        class: `tlx-flag tlx-flag-${worst}`,
        attributes: { title: fs.map(f => `${f.severity}: ${f.message}`).join('\n') }
      }).range(doc.line(line).from);
    });
  });
}

/** Warp samples at a line (`--stalls`): a bar under the line as long as its share of the hottest line's. */
export interface Heat {
  line: number;
  share: number;
  title: string;
}

function heatField(heat: Heat[]): Extension {
  if (!heat.length) {
    return [];
  }
  return staticDecorations(doc => heat
    .filter(h => h.line >= 1 && h.line <= doc.lines)
    .sort((a, b) => a.line - b.line)
    .map(h => Decoration.line({
      class: 'tlx-heat',
      attributes: { title: h.title, style: `--tlx-heat: ${Math.max(0, Math.min(1, h.share)).toFixed(3)}` }
    }).range(doc.line(h.line).from)));
}

export interface CodePaneOptions {
  text: string;
  language: string;
  /** Fold IR noise (`findNoise`: MLIR locations, SASS file comments); `setNoiseHidden` changes it. */
  hideNoise?: boolean;
  /** Lines to mark: the findings and diagnostics at them. */
  flags?: Flag[];
  /** Lines to shade by their warp samples (the Stalls tab's). */
  heat?: Heat[];
  /** Called with a 1-based line when the pointer moves over a new line (null: left). */
  onHover?: (line: number | null) => void;
  onClick?: (line: number) => void;
}

export class CodePane {
  readonly view: EditorView;
  private lastHover: number | null = null;
  private matches: Match[] = [];
  private current = -1;
  private language = new Compartment();
  private noise = new Compartment();
  private readonly noiseExt: Extension;
  private readonly lang: string;
  private ranges: Array<[number, number]> = [];
  private range = -1;
  private destroyed = false;

  constructor(parent: HTMLElement, options: CodePaneOptions) {
    this.noiseExt = noiseField(options.text, options.language);
    this.lang = options.language;
    const extensions: Extension[] = [
      this.language.of([]),
      this.noise.of(options.hideNoise ? this.noiseExt : []),
      flagField(options.flags ?? []),
      heatField(options.heat ?? []),
      lineNumbers(),
      EditorState.readOnly.of(true),
      EditorView.editable.of(false),
      EditorState.tabSize.of(4),
      jupyterTheme,
      syntaxHighlighting(jupyterHighlightStyle),
      marksField,
      EditorView.domEventHandlers({
        mousemove: (ev, view) => {
          const line = this.lineAt(view, ev);
          if (line !== this.lastHover) {
            this.lastHover = line;
            options.onHover?.(line);
          }
          return false;
        },
        mouseleave: () => {
          if (this.lastHover !== null) {
            this.lastHover = null;
            options.onHover?.(null);
          }
          return false;
        },
        click: (ev, view) => {
          const line = this.lineAt(view, ev);
          if (line !== null) {
            options.onClick?.(line);
          }
          return false;
        }
      })
    ];
    this.view = new EditorView({
      state: EditorState.create({ doc: options.text, extensions }),
      parent
    });
    // The language may load asynchronously (JupyterLab's Python); the text shows at once.
    void languageExtension(options.language).then(ext => {
      if (ext && !this.destroyed) {
        this.view.dispatch({ effects: this.language.reconfigure(ext) });
      }
      this.view.dom.dataset.language = ext ? options.language : 'text';
    });
  }

  /** The line under the pointer. From the DOM line element when there is one: exact even while
   * the page is still moving (coordinates go through CodeMirror's last measurement, which lags a
   * layout change by a frame, so a click right after one could land on the line above). */
  private lineAt(view: EditorView, ev: MouseEvent): number | null {
    const target = ev.target instanceof Element ? ev.target.closest('.cm-line') : null;
    if (target && view.contentDOM.contains(target)) {
      return view.state.doc.lineAt(view.posAtDOM(target, 0)).number;
    }
    const pos = view.posAtCoords({ x: ev.clientX, y: ev.clientY }, false);
    if (pos === null) {
      return null;
    }
    const block = view.lineBlockAtHeight(ev.clientY - view.documentTop);
    if (ev.clientY - view.documentTop > block.bottom) {
      return null;
    }
    return view.state.doc.lineAt(pos).number;
  }

  /** Fold (true) or show (false) the IR noise. */
  setNoiseHidden(hide: boolean): void {
    this.view.dispatch({ effects: this.noise.reconfigure(hide ? this.noiseExt : []) });
  }

  get lineCount(): number {
    return this.view.state.doc.lines;
  }

  /** Light `lines`; with `scroll`, bring the main one (`mainLine`: a tl.dot's HGMMA) to the middle. */
  setLinked(lines: number[], scroll: boolean): void {
    const effects: StateEffect<unknown>[] = [setMarks.of({ linked: lines })];
    const doc = this.view.state.doc;
    const target = mainLine(lines.filter(l => l >= 1 && l <= doc.lines), l => doc.line(l).text, this.lang);
    this.ranges = toRanges(lines);
    this.range = target === null ? -1 : this.ranges.findIndex(([a, b]) => a <= target && target <= b);
    if (scroll && target !== null) {
      effects.push(EditorView.scrollIntoView(doc.line(target).from, { y: 'center' }));
    }
    this.view.dispatch({ effects });
  }

  /** Go to the next (+1) or previous (-1) range of the linked lines (wrapping); returns its 1-based index. */
  stepLinked(dir: 1 | -1): number {
    if (!this.ranges.length) {
      return 0;
    }
    const n = this.ranges.length;
    this.range = this.range < 0 ? 0 : (this.range + dir + n) % n; // from none in view: the first
    this.revealLine(this.ranges[this.range][0]);
    return this.range + 1;
  }

  /** The linked ranges, and which one was brought into view last (1-based; 0: none). */
  get linkedRanges(): { count: number; current: number } {
    return { count: this.ranges.length, current: this.range + 1 };
  }

  setMapped(lines: number[]): void {
    this.view.dispatch({ effects: setMarks.of({ mapped: lines }) });
  }

  /** Scroll `line` to the middle of the pane (a finding's line, a pinned line). */
  revealLine(line: number): void {
    if (line >= 1 && line <= this.lineCount) {
      this.view.dispatch({
        effects: EditorView.scrollIntoView(this.view.state.doc.line(line).from, { y: 'center', x: 'start' })
      });
    }
  }

  scrollToLine(line: number): void {
    if (line >= 1 && line <= this.lineCount) {
      this.view.dispatch({
        effects: EditorView.scrollIntoView(this.view.state.doc.line(line).from, { y: 'start' })
      });
    }
  }

  /** Highlight every match of `query`; returns the number of matches. */
  search(query: string): number {
    this.matches = findMatches(this.view.state.doc.toString(), query);
    this.current = this.matches.length ? 0 : -1;
    this.applySearch();
    return this.matches.length;
  }

  /** Move to the next (+1) or previous (-1) match; returns its 1-based index. */
  step(dir: 1 | -1): number {
    if (!this.matches.length) {
      return 0;
    }
    this.current = (this.current + dir + this.matches.length) % this.matches.length;
    this.applySearch();
    return this.current + 1;
  }

  get matchCount(): number {
    return this.matches.length;
  }

  get currentMatch(): number {
    return this.current + 1;
  }

  private applySearch(): void {
    const effects: StateEffect<unknown>[] = [
      setMarks.of({ matches: this.matches, current: this.current })
    ];
    const m = this.matches[this.current];
    if (m) {
      effects.push(EditorView.scrollIntoView(m.from, { y: 'center' }));
    }
    this.view.dispatch({ effects });
  }

  destroy(): void {
    this.destroyed = true;
    this.view.destroy();
  }
}
