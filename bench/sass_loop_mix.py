#!/usr/bin/env python
"""Where the hot loops' time goes, read from the SASS (CPU only): ws_pipelined attention, ws_cooperative GEMM.

    .venv/bin/python bench/sass_loop_mix.py                # table + bench/results/sass-loop-mix-<date>.json
    .venv/bin/python bench/sass_loop_mix.py --clock-mhz 1515 --no-write

Each kernel is compiled for sm_90 (``workbench.compile``); its consumer's steady-state loop is found in the SASS;
the loop body's instructions are classed and turned into cycles per SM iteration (every consumer warpgroup runs
the body once, the producer its loop once) with Hopper's pipe and issue rates. Throughput only: latencies,
dependences and waits are not modelled, so the numbers are ceilings and required overlaps, not predictions.
"""

from __future__ import annotations

import argparse
import datetime as dt
import glob
import inspect
import json
import math
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
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
_INSTR = re.compile(r"^\s*/\*[0-9a-f]+\*/\s+(@!?U?P[T0-9]+\s+)?([A-Z][A-Za-z0-9_.]*)\s*([^;]*);")
_LABEL = re.compile(r"^(\.L_x_\d+):")
_SRC = re.compile(r'File "([^"]+)", line (\d+)')


@dataclass
class Instr:
    line: int  # 1-based line in the SASS text
    pred: str
    op: str  # opcode with modifiers, e.g. HGMMA.64x128x16.F32.BF16
    args: str
    src: list[tuple[str, int]] = field(default_factory=list)  # (file, line) of its //## comments, innermost first

    @property
    def target(self) -> str | None:
        m = re.search(r"`\((\.L_x_\d+)\)", self.args) if self.op == "BRA" else None
        return m.group(1) if m else None

    @property
    def cls(self) -> str:
        return next(name for name, rx in CLASSES if re.match(rx, self.op))


def parse_sass(text: str) -> tuple[list[Instr], dict[str, int]]:
    """Instructions in address order and label -> index of the instruction after it (nvdisasm -c text)."""
    instrs: list[Instr] = []
    labels: dict[str, int] = {}
    src: list[tuple[str, int]] = []
    fresh = True  # consecutive //## lines (an inlined call chain) make one location
    for n, line in enumerate(text.splitlines(), 1):
        if "//##" in line:
            found = [(f, int(ln)) for f, ln in _SRC.findall(line)]
            src, fresh = (found if fresh else src + found), False
        elif m := _LABEL.match(line):
            labels[m.group(1)] = len(instrs)
        elif m := _INSTR.match(line):
            instrs.append(Instr(n, (m.group(1) or "").strip(), m.group(2), m.group(3).strip(), src))
            fresh = True
    return instrs, labels


def task_regions(instrs: list[Instr], alloc: str, regs: int) -> list[tuple[int, int]]:
    """[start, end) of each replica of one task. A warp-specialized kernel is one function that branches on the warp
    index; each task's code starts with ``USETMAXREG`` to its register budget (``TRY_ALLOC <regs>`` for a consumer,
    ``DEALLOC <regs>`` for the producer), so a replica runs from its ``USETMAXREG`` to the next one."""
    marks = [i for i, x in enumerate(instrs) if x.op.startswith("USETMAXREG")] + [len(instrs)]
    return [(a, b) for a, b in zip(marks, marks[1:])
            if alloc in instrs[a].op and int(instrs[a].args.split(",")[-1], 16) == regs]


def hot_loop(instrs: list[Instr], labels: dict[str, int], region: tuple[int, int], marker: str) -> tuple[int, int]:
    """(head, backedge) of a task's steady-state loop. A backward ``BRA`` (its label at or before it) closes a loop
    from the label to the branch; of the loops inside ``region`` that hold a ``marker`` (HGMMA for a consumer,
    UTMALDG for the producer), the innermost (shortest): the GEMM's K loop inside its persistent tile loop, the
    attention's KV loop. mbarrier try-wait retry loops hold neither, so they never win."""
    loops = [(labels[x.target], i) for i, x in enumerate(instrs[region[0]:region[1]], region[0])
             if x.target and region[0] <= labels[x.target] <= i]
    loops = [(h, b) for h, b in loops if any(x.op.startswith(marker) for x in instrs[h:b])]
    if not loops:
        raise ValueError(f"no loop with {marker} in the task's code")
    return min(loops, key=lambda hb: hb[1] - hb[0])


def paths(instrs: list[Instr], labels: dict[str, int], head: int, back: int, limit: int = 64) -> list[list[int]]:
    """Every path through the loop body from ``head`` to the backedge, as instruction indices. Fast paths only:
    a conditional branch out of the loop (the out-of-line retry of an mbarrier try-wait) or backward inside it (a
    retry loop) is not taken; a forward conditional branch inside it (``if`` arms: the mask, ``k > 0``) forks."""
    done: list[list[int]] = []
    todo: list[tuple[int, list[int]]] = [(head, [])]
    while todo and len(done) < limit:
        i, path = todo.pop()
        while i <= back:
            path.append(i)
            x = instrs[i]
            t = labels.get(x.target or "")
            if i == back or t == head:
                done.append(path)
                break
            if x.op == "EXIT" or (t is not None and not x.pred and not i < t <= back):
                break  # leaves the loop for good
            if t is not None and i < t <= back and x.pred:
                todo.append((t, list(path)))
            i = t if t is not None and i < t <= back and not x.pred else i + 1
    return done


def steady_path(instrs: list[Instr], candidates: list[list[int]], excluded: list[tuple[str, int, int]]) -> list[int]:
    """The path a steady iteration runs: the longest that runs no ``excluded`` source line. ``excluded`` names the
    code only edge iterations run (attention: ``dev.mask_scores``, the KV tail; the non-causal S4096 loop never
    masks); guarded work every later iteration does (the GEMM's ``k > 0`` slot release) stays in."""
    def hits(p: list[int]) -> bool:
        return any(Path(f).name == Path(xf).name and lo <= ln <= hi
                   for i in p for f, ln in instrs[i].src for xf, lo, hi in excluded)

    return max([p for p in candidates if not hits(p)] or candidates, key=len)


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
                exposed[x.cls] += rep == 1 and not live and cur is None
                for g in live + ([cur] if cur else []):
                    if g["rep"] == 0 and "retired_at_line" not in g:
                        g["during"][x.cls] += 1
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


def analyse(sass: str, tasks: list[dict], ctas: int, excluded: list[tuple[str, int, int]]) -> dict[str, Any]:
    """Loop-finding, counting and cycle estimates of one compiled warp-specialized kernel's SASS."""
    instrs, labels = parse_sass(sass)
    c_regs = max(t["registers"] for t in tasks if t["partition"] is not None)
    p_regs = next(t["registers"] for t in tasks if t["partition"] is None)
    loops = [hot_loop(instrs, labels, r, "HGMMA") for r in task_regions(instrs, "TRY_ALLOC", c_regs)]
    head, back = loops[0]
    cands = paths(instrs, labels, head, back)
    path = steady_path(instrs, cands, excluded)
    counts = Counter(instrs[i].cls for i in path)
    ops = Counter(instrs[i].op for i in path if instrs[i].cls == "HGMMA")
    ph, pb = hot_loop(instrs, labels, task_regions(instrs, "DEALLOC", p_regs)[0], "UTMALDG")
    p_path = max(paths(instrs, labels, ph, pb), key=len)
    groups, exposed = overlap(instrs, path)
    return dict(
        loop_sass_lines=[instrs[head].line, instrs[back].line],
        replica_loops_sass_lines=[[instrs[h].line, instrs[b].line] for h, b in loops],
        path_lengths=sorted(len(p) for p in cands), steady_path_instructions=len(path),
        counts_per_warp=dict(counts.most_common()), hgmma=dict(ops), overlap=groups, exposed=exposed,
        producer_loop_sass_lines=[instrs[ph].line, instrs[pb].line], producer_instructions=len(p_path),
        cycles=cycles(counts, ops, len(p_path), tasks, ctas))


def _lines_of(jit_fn: Any) -> tuple[str, int, int]:
    src, first = inspect.getsourcelines(jit_fn.fn)
    return inspect.getsourcefile(jit_fn.fn), first, first + len(src) - 1


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
                tma_bytes=2 * W.DEFAULT["BLOCK_N"] * D * 2, excluded=[_lines_of(dev.mask_scores)],
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
    # CTAs an SM holds: shared memory (1 KiB reserved per CTA) and the register file
    threads = 32 * md.num_warps
    ctas = min(HOPPER["smem_per_sm"] // (md.shared_bytes + 1024), HOPPER["regs_per_sm"] // (md.registers * threads))
    res = analyse(art.stages["sass"], md.tasks, ctas, case["excluded"])
    c = res["cycles"]
    # equal-length work units (CTAs; output tiles of the persistent GEMM) over 132 SMs: the last wave is partial
    per_wave = HOPPER["sms"] * ctas
    wave_eff = case["work_units"] / (per_wave * math.ceil(case["work_units"] / per_wave))
    per_mhz = HOPPER["tc_flop_per_clk"] * HOPPER["sms"] * 1e-6 * c["loop_efficiency"] * wave_eff  # TFLOP/s per MHz
    ref_name, ref = case["reference"]
    target = case["target"] * ref
    res.update(name=case["name"], problem=case["problem"], config=case["config"], tasks=md.tasks,
               shared_bytes=md.shared_bytes, registers=md.registers, work_units=case["work_units"],
               wave_efficiency=wave_eff, clock_mhz=clock_mhz,
               peak_tflops=HOPPER["tc_flop_per_clk"] * HOPPER["sms"] * clock_mhz * 1e-6,
               ceiling_tflops=per_mhz * clock_mhz, ceiling_at_h200_clocks={m: per_mhz * m for m in other_mhz},
               tma_bytes_per_clk_per_sm=case["tma_bytes"] * ctas / c["tensor_core"],
               measured_tflops=case["measured"], reference=dict(name=ref_name, tflops=ref), target_tflops=target,
               measured_over_ceiling=case["measured"] / (per_mhz * clock_mhz),
               target_over_ceiling=target / (per_mhz * clock_mhz), target_needs_mhz=target / per_mhz,
               # the measured rate as cycles per SM iteration at clock_mhz (prologues, epilogues and stalls included)
               implied_cycles_per_iteration=c["tensor_core"] * per_mhz * clock_mhz / case["measured"])
    return res


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
