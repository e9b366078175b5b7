/**
 * The viewer's tabs after Source & IR, one row each: when a Report has the tab, its label and how it draws. A tab's
 * drawing lives in its own file and only draws what Python computed; a new tab is that file and one row here.
 */
import { renderChanges } from './changes';
import { renderLayouts } from './layoutview';
import { renderOrchestration } from './orchestration';
import { renderRoofline, renderTimeline } from './plots';
import type { Stalls } from './schema';
import { renderSearch } from './search';
import { renderStalls } from './stalls';
import { Report, Roofline, Timeline, isRoofline } from './types';

/** What a tab may ask of the viewer. */
export interface TabContext {
  report: Report;
  /** Show a source line in Source & IR, pinned. */
  showLine: (line: number) => void;
  /** Show a stage's line in Source & IR, pinned. */
  showStageLine: (stage: string, line: number) => void;
  /** Pin several source lines together; returns what they link to. */
  pinLines: (lines: number[]) => string;
  showCode: () => void;
  onOpenCandidate?: (searchId: string, index: number) => Promise<void>;
}

export interface TabSpec {
  id: string;
  /** The pane's own class (kept stable: the browser tests and styles use them). */
  paneClass: string;
  label: (r: Report) => string;
  available: (r: Report) => boolean;
  render: (host: HTMLElement, ctx: TabContext) => void | Promise<void>;
}

/** The timeline, when one was recorded (a skipped one is a line in the header, not a tab). */
export function timelinePayload(r: Report): Timeline | null {
  const t = r.timeline;
  return t && (t.status ?? 'ok') === 'ok' ? t : null;
}

export function rooflinePayload(r: Report): Roofline | null {
  return r.measurements.filter(isRoofline).find(m => (m.status ?? 'ok') === 'ok') ?? null;
}

/** The stall samples, when they were taken (a skipped or failed run is a line in the header). */
export function stallsPayload(r: Report): Stalls | null {
  const m = r.measurements.find(x => x.kind === 'stalls') as Stalls | undefined;
  return m && m.status === 'ok' ? m : null;
}

export const TABS: TabSpec[] = [
  {
    id: 'layouts',
    paneClass: 'tlx-layouts-pane',
    label: r => `Layouts (${r.values.length || r.declared.length})`,
    available: () => true,
    render: (host, ctx) => renderLayouts(host, ctx.report)
  },
  {
    id: 'orchestration',
    paneClass: 'tlx-orch-pane',
    label: () => 'Orchestration',
    available: r => !!r.orchestration,
    render: (host, ctx) =>
      renderOrchestration(host, ctx.report.orchestration!, {
        pinLines: ctx.pinLines,
        showCode: ctx.showCode,
        source: ctx.report.source
      })
  },
  {
    id: 'timeline',
    paneClass: 'tlx-timeline-pane',
    label: () => 'Timeline',
    available: r => !!timelinePayload(r),
    render: (host, ctx) => renderTimeline(host, timelinePayload(ctx.report)!)
  },
  {
    id: 'stalls',
    paneClass: 'tlx-stalls-pane',
    label: () => 'Stalls',
    available: r => !!stallsPayload(r),
    render: (host, ctx) =>
      renderStalls(host, stallsPayload(ctx.report)!, {
        showLine: ctx.showLine,
        showSass: line => ctx.showStageLine('sass', line)
      })
  },
  {
    id: 'roofline',
    paneClass: 'tlx-roofline-pane',
    label: () => 'Roofline',
    available: r => !!rooflinePayload(r),
    render: (host, ctx) => renderRoofline(host, rooflinePayload(ctx.report)!)
  },
  {
    id: 'changes',
    paneClass: 'tlx-changes-pane',
    label: () => 'Changes',
    available: r => !!r.previous,
    render: (host, ctx) => renderChanges(host, ctx.report.previous!)
  },
  {
    id: 'search',
    paneClass: 'tlx-search-pane',
    label: r => `Search (${r.search?.rows.length ?? 0})`,
    available: r => !!r.search,
    render: (host, ctx) => renderSearch(host, ctx.report.search!, { onOpen: ctx.onOpenCandidate })
  }
];
