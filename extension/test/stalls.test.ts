import { describe, expect, it } from 'vitest';
import { SHOWN_REASONS, heatOf, roleBars, sassHeat, stallsSummary } from '../src/stalls';
import type { Stalls } from '../src/schema';

const reasons = ['long_scoreboard', 'barrier', 'wait', 'math_pipe_throttle', 'selected', 'short_scoreboard',
  'mio_throttle', 'no_instructions', 'branch_resolving', 'dispatch_stall'];

function payload(): Stalls {
  const by = (k: number) => Object.fromEntries(reasons.map((r, i) => [r, (i + 1) * k]));
  return {
    kind: 'stalls', status: 'ok', reason: null, kernel: 'k', samples: 1000, duration_ns: 12500, reasons,
    mapped: { role_and_line: 0.9712, loop_role_and_line: 0.995, loop_samples: 800 },
    roles: [
      { role: 'setup (before and after the tasks)', samples: 0, by_reason: {} },
      { role: 'the default task', samples: 55, by_reason: by(1) },
      { role: 'the task at line 245', samples: 110, by_reason: by(2) }
    ]
  } as unknown as Stalls;
}

describe('the Stalls tab draws what Python counted', () => {
  it('stacks each role by its most frequent reasons, the rest as other, the issuing warps last', () => {
    const bars = roleBars(payload());
    expect(bars.roles).toEqual(['the default task', 'the task at line 245']);  // a role with no samples is left out
    const names = bars.traces.map(t => t.reason);
    expect(names.slice(0, SHOWN_REASONS)).toEqual(reasons.filter(r => r !== 'selected').slice(0, SHOWN_REASONS));
    expect(names.slice(-2)).toEqual(['other', 'issuing (selected)']);
    const sum = (i: number) => bars.traces.reduce((s, t) => s + t.values[i], 0);
    expect(sum(0)).toBe(55);  // nothing counted twice or lost
    expect(sum(1)).toBe(110);
  });

  it('says how many samples there were and how many it could place', () => {
    expect(stallsSummary(payload())).toBe(
      '1000 warp samples, the launch took 12.5 us: 97.1% on a role and a line (99.5% of the 800 in the SASS loops)');
  });
});

describe('the source lines are shaded by their samples', () => {
  it('against the hottest line, with the numbers on hover', () => {
    const p = { ...payload(), lines: [
      { line: 12, samples: 400, top: 'long_scoreboard', role: 'the default task', by_reason: {} },
      { line: 30, samples: 100, top: 'barrier', role: null, by_reason: {} },
      { line: 31, samples: 0, top: null, role: null, by_reason: {} }
    ] } as unknown as Stalls;
    const h = heatOf(p);
    expect(h.map(x => [x.line, x.share])).toEqual([[12, 1], [30, 0.25]]);
    expect(h[0].title).toBe('400 warp samples (40.0%), mostly long_scoreboard · the default task');
  });
});

describe('the SASS lines of the hottest instructions are shaded too', () => {
  it('by their samples against the hottest, with the instruction, its line and role on hover', () => {
    const p = { ...payload(), hot: [
      { address: 0x2660, sass_line: 812, op: 'HGMMA.64x256x16.F32', samples: 200, top: 'math_pipe_throttle', line: 267,
        role: 'the task at line 245' },
      { address: 0x2720, sass_line: 830, op: 'SYNCS.PHASECHK', samples: 50, top: 'long_scoreboard', line: 262,
        role: null }
    ] } as unknown as Stalls;
    const h = sassHeat(p);
    expect(h.map(x => [x.line, x.share])).toEqual([[812, 1], [830, 0.25]]);
    expect(h[0].title).toBe(
      'HGMMA.64x256x16.F32: 200 warp samples (20.0%), mostly math_pipe_throttle · line 267 · the task at line 245');
  });
});
