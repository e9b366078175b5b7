"""Where a warp-specialized kernel's hot loop spends its time, read from the SASS (no GPU): the instruction mix of the
consumer's steady-state iteration, what runs while each wgmma group is in flight, and cycles per SM iteration with
Hopper's pipe and issue rates.

    mix = loop_mix(workbench.compile(kernel, *args, target="sm_90"))
    mix["cycles"]["bound_by"], mix["counts_per_warp"], mix["overlap"]

Every consumer warpgroup runs the loop body once per iteration, the producer its own loop once. Throughput only:
latencies, dependences and waits are not modelled, so the numbers are ceilings and required overlaps, not predictions.
"""

from __future__ import annotations

import inspect
import math
import re
from collections import Counter
from collections.abc import Sequence
from typing import Any

from workbench.analyse.sass_loops import hot_loop, paths, steady_path, task_regions
from workbench.ir.artifact import Artifact, Metadata
from workbench.ir.sass import Instr, read_sass

# Hopper SM (H100/H200 SXM): dense bf16 4096 FLOP/clk/SM (989 TFLOP/s = 4096 x 132 SMs x 1830 MHz); MUFU (ex2)
# 16/clk/SM; FP32 FFMA/FMUL/FADD 128/clk/SM (FMNMX is left out: it may issue to another pipe); 4 schedulers
# (SMSPs), each issuing 1 warp-instruction/clk; 228 KiB shared memory and 64K registers per SM.
HOPPER = dict(tc_flop_per_clk=4096, mufu_per_clk=16, fp32_per_clk=128, schedulers=4, sms=132,
              smem_per_sm=233472, regs_per_sm=65536)
FP32_PIPE = ("FFMA", "FMUL", "FADD")
_MUFU_WARP_CLK = 32 * HOPPER["schedulers"] / HOPPER["mufu_per_clk"]  # one warp's MUFU on its scheduler: 8 clk
# first match (on the opcode) wins; "other" is integer ALU, moves, PRMT, predicates, NOPs, branches
CLASSES = [("HGMMA", r"HGMMA"), ("MUFU.EX2", r"MUFU\.EX2"), ("MUFU other", r"MUFU"), ("FFMA", r"FFMA"),
           ("FMUL", r"FMUL"), ("FADD", r"FADD"), ("FMNMX", r"FMNMX"), ("FSEL/FSETP", r"FSEL|FSETP"),
           ("F2FP", r"F2FP|F2F\b|F2I|I2F"), ("SHFL", r"SHFL"), ("SYNCS wait", r"SYNCS\.PHASECHK"),
           ("SYNCS other", r"SYNCS"), ("BAR", r"BAR\b"), ("WARPGROUP.ARRIVE", r"WARPGROUP\.ARRIVE"),
           ("WARPGROUP.DEPBAR", r"WARPGROUP\.DEPBAR"), ("LDS/STS/LDSM", r"LDSM|STSM|LDS|STS"),
           ("uniform (U*)", r"U[A-Z0-9]|R2UR|S2UR"), ("other", r"")]


def instr_class(x: Instr) -> str:
    """The class of an instruction in :data:`CLASSES` (by its opcode)."""
    return next(name for name, rx in CLASSES if re.match(rx, x.op))


def hgmma_flops(op: str) -> int:
    m, n, k = map(int, re.match(r"HGMMA\.(\d+)x(\d+)x(\d+)", op).groups())
    return 2 * m * n * k


def overlap(instrs: list[Instr], path: list[int]) -> tuple[list[dict[str, Any]], dict[str, int]]:
    """Per wgmma group issued in one iteration: the non-MMA instructions one warp issues while the group is in
    flight, from its first HGMMA to the ``WARPGROUP.DEPBAR.LE gsb0, N`` that retires it (an HGMMA with ``gsb0``
    commits a group; a DEPBAR waits until at most N committed groups remain). The path runs twice, so a group the
    next iteration waits for (the GEMM's wait(1)) is followed to its wait. ``tc_cycles``: the group alone on the
    SM's tensor cores; ``mufu_cycles``/``issue_cycles``: the in-flight work of one warp on its scheduler. Also the
    "exposed" instructions: issued (second pass, steady state) while none of this warpgroup's wgmmas is in flight."""
    groups: list[dict[str, Any]] = []
    live: list[dict[str, Any]] = []  # committed, not yet retired
    cur: dict[str, Any] | None = None  # being issued
    exposed: Counter = Counter()
    for rep in (0, 1):
        for x in (instrs[i] for i in path):
            if x.op.startswith("HGMMA"):
                if cur is None:
                    cur = dict(rep=rep, first_line=x.line, op=x.op, hgmma=0, during=Counter(),
                               kind="RS" if re.match(r"R\d+,\s*R\d+", x.args) else "SS")  # A from registers/smem
                    groups += [cur] if rep == 0 else []
                cur["hgmma"] += 1
                if "gsb0" in x.args:
                    live, cur = live + [cur], None
            elif x.op.startswith("WARPGROUP.DEPBAR"):
                keep = int(re.search(r"gsb0, (0x[0-9a-f]+)", x.args).group(1), 16)
                while len(live) > keep:
                    live.pop(0).setdefault("retired_at_line", x.line)
            else:
                exposed[instr_class(x)] += rep == 1 and not live and cur is None
                for g in live + ([cur] if cur else []):
                    if g["rep"] == 0 and "retired_at_line" not in g:
                        g["during"][instr_class(x)] += 1
    return [dict({k: v for k, v in g.items() if k != "rep"}, during=dict(g["during"].most_common()),
                 tc_cycles=g["hgmma"] * hgmma_flops(g["op"]) / HOPPER["tc_flop_per_clk"],
                 mufu_cycles=sum(n for c, n in g["during"].items() if c.startswith("MUFU")) * _MUFU_WARP_CLK,
                 issue_cycles=sum(g["during"].values())) for g in groups], {k: v for k, v in exposed.most_common() if v}


def cycles(counts: Counter, ops: Counter, producer_instrs: int, tasks: list[dict], ctas: int) -> dict[str, Any]:
    """Cycles per SM iteration from the per-warp instruction counts of the consumer's and the producer's loops."""
    consumers = [t for t in tasks if t["partition"] is not None]
    c_warps = sum(t["num_warps"] for t in consumers) * ctas
    p_warps = sum(t["num_warps"] for t in tasks if t["partition"] is None) * ctas
    flops = sum(hgmma_flops(op) * n for op, n in ops.items()) * len(consumers) * ctas
    tc = flops / HOPPER["tc_flop_per_clk"]
    pipes = dict(
        tensor_core=tc,
        mufu=(counts["MUFU.EX2"] + counts["MUFU other"]) * 32 * c_warps / HOPPER["mufu_per_clk"],
        fp32_pipe=sum(counts[c] for c in FP32_PIPE) * 32 * c_warps / HOPPER["fp32_per_clk"],
        # warp w issues from scheduler w % 4: every 4-warp task puts one warp on each scheduler
        issue_per_scheduler=(sum(counts.values()) * c_warps + producer_instrs * p_warps) / HOPPER["schedulers"])
    return dict(ctas_per_sm=ctas, consumer_warps_per_sm=c_warps, producer_warps_per_sm=p_warps,
                flop_per_sm_iteration=flops, **pipes, ratio_to_tc={k: v / tc for k, v in pipes.items()},
                loop_efficiency=tc / max(pipes.values()), bound_by=max(pipes, key=pipes.get))


def loop_mix(art: Artifact, ctas: int = 1, excluded: Sequence[tuple[str, int, int]] = ()) -> dict[str, Any]:
    """Loops, instruction mix, wgmma overlap and cycles per SM iteration of a compiled warp-specialized kernel.
    ``ctas``: CTAs resident per SM (:func:`ctas_per_sm`); ``excluded``: source lines (file, first, last; see
    :func:`code_lines`) that only edge iterations run, kept off the steady path."""
    sass, tasks = read_sass(art.stages["sass"]), art.metadata.tasks
    instrs = sass.instrs
    c_regs = max(t["registers"] for t in tasks if t["partition"] is not None)
    p_regs = next(t["registers"] for t in tasks if t["partition"] is None)
    loops = [hot_loop(sass, r, "HGMMA") for r in task_regions(sass, "TRY_ALLOC", c_regs)]
    head, back = loops[0]
    cands = paths(sass, head, back)
    path = steady_path(sass, cands, excluded)
    counts = Counter(instr_class(instrs[i]) for i in path)
    ops = Counter(instrs[i].op for i in path if instrs[i].op.startswith("HGMMA"))
    ph, pb = hot_loop(sass, task_regions(sass, "DEALLOC", p_regs)[0], "UTMALDG")
    p_path = max(paths(sass, ph, pb), key=len)
    groups, exposed = overlap(instrs, path)
    return dict(
        loop_sass_lines=[instrs[head].line, instrs[back].line],
        replica_loops_sass_lines=[[instrs[h].line, instrs[b].line] for h, b in loops],
        path_lengths=sorted(len(p) for p in cands), steady_path_instructions=len(path),
        counts_per_warp=dict(counts.most_common()), hgmma=dict(ops), overlap=groups, exposed=exposed,
        producer_loop_sass_lines=[instrs[ph].line, instrs[pb].line], producer_instructions=len(p_path),
        cycles=cycles(counts, ops, len(p_path), tasks, ctas))


def ctas_per_sm(md: Metadata) -> int:
    """CTAs one Hopper SM holds: shared memory (1 KiB reserved per CTA) and the register file."""
    threads = 32 * md.num_warps
    return min(HOPPER["smem_per_sm"] // (md.shared_bytes + 1024), HOPPER["regs_per_sm"] // (md.registers * threads))


def ceiling(mix: dict[str, Any], work_units: int, ctas: int) -> dict[str, float]:
    """TFLOP/s per MHz of SM clock the loop allows: the tensor cores' peak x the loop's efficiency x the waves'
    (equal-length work units, CTAs or the persistent GEMM's tiles, over 132 SMs: the last wave is partial)."""
    per_wave = HOPPER["sms"] * ctas
    wave_eff = work_units / (per_wave * math.ceil(work_units / per_wave))
    peak = HOPPER["tc_flop_per_clk"] * HOPPER["sms"] * 1e-6
    return dict(wave_efficiency=wave_eff, peak_tflops_per_mhz=peak,
                tflops_per_mhz=peak * mix["cycles"]["loop_efficiency"] * wave_eff)


def code_lines(jit_fn: Any) -> tuple[str, int, int]:
    """(file, first line, last line) of a ``@triton.jit`` function's source: an ``excluded`` entry of
    :func:`loop_mix`."""
    src, first = inspect.getsourcelines(jit_fn.fn)
    return inspect.getsourcefile(jit_fn.fn), first, first + len(src) - 1
