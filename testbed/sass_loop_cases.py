"""The two kernels whose hot SASS loops bench/sass_loop_mix.py reads (ws_pipelined attention, ws_cooperative GEMM),
each with its problem, the rate the H200 measured, its reference and target, and ``run_case``: compile for sm_90,
``workbench.analyse.loop_mix``, and the loop's efficiency as TFLOP/s ceilings at given clocks. Shared by the bench
and tests/kernels/test_sass_loop_mix.py."""

from __future__ import annotations

import math
from typing import Any

from workbench.analyse.loop_mix import HOPPER, ceiling, code_lines, ctas_per_sm, loop_mix

# measured / reference TFLOP/s: the H200 runs of 2026-12-03 (do_bench medians) that missed their targets


def attention_case() -> dict[str, Any]:
    import torch
    from tlx_kernels.attention import device as dev
    from tlx_kernels.attention import ws_pipelined as W

    B, H, S, D = 4, 32, 4096, 128
    q = torch.empty(B, H, S, D, dtype=torch.bfloat16)
    launch = W.prepare(q, q, q, False, W.DEFAULT)
    return dict(name="attention ws_pipelined", problem=f"B{B} H{H} S{S} D{D} bf16 non-causal", config=W.DEFAULT,
                kernel=launch.kernel, args=launch.args, kwargs=launch.kwargs, work_units=math.prod(launch.grid),
                tma_bytes=2 * W.DEFAULT["BLOCK_N"] * D * 2, excluded=[code_lines(dev.mask_scores)],
                measured=669.0, reference=("cuDNN SDPA", 686.0), target=1.10)


def gemm_case() -> dict[str, Any]:
    import torch
    from tlx_kernels.gemm import ws_cooperative as G

    n, cfg = 8192, G.DEFAULT
    a = torch.empty(n, n, dtype=torch.bfloat16)
    args, kw, _grid, _ = G.prepare(a, a, cfg, sms=HOPPER["sms"])
    return dict(name="gemm ws_cooperative", problem=f"{n}^3 bf16", config=cfg, kernel=G.kernel, args=args,
                kwargs=kw, work_units=math.ceil(n / cfg["BM"]) * math.ceil(n / cfg["BN"]),
                tma_bytes=(cfg["BM"] + cfg["BN"]) * cfg["BK"] * 2, excluded=[], measured=761.6,
                reference=("cuBLAS", 736.0), target=1.05)


def run_case(case: dict[str, Any], clock_mhz: float, other_mhz: list[float]) -> dict[str, Any]:
    """Compile, analyse, and turn the loop's efficiency into TFLOP/s ceilings at ``clock_mhz`` and ``other_mhz``."""
    import workbench

    art = workbench.compile(case["kernel"], *case["args"], target="sm_90", **case["kwargs"])
    md = art.metadata
    ctas = ctas_per_sm(md)
    res = loop_mix(art, ctas, case["excluded"])
    c = res["cycles"]
    roof = ceiling(res, case["work_units"], ctas)
    per_mhz = roof["tflops_per_mhz"]
    ref_name, ref = case["reference"]
    target = case["target"] * ref
    res.update(name=case["name"], problem=case["problem"], config=case["config"], tasks=md.tasks,
               shared_bytes=md.shared_bytes, registers=md.registers, work_units=case["work_units"],
               wave_efficiency=roof["wave_efficiency"], clock_mhz=clock_mhz,
               peak_tflops=roof["peak_tflops_per_mhz"] * clock_mhz,
               ceiling_tflops=per_mhz * clock_mhz, ceiling_at_h200_clocks={m: per_mhz * m for m in other_mhz},
               tma_bytes_per_clk_per_sm=case["tma_bytes"] * ctas / c["tensor_core"],
               measured_tflops=case["measured"], reference=dict(name=ref_name, tflops=ref), target_tflops=target,
               measured_over_ceiling=case["measured"] / (per_mhz * clock_mhz),
               target_over_ceiling=target / (per_mhz * clock_mhz), target_needs_mhz=target / per_mhz,
               # the measured rate as cycles per SM iteration at clock_mhz (prologues, epilogues and stalls included)
               implied_cycles_per_iteration=c["tensor_core"] * per_mhz * clock_mhz / case["measured"])
    return res
