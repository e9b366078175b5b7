/**
 * `%%tlx` cells in the notebook: the body is Python (the kernel's own language), the magic
 * line is marked as such. JupyterLab highlights IPython cells with its Python grammar; this
 * extension keeps that grammar for the body and styles the `%%tlx ...` line as a magic.
 */
import { Extension, RangeSetBuilder } from '@codemirror/state';
import { Decoration, DecorationSet, EditorView, ViewPlugin, ViewUpdate } from '@codemirror/view';
import { isTlxCell } from './highlight';

const magicLine = Decoration.line({ class: 'tlx-magic-line' });
const magicMark = Decoration.mark({ class: 'tlx-magic' });

function decorate(view: EditorView): DecorationSet {
  const b = new RangeSetBuilder<Decoration>();
  const doc = view.state.doc;
  if (doc.lines >= 1 && isTlxCell(doc.sliceString(0, Math.min(doc.length, 400)))) {
    for (let i = 1; i <= doc.lines; i++) {
      const line = doc.line(i);
      if (line.text.trim()) {
        const start = line.from + (line.text.length - line.text.trimStart().length);
        const end = start + (/^%%tlx/.test(line.text.trimStart()) ? 5 : 0);
        b.add(line.from, line.from, magicLine);
        if (end > start) {
          b.add(start, end, magicMark);
        }
        break;
      }
    }
  }
  return b.finish();
}

export function tlxCellExtension(): Extension {
  return [
    ViewPlugin.fromClass(
      class {
        decorations: DecorationSet;
        constructor(view: EditorView) {
          this.decorations = decorate(view);
        }
        update(u: ViewUpdate) {
          if (u.docChanged) {
            this.decorations = decorate(u.view);
          }
        }
      },
      { decorations: v => v.decorations }
    ),
    EditorView.editorAttributes.compute(['doc'], state => {
      const attrs: { [k: string]: string } = {};
      if (isTlxCell(state.doc.sliceString(0, Math.min(state.doc.length, 400)))) {
        attrs.class = 'tlx-cell';
      }
      return attrs;
    })
  ];
}
