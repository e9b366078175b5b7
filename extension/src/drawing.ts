/** Canvas drawings of layouts: distributed ownership maps and shared-memory swizzles. */
import { el, clear } from './dom';
import { OwnershipMap, SharedMap, bankConflicts, bankOf, sharedOffset } from './layouts';

const MAX_CELLS = 128;

function warpColor(warp: number, lane: number, colorBy: string, reg: number): string {
  if (colorBy === 'thread') {
    return `hsl(${(lane * 360) / 32}, 65%, ${62 - (warp % 4) * 6}%)`;
  }
  if (colorBy === 'register') {
    return `hsl(${(reg * 47) % 360}, 60%, 65%)`;
  }
  return `hsl(${(warp * 67) % 360}, 60%, ${58 + (lane % 4) * 5}%)`;
}

/** 2-D view of an N-D map: the last two dims of the first slice (1-D: one row). */
function view2d(shape: number[]): { rows: number; cols: number; offset: (r: number, c: number) => number } {
  if (shape.length === 1) {
    return { rows: 1, cols: shape[0], offset: (_r, c) => c };
  }
  const rows = shape[shape.length - 2];
  const cols = shape[shape.length - 1];
  return { rows, cols, offset: (r, c) => r * cols + c };
}

export function drawOwnership(host: HTMLElement, map: OwnershipMap, colorBy = 'warp'): void {
  clear(host);
  const v = view2d(map.shape);
  const rows = Math.min(v.rows, MAX_CELLS);
  const cols = Math.min(v.cols, MAX_CELLS);
  const cell = Math.max(4, Math.min(28, Math.floor(900 / Math.max(cols, 1))));
  const canvas = el('canvas', { class: 'tlx-layout-canvas', width: cols * cell, height: rows * cell });
  const info = el('div', { class: 'tlx-layout-info', text: 'Hover an element to see who holds it.' });
  const note = el('div', { class: 'tlx-layout-note' });
  const dup = Array.from(map.copies).some(c => c > 1);
  note.textContent =
    `${map.numWarps} warps \u00d7 ${map.lanes} lanes \u00d7 ${map.registers} registers per thread` +
    (map.shape.length > 2 ? `; showing the last two dims of slice [0, ...]` : '') +
    (v.rows > rows || v.cols > cols ? `; showing the top-left ${rows}\u00d7${cols}` : '') +
    (dup ? '; hatched cells are held by more than one thread (broadcast)' : '');
  host.append(note, canvas, info);
  const ctx = canvas.getContext('2d');
  if (!ctx) {
    return;
  }
  ctx.font = `${Math.max(7, Math.floor(cell / 3))}px monospace`;
  ctx.textAlign = 'center';
  ctx.textBaseline = 'middle';
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) {
      const idx = v.offset(r, c);
      const o = map.owners[idx];
      ctx.fillStyle = o ? warpColor(o.warp, o.lane, colorBy, o.register) : '#ddd';
      ctx.fillRect(c * cell, r * cell, cell - 1, cell - 1);
      if (map.copies[idx] > 1) {
        ctx.strokeStyle = 'rgba(0,0,0,0.25)';
        ctx.beginPath();
        ctx.moveTo(c * cell, (r + 1) * cell - 1);
        ctx.lineTo((c + 1) * cell - 1, r * cell);
        ctx.stroke();
      }
      if (o && cell >= 22) {
        ctx.fillStyle = '#111';
        ctx.fillText(`${o.thread}`, c * cell + cell / 2, r * cell + cell / 3);
        ctx.fillText(`r${o.register}`, c * cell + cell / 2, r * cell + (2 * cell) / 3);
      }
    }
  }
  canvas.addEventListener('mousemove', ev => {
    const rect = canvas.getBoundingClientRect();
    const c = Math.floor(((ev.clientX - rect.left) * (canvas.width / rect.width)) / cell);
    const r = Math.floor(((ev.clientY - rect.top) * (canvas.height / rect.height)) / cell);
    if (r < 0 || c < 0 || r >= rows || c >= cols) {
      return;
    }
    const idx = v.offset(r, c);
    const o = map.owners[idx];
    const at = map.shape.length === 1 ? `[${c}]` : `[${r}, ${c}]`;
    info.textContent = o
      ? `element ${at}: warp ${o.warp}, lane ${o.lane} (thread ${o.thread}), register ${o.register}` +
        (map.copies[idx] > 1 ? `; held by ${map.copies[idx]} (thread, register) pairs` : '')
      : `element ${at}: not held by any thread`;
  });
}

export function drawShared(host: HTMLElement, layout: SharedMap, description: string): void {
  clear(host);
  // Rows and columns in storage order: columns run along the contiguous dim.
  const rows = Math.min(layout.rows, 64);
  const cols = Math.min(layout.cols, MAX_CELLS);
  const cell = Math.max(4, Math.min(22, Math.floor(900 / Math.max(cols, 1))));
  const conflicts = bankConflicts(layout);
  const stats = el('div', { class: 'tlx-layout-note' });
  stats.textContent =
    `${description}: one buffer is ${layout.rows}\u00d7${layout.cols} elements of ${layout.elemBytes} B. ` +
    `Bank conflicts: 8 rows \u00d7 16 B (ldmatrix / wgmma) ${conflicts.columnWays}-way; ` +
    `one row, 32 threads \u00d7 4 B ${conflicts.rowWays}-way.` +
    ` Rows are the ${layout.contiguousLast ? 'leading' : 'trailing'} dim; colour = physical 16-byte chunk.`;
  const canvas = el('canvas', { class: 'tlx-layout-canvas', width: cols * cell, height: rows * cell });
  const info = el('div', { class: 'tlx-layout-info', text: 'Hover an element to see where it is stored.' });
  host.append(stats, canvas, info);
  const ctx = canvas.getContext('2d');
  if (!ctx) {
    return;
  }
  const chunkElems = Math.max(1, 16 / layout.elemBytes);
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) {
      const off = sharedOffset(layout, r, c);
      const chunk = Math.floor(off / chunkElems) % 8;
      ctx.fillStyle = off < 0 ? '#ddd' : `hsl(${chunk * 45}, 60%, ${c % chunkElems === 0 ? 55 : 68}%)`;
      ctx.fillRect(c * cell, r * cell, cell - 1, cell - 1);
    }
  }
  canvas.addEventListener('mousemove', ev => {
    const rect = canvas.getBoundingClientRect();
    const c = Math.floor(((ev.clientX - rect.left) * (canvas.width / rect.width)) / cell);
    const r = Math.floor(((ev.clientY - rect.top) * (canvas.height / rect.height)) / cell);
    if (r < 0 || c < 0 || r >= rows || c >= cols) {
      return;
    }
    const off = sharedOffset(layout, r, c);
    info.textContent =
      `row ${r}, column ${c}: element offset ${off} (byte ${off * layout.elemBytes}), ` +
      `16-byte chunk ${Math.floor(off / chunkElems) % 8} of its 128-byte line, bank ${bankOf(layout, off)}`;
  });
}
