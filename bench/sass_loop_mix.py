#!/usr/bin/env python
"""Where the hot loops' time goes, read from the SASS (CPU only): ws_pipelined attention, ws_cooperative GEMM.

    .venv/bin/python bench/sass_loop_mix.py                # table + bench/results/sass-loop-mix-<date>.json
    .venv/bin/python bench/sass_loop_mix.py --clock-mhz 1515 --no-write

Each kernel is compiled for sm_90 (``workbench.compile``) and read by ``workbench.analyse.loop_mix``: its consumer's
steady-state loop, the loop body's instruction mix and cycles per SM iteration with Hopper's pipe and issue rates
(throughput only: ceilings and required overlaps, not predictions). This script adds the TFLOP/s ceilings at the
H200's clocks and compares them with the measured rates and the targets.
"""

from __future__ import annotations

import argparse
import datetime as dt
import glob
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "testbed"))

from sass_loop_cases import attention_case, gemm_case, run_case  # noqa: E402

from workbench.analyse.loop_mix import HOPPER  # noqa: E402


def h200_clocks(pattern: str = "bench/results/timeline-*-2026-12-03.json") -> dict[str, dict[str, Any]]:
    """SM clocks the timeline runs recorded on the H200: NVML under the instrumented kernel, the probe kernel,
    cycles/globaltimer in the trace (a lower bound) and NVML during the plain (uninstrumented) timing."""
    out = {}
    for path in sorted(glob.glob(str(ROOT / pattern))):
        tl = json.loads(Path(path).read_text()).get("timeline") or {}
        clock = tl.get("clock") or {}
        out[Path(path).name] = dict(nvml_mhz=clock.get("mhz"), probe_mhz=clock.get("probe_mhz"),
                                    trace_mhz=clock.get("trace_mhz"),
                                    plain_run_mhz=(tl.get("timing") or {}).get("plain_clock_mhz"))
    return out


def _join(d: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in d.items())


def print_table(results: list[dict[str, Any]], clocks: dict[str, dict[str, Any]]) -> None:
    for r in results:
        c, ratio = r["cycles"], r["cycles"]["ratio_to_tc"]
        first, last = r["loop_sass_lines"]
        print(f"\n== {r['name']} ({r['problem']}): loop at SASS lines {first}-{last}, paths {r['path_lengths']}, "
              f"steady {r['steady_path_instructions']} instr/warp")
        print("   HGMMA per warpgroup: " + ", ".join(f"{n} x {op}" for op, n in r["hgmma"].items()))
        print("   per warp: " + _join(r["counts_per_warp"]))
        for g in r["overlap"]:
            print(f"   in flight with {g['hgmma']} x {g['op']} ({g['kind']}, line {g['first_line']}, "
                  f"{g['tc_cycles']:.0f} TC cycles alone; one warp: {g['mufu_cycles']:.0f} MUFU, "
                  f"{g['issue_cycles']} issue): "
                  + _join(g["during"]))
        print(f"   exposed (no own wgmma in flight): {sum(r['exposed'].values())} instr/warp: " + _join(r["exposed"]))
        print(f"   cycles/SM iteration ({c['consumer_warps_per_sm']} consumer + {c['producer_warps_per_sm']} producer "
              f"warps/SM): tensor core {c['tensor_core']:.0f} | MUFU {c['mufu']:.0f} ({ratio['mufu']:.0%}) | FP32 "
              f"{c['fp32_pipe']:.0f} ({ratio['fp32_pipe']:.0%}) | issue/scheduler {c['issue_per_scheduler']:.0f} "
              f"({ratio['issue_per_scheduler']:.0%}) -> bound by {c['bound_by']}; TMA fill "
              f"{r['tma_bytes_per_clk_per_sm']:.0f} B/clk/SM")
        print(f"   at {r['clock_mhz']:.0f} MHz: peak {r['peak_tflops']:.0f} x loop {c['loop_efficiency']:.3f} x waves "
              f"{r['wave_efficiency']:.3f} ({r['work_units']} units) = ceiling {r['ceiling_tflops']:.0f} TFLOP/s; "
              f"measured {r['measured_tflops']} ({r['measured_over_ceiling']:.0%}), target {r['target_tflops']:.0f} "
              f"({r['target_over_ceiling']:.0%}; needs {r['target_needs_mhz']:.0f} MHz at 100%); measured = "
              f"{r['implied_cycles_per_iteration']:.0f} cycles/SM iteration")
        print("   ceiling at H200 clocks: " + ", ".join(f"{m:.0f} MHz {t:.0f}" for m, t in
                                                         r["ceiling_at_h200_clocks"].items()))
    for name, c in clocks.items():
        print(f"   H200 clocks in {name}: " + _join({k: v and round(v) for k, v in c.items()}))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clock-mhz", type=float, default=1755.0, help="SM clock under load for the ceilings")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    ap.add_argument("--no-write", action="store_true")
    opts = ap.parse_args(argv)
    import triton

    clocks = h200_clocks()
    recorded = ("trace_mhz", "plain_run_mhz")
    other = sorted({round(v) for c in clocks.values() for k, v in c.items() if v and k in recorded})
    results = [run_case(case(), opts.clock_mhz, other) for case in (attention_case, gemm_case)]
    print_table(results, clocks)
    if not opts.no_write:
        path = Path(opts.out) / f"sass-loop-mix-{dt.date.today().isoformat()}.json"
        doc = dict(date=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                   command=" ".join(["bench/sass_loop_mix.py", *(sys.argv[1:] if argv is None else argv)]),
                   triton=triton.__version__, hopper=HOPPER, h200_clocks=clocks, kernels=results)
        path.write_text(json.dumps(doc, indent=1, default=str) + "\n")
        print(f"\nwrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
