/**
 * The CodeMirror language of each pane. Python (the source pane) is JupyterLab's own: the
 * editor-language registry's Python (`@codemirror/lang-python`, as JupyterLab ships it), loaded
 * once, so the source is highlighted exactly as in a notebook cell. The IR stages use the
 * stream parsers of highlight.ts. Without a registry (outside JupyterLab) Python is shown plain.
 */
import { StreamLanguage } from '@codemirror/language';
import { Extension } from '@codemirror/state';
import { parserFor } from './highlight';

/** The part of JupyterLab's IEditorLanguageRegistry used here. */
export interface LanguageSource {
  getLanguage(name: string): Promise<{ support?: Extension | null } | null>;
}

let registry: LanguageSource | null = null;
const loaded = new Map<string, Promise<Extension | null>>();

/** Called once by the plugin with JupyterLab's IEditorLanguageRegistry. */
export function setLanguageSource(source: LanguageSource | null): void {
  registry = source;
  loaded.clear();
}

async function fromRegistry(name: string): Promise<Extension | null> {
  if (!registry) {
    return null;
  }
  try {
    const lang = await registry.getLanguage(name);
    return lang?.support ?? null;
  } catch (e) {
    console.warn(`tlx-workbench: JupyterLab has no ${name} language (${String(e)}); shown unhighlighted`);
    return null;
  }
}

/** The CodeMirror extension for a stage language ('python', 'mlir', 'llvm', 'ptx', 'sass', 'text'). */
export function languageExtension(language: string): Promise<Extension | null> {
  let p = loaded.get(language);
  if (!p) {
    const parser = parserFor(language);
    p = parser ? Promise.resolve(StreamLanguage.define(parser)) : language === 'python' ? fromRegistry('python') : Promise.resolve(null);
    loaded.set(language, p);
  }
  return p;
}
