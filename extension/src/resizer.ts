/**
 * A divider the user drags to share a row between its columns: the column before it takes the width the pointer
 * gives it (between 15% and 85% of the row), a double click puts back the width it started with.
 */
export function addResizer(row: HTMLElement, left: HTMLElement, before: HTMLElement | null = null): HTMLElement {
  const bar = document.createElement('div');
  bar.className = 'tlx-col-resizer';
  bar.title = 'Drag to share the width between the panes (double-click: as it was)';
  bar.setAttribute('role', 'separator');
  bar.setAttribute('aria-orientation', 'vertical');
  const initial = left.style.flex;
  bar.addEventListener('pointerdown', down => {
    down.preventDefault();
    bar.setPointerCapture(down.pointerId);
    const rowBox = row.getBoundingClientRect();
    const start = left.getBoundingClientRect().width;
    const move = (ev: PointerEvent) => {
      const w = Math.max(0.15 * rowBox.width, Math.min(0.85 * rowBox.width, start + ev.clientX - down.clientX));
      left.style.flex = `0 0 ${Math.round(w)}px`;
    };
    const up = () => {
      bar.removeEventListener('pointermove', move);
      bar.removeEventListener('pointerup', up);
      row.dataset.resized = left.style.flex;
    };
    bar.addEventListener('pointermove', move);
    bar.addEventListener('pointerup', up);
  });
  bar.addEventListener('dblclick', () => {
    left.style.flex = initial;
    delete row.dataset.resized;
  });
  row.insertBefore(bar, before);
  return bar;
}

/**
 * The width a column of code starts with: its longest line (in the code font's characters, plus the gutter), at
 * most `share` of the row, so that the source is not cut where the row has room and the stages keep the rest.
 */
export function codeBasis(text: string, share: number): string {
  const longest = Math.min(160, Math.max(20, ...text.split('\n').map(l => l.replace(/\t/g, '    ').trimEnd().length)));
  return `0 1 min(calc(${longest + 1}ch + 4.5em), ${Math.round(share * 100)}%)`;
}
