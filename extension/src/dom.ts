/** DOM helpers that only ever set text (never HTML): Report strings may contain markup. */

export type Child = Node | string | null | undefined | false;

export function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: { [k: string]: string | number | boolean | undefined } = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === false) {
      continue;
    }
    if (k === 'class') {
      e.className = String(v);
    } else if (k === 'text') {
      e.textContent = String(v);
    } else {
      e.setAttribute(k, v === true ? '' : String(v));
    }
  }
  for (const c of children) {
    if (c === null || c === undefined || c === false) {
      continue;
    }
    e.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
  }
  return e;
}

export function clear(e: HTMLElement): void {
  while (e.firstChild) {
    e.removeChild(e.firstChild);
  }
}

export function fmtBytes(n: unknown): string {
  if (typeof n !== 'number') {
    return '\u2014';
  }
  if (n >= 1024) {
    return `${(n / 1024).toFixed(n % 1024 ? 1 : 0)} KiB`;
  }
  return `${n} B`;
}

export function fmtNum(n: unknown): string {
  return typeof n === 'number' && isFinite(n) ? String(n) : '\u2014';
}
