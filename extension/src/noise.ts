/**
 * IR noise, folded by default in the stage panes: MLIR's location suffixes (`loc(#loc12)`, and the
 * `#loc12 = loc(...)` definitions at the end of a module) and the SASS listing's `//## File "...", line N`
 * comments (every other line of a `-lineinfo` build). The text is not changed: the line numbers, the line
 * maps and search stay those of the stored stage; only what is drawn is hidden.
 */

export interface Noise {
  /** [from, to) character ranges inside lines to hide. */
  inline: Array<[number, number]>;
  /** 1-based lines to hide whole. */
  lines: number[];
}

/** The end of the parenthesised group that opens at `open` (the index of its `(`), skipping quoted text. */
function closing(text: string, open: number): number {
  let depth = 0;
  for (let i = open; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      i = text.indexOf('"', i + 1);
      if (i < 0) {
        return -1;
      }
    } else if (c === '(') {
      depth++;
    } else if (c === ')' && --depth === 0) {
      return i + 1;
    } else if (c === '\n') {
      return -1;
    }
  }
  return -1;
}

export function findNoise(text: string, language: string): Noise {
  const out: Noise = { inline: [], lines: [] };
  let start = 0;
  text.split('\n').forEach((line, i) => {
    if (language === 'sass' && /^\s*\/\/## File /.test(line)) {
      out.lines.push(i + 1);
    } else if (language === 'mlir') {
      if (/^#loc[\w.]*\s*=\s*loc\(/.test(line)) {
        out.lines.push(i + 1);
      } else {
        let at = line.indexOf(' loc(');
        while (at >= 0) {
          const end = closing(line, at + 4);
          if (end < 0) {
            break;
          }
          out.inline.push([start + at, start + end]);
          at = line.indexOf(' loc(', end);
        }
      }
    }
    start += line.length + 1;
  });
  return out;
}
