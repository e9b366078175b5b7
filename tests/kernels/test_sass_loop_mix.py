"""workbench.analyse.loop_mix (and testbed/sass_loop_cases.py, bench/sass_loop_mix.py's cases) on the CPU: the
attention consumer's steady loop and its mix.

If ptxas or Triton change the SASS's shape (labels, //## line comments, USETMAXREG per task, HGMMA groups), these
fail instead of the script silently reporting an empty loop.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from workbench.analyse.loop_mix import loop_mix, overlap
from workbench.analyse.sass_loops import hot_loop, paths, task_regions
from workbench.ir.sass import read_sass

pytest.importorskip("torch")

PATH = Path(__file__).resolve().parents[2] / "testbed" / "sass_loop_cases.py"


@pytest.fixture(scope="module")
def mix():
    spec = importlib.util.spec_from_file_location("sass_loop_cases", PATH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def attention(mix):
    return mix.run_case(mix.attention_case(), 1755.0, [1500.0])


def test_attention_loop_holds_the_mma_and_the_softmax(attention):
    counts = attention["counts_per_warp"]
    assert attention["hgmma"] == {"HGMMA.64x128x16.F32.BF16": 16}  # S = Q K^T and O += P V, 8 k-steps each
    assert counts["MUFU.EX2"] >= 64 and counts["FFMA"] >= 64  # exp2 of 64x128 scores over 128 threads
    assert counts["SYNCS wait"] >= 2 and counts["WARPGROUP.DEPBAR"] == 2
    assert len(attention["replica_loops_sass_lines"]) == 2  # NUM_GROUPS consumer replicas
    # two arms (masked, unmasked): the steady path is the shorter one, without dev.mask_scores
    assert len(attention["path_lengths"]) == 2 and attention["steady_path_instructions"] == min(
        attention["path_lengths"])
    assert "FSEL/FSETP" not in counts


def test_softmax_overlaps_the_pv_wgmma_and_cycles_add_up(attention):
    pv = [g for g in attention["overlap"] if g["kind"] == "RS"]
    assert len(pv) == 1 and pv[0]["during"].get("MUFU.EX2", 0) >= 64
    c = attention["cycles"]
    assert c["tensor_core"] == 2048  # 2 warpgroups x 2 x (2 x 64 x 128 x 128) FLOP / 4096 FLOP/clk
    assert c["mufu"] == attention["counts_per_warp"]["MUFU.EX2"] * 8 * 32 / 16  # 8 consumer warps, 16 lanes/clk
    assert 0 < attention["wave_efficiency"] <= 1 and attention["ceiling_tflops"] > attention["measured_tflops"]


def attention_mix(mix, config):
    """loop_mix() of ws_pipelined at the case's shape (B4 H32 S4096 D128 bf16, non-causal) with ``config``."""
    import torch
    from tlx_kernels.attention import ws_pipelined as W

    import workbench

    q = torch.empty(4, 32, 4096, 128, dtype=torch.bfloat16)
    launch = W.prepare(q, q, q, False, config)
    art = workbench.compile(launch.kernel, *launch.args, target="sm_90", **launch.kwargs)
    return loop_mix(art, 1, mix.attention_case()["excluded"])


def test_late_p_converts_p_under_the_next_s_wgmma(mix, attention):
    """ws_pipelined's LATE_P (its docstring's claim): P's 32 F2FP move from the exposed tail into the S wgmma's
    flight, and the PRMT repack into the HGMMA's A registers disappears."""
    from tlx_kernels.attention import ws_pipelined as W

    late = attention_mix(mix, dict(W.DEFAULT, LATE_P=True))
    assert attention["exposed"].get("F2FP", 0) == 32  # the default converts after the PV wait, exposed
    s_group = next(g for g in late["overlap"] if g["kind"] == "SS")
    assert s_group["during"].get("F2FP", 0) >= 30 and late["exposed"].get("F2FP", 0) <= 2
    assert late["counts_per_warp"]["other"] <= attention["counts_per_warp"]["other"] - 30  # no PRMTs
    assert sum(late["exposed"].values()) < sum(attention["exposed"].values()) - 25
    assert late["steady_path_instructions"] < attention["steady_path_instructions"]


SYNTHETIC = """\
        /*0000*/                   USETMAXREG.TRY_ALLOC.CTAPOOL UP0, 0xf0 ;
.L_x_1:
        /*0010*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR4], R0 ;
        /*0020*/              @!P0 BRA `(.L_x_9) ;
        /*0030*/                   HGMMA.64x128x16.F32.BF16 R24, gdesc[UR8], R24, gsb0 ;
        /*0040*/              @!P1 BRA `(.L_x_2) ;
        /*0050*/                   FSEL R1, R2, -INF , !P2 ;
.L_x_2:
        /*0060*/                   MUFU.EX2 R3, R3 ;
        /*0070*/                   WARPGROUP.DEPBAR.LE gsb0, 0x0 ;
        /*0080*/               @P3 BRA `(.L_x_1) ;
        /*0090*/                   EXIT ;
.L_x_9:
        /*00a0*/                   BRA `(.L_x_9) ;
"""


def test_loop_on_a_hand_written_sass():
    sass = read_sass(SYNTHETIC)
    instrs = sass.instrs
    (region,) = task_regions(sass, "TRY_ALLOC", 240)
    head, back = hot_loop(sass, region, "HGMMA")
    assert (instrs[head].line, instrs[back].line) == (3, 11)
    got = sorted(len(p) for p in paths(sass, head, back))
    assert got == [7, 8]  # the retry branch is not taken; the if forks
    groups, _exposed = overlap(instrs, max(paths(sass, head, back), key=len))
    assert groups[0]["during"] == {"FSEL/FSETP": 1, "MUFU.EX2": 1, "other": 1}
