import { describe, expect, it } from 'vitest';
import { roofPoints, roofsOf } from '../src/plots';
import type { Roofline } from '../src/schema';

const base = { kind: 'roofline', status: 'ok', reason: null, dtype: 'bf16', intensity: 1000 } as const;

describe('the roofline cannot mislead', () => {
  it('draws the datasheet peak as the roof and the measured ceiling as a second line', () => {
    const p = { ...base, peak_tflops: 989, bandwidth_tbs: 4.8, measured_peak_tflops: 687, measured_bandwidth_tbs: 4.2,
      points: [] } as unknown as Roofline;
    expect(roofsOf(p)).toEqual({ peak: 989, bw: 4.8, mPeak: 687, mBw: 4.2 });
  });

  it('reads a Report from before 2.1 (its roof was the measured ceiling) with the datasheet as the roof', () => {
    const p = { ...base, peak_tflops: 687, bandwidth_tbs: 4.2, points: [],
      ceilings: { source: 'measured', datasheet: { tflops: { bf16: 989 }, bandwidth_tbs: 4.8 } } } as unknown as Roofline;
    expect(roofsOf(p)).toEqual({ peak: 989, bw: 4.8, mPeak: 687, mBw: 4.2 });
  });

  it('gives untimed kernels no point and moves points that would cover each other apart', () => {
    const pts = [
      { name: 'k', kind: 'kernel', intensity: 1000, tflops: 700 },
      { name: 'cuBLAS', kind: 'reference', intensity: 1000, tflops: 705 },
      { name: 'untimed', kind: 'kernel', intensity: 1000, tflops: null }
    ];
    const out = roofPoints({ ...base, peak_tflops: 989, bandwidth_tbs: 4.8, points: pts } as unknown as Roofline);
    expect(out.map(o => o.name)).toEqual(['k', 'cuBLAS']);
    expect(out[1].x).toBeGreaterThan(out[0].x);
    expect(out[1].left).toBe(true);
  });
});
