"""Stall samples placed on roles, lines and SASS instructions (analyse.stalls), on Meta's warp-specialized GEMM
compiled here (its SASS with line info and its orchestration model). The samples are made up (the placement is
what is tested; the GPU test and bench/stalls.py use ncu's): one per instruction at a PC base ncu could give."""

from __future__ import annotations

import functools

import pytest

pytest.importorskip("torch")

from tlx_kernels import meta_tutorials as mt  # noqa: E402

from workbench.analyse.orchestration import build_model  # noqa: E402
from workbench.analyse.stalls import SETUP, align, attribute, instruction_roles, roles_of  # noqa: E402
from workbench.ir.sass import read_sass  # noqa: E402

BASE = 0x7F3A_0000_1000


@functools.cache
def gemm_ws():
    art = mt.case("hopper_gemm_ws").compile()
    return art, build_model(art), read_sass(art.stages["sass"])


def _text(x) -> str:
    return f"{x.pred + ' ' if x.pred else ''}{x.op} {x.args} ;"


def test_the_roles_are_the_setup_the_default_task_and_the_replicated_task_with_their_lines():
    art, model, _ = gemm_ws()
    roles = roles_of(model)
    assert [r.name for r in roles][:2] == [SETUP, "the default task"] and len(roles) == 3
    setup, producer, consumers = roles
    assert consumers.warps == 8 and "async_task(num_warps=4, replicate=2)" in model.line_text(consumers.line)
    lines = art.source.text.splitlines()
    assert any("async_descriptor_load" in lines[ln - 1] for ln in producer.lines)
    assert any("async_dot" in lines[ln - 1] for ln in consumers.lines)
    assert not any("async_dot" in lines[ln - 1] for ln in producer.lines)


def test_pcs_at_any_base_are_aligned_with_nvdisasm_addresses_by_their_opcodes():
    _, _, code = gemm_ws()
    pcs = {BASE + x.address: _text(x) for x in code.instrs[::7]}
    assert align(pcs, code.instrs) == BASE
    assert align({x.address: _text(x) for x in code.instrs[:20]}, code.instrs) == 0


def test_samples_on_every_instruction_land_on_a_role_and_a_line_and_the_hot_rows_say_where():
    art, model, code = gemm_ws()
    by_pc = {BASE + x.address: {"long_scoreboard": 3, "selected": 1} for x in code.instrs}
    hgmma = next(x for x in code.instrs if x.op.startswith("HGMMA"))
    by_pc[BASE + hgmma.address] = {"math_pipe_throttle": 5000, "selected": 20}
    by_pc[BASE + 0xFFFF0] = {"wait": 9}  # not an instruction of this kernel: counted, not placed
    p = attribute(by_pc, {pc: _text(x) for x in code.instrs for pc in [BASE + x.address]},
                  art.stages["sass"], art.reverse_map("sass"), roles_of(model))
    m = p["mapped"]
    assert p["pc_offset"] == BASE and m["instruction"] < 1.0
    assert m["role_and_line"] >= 0.97 and m["loop_role_and_line"] >= 0.98 and m["loop_samples"] > 0
    top = p["hot"][0]
    assert top["op"] == hgmma.op and top["top"] == "math_pipe_throttle" and top["role"] == roles_of(model)[2].name
    consumers = roles_of(model)[2]
    assert consumers.line < top["line"] <= max(consumers.lines)  # ptxas puts it on the K loop's or the dot's line
    assert p["reasons"][0] == "math_pipe_throttle"
    assert sum(p["by_reason"].values()) == p["samples"]  # the unplaced sample counts too
    roles = {r["role"]: r for r in p["roles"]}
    assert roles[top["role"]]["samples"] > roles["the default task"]["samples"] > 0
    assert 0 < roles["the default task"]["stalled"] < 1
    line = next(ln for ln in p["lines"] if ln["line"] == top["line"])
    assert line["top"] == "math_pipe_throttle" and line["role"] == top["role"]


@functools.cache
def ring():
    import importlib

    import torch

    import workbench

    K = importlib.import_module("run.isolation_kernels")
    x = torch.empty(2 * 4 * 1024)
    art = workbench.compile(K.ring_ok, x, x, x.numel(), TILES=4, BLOCK=1024, NUM_BUF=2)
    return art, build_model(art), read_sass(art.stages["sass"])


def test_a_rings_wait_loops_go_to_the_task_that_waits_though_their_lines_are_a_neighbours():
    """ptxas gives an mbarrier wait's SASS the line of the ``with tlx.async_tasks()`` (both tasks' line) or a
    neighbour's, and moves its retry loop out of line to the kernel's end: the loop is the task's whose wait
    branches to it (its barrier operand is that wait's), the shared line the task's whose code is around it."""
    art, model, code = ring()
    by_pc = {x.address: {"long_scoreboard": 1} for x in code.instrs}
    p = attribute(by_pc, {x.address: _text(x) for x in code.instrs}, art.stages["sass"], art.reverse_map("sass"),
                  roles_of(model))
    assert p["mapped"]["role_and_line"] == 1.0, p["mapped"]
    role = instruction_roles(code, art.reverse_map("sass"), roles_of(model))
    waits = [(i, x) for i, x in enumerate(code.instrs) if x.op.startswith("SYNCS.PHASECHK")]
    heads = set(code.labels.values())
    inline = {x.args.split(",", 1)[1].strip(): role[x.address] for i, x in waits if i not in heads}
    retry = [(x.args.split(",", 1)[1].strip(), role[x.address]) for i, x in waits if i in heads]
    assert len(retry) >= 4 and {r for _, r in retry} == {"the default task", "the task at line 33"}
    for operand, r in retry:
        assert inline[operand] == r, (operand, r, inline)
