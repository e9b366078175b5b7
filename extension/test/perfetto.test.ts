import { describe, expect, it } from 'vitest';

import { chromeTrace } from '../src/plots';

describe('the Timeline tab as a Perfetto / Chrome trace', () => {
  it('writes each lane as a complete event: process = CTA, thread = role, microseconds, cycles kept', () => {
    const trace = chromeTrace({
      kind: 'timeline',
      status: 'ok',
      reason: null,
      kernel: 'gemm',
      measured_by: 'workbench.measure.timeline',
      lanes: [
        { cta: 3, role: 'producer', category: 'tma', name: 'load', start_ns: 1500, dur_ns: 500, cycles: 900 },
        { cta: 3, role: 'consumer', category: 'waiting', name: 'wait full', start_ns: 2000, dur_ns: 250, cycles: 450 },
        { cta: 7, role: 'consumer', category: 'mma', name: 'wgmma', start_ns: 3000, dur_ns: 1000 },
        { cta: 7, role: 'consumer', category: 'mma', name: 'no time', start_ns: null as unknown as number, dur_ns: 1 }
      ]
    });
    const complete = trace.traceEvents.filter((e: any) => e.ph === 'X');
    expect(complete).toEqual([
      { ph: 'X', name: 'load', cat: 'tma', pid: 3, tid: 0, ts: 1.5, dur: 0.5, args: { cycles: 900 } },
      { ph: 'X', name: 'wait full', cat: 'waiting', pid: 3, tid: 1, ts: 2, dur: 0.25, args: { cycles: 450 } },
      { ph: 'X', name: 'wgmma', cat: 'mma', pid: 7, tid: 1, ts: 3, dur: 1, args: { cycles: null } }
    ]);
    const names = trace.traceEvents.filter((e: any) => e.ph === 'M').map((e: any) => [e.pid, e.tid, e.args.name]);
    expect(names).toEqual([
      [3, undefined, 'CTA 3'], [3, 0, 'producer'], [3, 1, 'consumer'],
      [7, undefined, 'CTA 7'], [7, 0, 'producer'], [7, 1, 'consumer']
    ]);
    expect(trace.displayTimeUnit).toBe('ns');
    expect((trace.otherData as any).kernel).toBe('gemm');
  });
});
