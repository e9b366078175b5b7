/** The timing line shows a rate only for a count that was given (a 0 count: not given). */
import { describe, expect, it } from 'vitest';
import { timingLine } from '../src/summary';
import type { Timing } from '../src/schema';

const base: Timing = {
  name: 'k', median_ms: 1.637, p10_ms: 1.48, p90_ms: 1.644, runs: 64, method: 'cuda-events', l2: 'flushed',
  stable: true, flops: 9.62e11, bytes: 0, tflops: 587.7, tbs: 0,
};

describe('timingLine', () => {
  it('leaves out the TB/s of bytes nobody counted (recorded as 0)', () => {
    const line = timingLine(base);
    expect(line).toContain('587.7 TFLOP/s');
    expect(line).not.toContain('TB/s');
  });
  it('shows both rates when both counts were given', () => {
    expect(timingLine({ ...base, bytes: 3.3e9, tbs: 2.016 })).toContain('587.7 TFLOP/s, 2.016 TB/s');
  });
  it('shows neither without counts', () => {
    expect(timingLine({ ...base, flops: null, bytes: null, tflops: null, tbs: null })).not.toMatch(/TFLOP|TB\/s/);
  });
});

describe('rooflineBody', () => {
  it('claims no bound without a byte count, and still compares with the compute roofs', async () => {
    const { rooflineBody } = await import('../src/summary');
    const line = rooflineBody({
      kind: 'roofline', bound: null, intensity: null, achieved_tflops: 587.7, roof_fraction: 0.59,
      measured_peak_tflops: 675, peak_tflops: 989, bandwidth_tbs: 4.8
    } as any);
    expect(line).not.toContain('bound');
    expect(line).toContain('intensity unknown (no byte count: --bytes)');
    expect(line).toContain('87% of the measured ceiling');
  });

  it('drops a bound that an older Report stored without a byte count', async () => {
    const { rooflineBody } = await import('../src/summary');
    const old = { kind: 'roofline', bound: 'compute', intensity: null, peak_tflops: 989, bandwidth_tbs: 4.8 } as any;
    expect(rooflineBody(old)).not.toContain('bound');
    expect(rooflineBody({ ...old, intensity: 1365.3 })).toMatch(/^compute-bound · intensity 1365.3 FLOP\/B/);
  });
});
