/**
 * TLX Workbench JupyterLab extension: the Report renderer, the docked viewer that follows
 * its cell, and `%%tlx` cell highlighting.
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin, LabShell } from '@jupyterlab/application';
import { MainAreaWidget } from '@jupyterlab/apputils';
import { EditorExtensionRegistry, IEditorExtensionRegistry, IEditorLanguageRegistry } from '@jupyterlab/codemirror';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Widget } from '@lumino/widgets';
import { setLanguageSource } from './languages';
import { tlxCellExtension } from './tlxcell';
import { MIME_TYPE, Report, loadReport } from './types';
import { ReportViewer } from './viewer';

/** Lower ranks win: HTML is 50, so the Report renderer is chosen over the HTML fallback. */
export const RENDERER_RANK = 10;

interface Context {
  app: JupyterFrontEnd;
  tracker: INotebookTracker | null;
}

interface CellRef {
  panel: NotebookPanel;
  cell: any;
}

function findCell(ctx: Context, node: HTMLElement): CellRef | null {
  let found: CellRef | null = null;
  ctx.tracker?.forEach(panel => {
    if (found) {
      return;
    }
    for (const cell of panel.content.widgets) {
      if (cell.node.contains(node)) {
        found = { panel, cell };
        return;
      }
    }
  });
  return found;
}

/** The last Report among a cell's outputs, if any. */
function reportOfCell(cell: any): unknown | null {
  const outputs = cell?.model?.outputs;
  if (!outputs) {
    return null;
  }
  for (let i = outputs.length - 1; i >= 0; i--) {
    const data = outputs.get(i)?.data?.[MIME_TYPE];
    if (data) {
      return data;
    }
  }
  return null;
}

/** The viewer docked in the main area, following one cell. */
class DockedReport extends MainAreaWidget<ReportViewer> {
  private cellModel: any;

  constructor(ref: CellRef, data: unknown) {
    const viewer = new ReportViewer({ docked: true });
    super({ content: viewer });
    this.addClass('tlx-docked-panel');
    this.cellModel = ref.cell.model;
    this.id = DockedReport.idFor(ref.cell.model.id);
    this.title.closable = true;
    this.title.iconClass = 'jp-MaterialIcon jp-CodeIcon';
    void this.showReport(data);
    this.cellModel.outputs?.changed.connect(this.onOutputs, this);
    this.cellModel.disposed?.connect(this.onCellGone, this);
    ref.panel.disposed.connect(this.onCellGone, this);
  }

  static idFor(cellId: string): string {
    return `tlx-report-${cellId}`.replace(/[^\w-]/g, '_');
  }

  private async showReport(data: unknown): Promise<void> {
    const report = await loadReport(data);
    if (this.isDisposed) {
      return;
    }
    this.content.setReport(report);
    this.title.label = `TLX: ${report.kernelName}`;
    this.title.caption = `Report ${report.id} (${report.created}), following its notebook cell`;
    this.node.dataset.reportId = report.id;
  }

  private onOutputs(): void {
    const data = reportOfCell({ model: this.cellModel });
    if (data) {
      void this.showReport(data);
    }
  }

  private onCellGone(): void {
    this.title.label = `${this.title.label} (cell closed)`;
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this.cellModel?.outputs?.changed.disconnect(this.onOutputs, this);
    super.dispose();
  }
}

/** A viewer opened beside its notebook shares the main area with it: the left sidebar folds to give both room
 * (the View menu or Ctrl+B brings it back). */
function giveRoom(app: JupyterFrontEnd): void {
  if (app.shell instanceof LabShell) {
    app.shell.collapseLeft();
  }
}

/** A static copy of a Report docked in the main area (beside `ref`'s notebook when given). */
async function dockStatic(ctx: Context, data: unknown, label: string, ref?: NotebookPanel): Promise<void> {
  const report: Report = await loadReport(data);
  const w = new MainAreaWidget({ content: new ReportViewer({ docked: true }) });
  w.title.closable = true;
  w.addClass('tlx-docked-panel');
  w.content.setReport(report);
  w.title.label = `${label}: ${report.kernelName}`;
  ctx.app.shell.add(w, 'main', ref ? { mode: 'split-right', ref: ref.id } : { mode: 'split-right' });
  giveRoom(ctx.app);
  ctx.app.shell.activateById(w.id);
}

/** The Search tab's row button: the kernel that ran the search displays that candidate's Report. */
async function openCandidate(ctx: Context, from: HTMLElement, searchId: string, index: number): Promise<void> {
  const panel = findCell(ctx, from)?.panel ?? ctx.tracker?.currentWidget ?? null;
  const kernel = panel?.sessionContext.session?.kernel;
  if (!panel || !kernel) {
    throw new Error('no kernel is running for this notebook: run the search cell again');
  }
  const code = `from workbench.search.result import show_candidate as _tlx_show\n_tlx_show(${JSON.stringify(searchId)}, ${index})`;
  const future = kernel.requestExecute({ code, silent: false, store_history: false });
  let data: unknown = null;
  let error = '';
  future.onIOPub = msg => {
    const content = msg.content as any;
    if ((msg.header.msg_type === 'display_data' || msg.header.msg_type === 'execute_result') && content.data?.[MIME_TYPE]) {
      data = content.data[MIME_TYPE];
    } else if (msg.header.msg_type === 'error') {
      error = `${content.ename}: ${content.evalue}`;
    }
  };
  await future.done;
  if (error || !data) {
    throw new Error(error || 'the kernel sent no Report');
  }
  await dockStatic(ctx, data, `TLX search #${index}`, panel);
}

function openBeside(ctx: Context, from: HTMLElement, data: unknown): void {
  const ref = findCell(ctx, from);
  if (!ref) {
    // Not in a notebook (a console, an output view): dock a static copy.
    void dockStatic(ctx, data, 'TLX');
    return;
  }
  const id = DockedReport.idFor(ref.cell.model.id);
  for (const w of Array.from(ctx.app.shell.widgets('main'))) {
    if (w.id === id) {
      ctx.app.shell.activateById(id);
      return;
    }
  }
  const w = new DockedReport(ref, reportOfCell(ref.cell) ?? data);
  ctx.app.shell.add(w, 'main', { mode: 'split-right', ref: ref.panel.id });
  giveRoom(ctx.app);
  ctx.app.shell.activateById(w.id);
}

export class ReportRenderer extends Widget implements IRenderMime.IRenderer {
  private viewer: ReportViewer;
  private data: unknown = null;

  constructor(ctx: Context | null) {
    super();
    this.addClass('tlx-renderer');
    this.viewer = new ReportViewer({
      onOpenBeside: ctx ? () => openBeside(ctx, this.node, this.data) : undefined,
      onOpenCandidate: ctx ? (id, i) => openCandidate(ctx, this.node, id, i) : undefined
    });
    this.node.appendChild(this.viewer.node);
    // A press in the viewer is the viewer's: the notebook would otherwise make this cell active and
    // scroll it between the button going down and up, so the click would land on another line.
    this.node.addEventListener('mousedown', ev => ev.stopPropagation());
  }

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    this.data = model.data[MIME_TYPE];
    try {
      this.viewer.setReport(await loadReport(this.data));
    } catch (e) {
      // say so in the output instead of an empty box and a console error
      this.node.textContent = `TLX Workbench could not show this Report: ${String(e)}`;
      this.node.classList.add('tlx-render-error');
      console.warn('tlx-workbench: could not show a Report', e);
    }
  }

  protected onAfterAttach(): void {
    // The viewer's node lives inside ours; let lumino know it is shown.
    this.viewer.node.classList.add('tlx-attached');
  }

  dispose(): void {
    this.viewer.dispose();
    super.dispose();
  }
}

export function rendererFactory(ctx: Context | null): IRenderMime.IRendererFactory {
  return {
    safe: true, // renders text only, so untrusted notebooks show it too
    mimeTypes: [MIME_TYPE],
    defaultRank: RENDERER_RANK,
    createRenderer: () => new ReportRenderer(ctx)
  };
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'tlx-workbench:plugin',
  description: 'Renders TLX Workbench Reports and highlights %%tlx cells.',
  autoStart: true,
  requires: [IRenderMimeRegistry],
  optional: [INotebookTracker, IEditorExtensionRegistry, IEditorLanguageRegistry],
  activate: (
    app: JupyterFrontEnd,
    rendermime: IRenderMimeRegistry,
    tracker: INotebookTracker | null,
    extensions: IEditorExtensionRegistry | null,
    languages: IEditorLanguageRegistry | null
  ) => {
    const ctx: Context = { app, tracker };
    setLanguageSource(languages);
    rendermime.addFactory(rendererFactory(ctx), RENDERER_RANK);
    if (extensions) {
      extensions.addExtension({
        name: 'tlx-workbench:tlx-cell',
        default: true,
        factory: () => EditorExtensionRegistry.createImmutableExtension(tlxCellExtension())
      });
    }
    app.commands.addCommand('tlx-workbench:open-beside', {
      label: 'Open TLX Report beside the notebook',
      isEnabled: () => !!tracker?.activeCell && !!reportOfCell(tracker.activeCell),
      execute: () => {
        const cell = tracker?.activeCell;
        const data = reportOfCell(cell);
        if (cell && data) {
          openBeside(ctx, cell.node, data);
        }
      }
    });
    (window as any).tlxWorkbench = { version: '0.1.0', mime: MIME_TYPE };
  }
};

export default plugin;
