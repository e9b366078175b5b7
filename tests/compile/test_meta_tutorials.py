"""Meta's TLX tutorials from the installed triton-utlx wheel, imported unmodified and compiled through
``workbench.compile`` with one of their own autotune configs: every Hopper file for sm_90, the Blackwell GEMMs and
flash-attention forwards for sm_100a (the CLC GEMM: a clear error, since stock Triton 3.8 lacks its MLIR ops). No GPU
needed.

What each kernel should show is read from its own source: ``tlx.async_dot`` -> wgmma (Hopper) or
tcgen05.mma (Blackwell) in the PTX and an MMA instruction in the SASS of that line; TMA (host or device
tensor descriptors, ``async_descriptor_load``) -> ``cp.async.bulk.tensor``; ``tlx.async_tasks`` -> the
Artifact lists the tasks with their warps and register budgets.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import pytest
from tlx_kernels import meta_tutorials as mt

HOPPER = mt.names("hopper*.py")
BLACKWELL = ["blackwell_gemm_pipelined", "blackwell_gemm_ws", "blackwell_fa_ws", "blackwell_fa_ws_pipelined",
             "blackwell_fa_ws_persistent"]
# with a recipe but no compile on stock Triton 3.8: each a clear error at its line, the process lives
BLACKWELL_ERRORS = {"blackwell_gemm_clc": "cluster launch control lowers to MLIR ops"}
STAGES = ("ttir", "ttgir", "llir", "ptx", "sass")
_SETMAXNREG = re.compile(r"setmaxnreg\.(?:inc|dec)\.sync\.aligned\.u32\s+(\d+)")


@functools.cache
def compiled(name: str):
    """(case, artifact, tutorial source): one compile per tutorial for all tests of this module."""
    case = mt.case(name)
    return case, case.compile(), (mt.tutorial_dir() / f"{name}.py").read_text()


def _opcode(sass_line: str) -> str:
    """'  /*0950*/  @UP2 UTMALDG.2D [UR12], [UR4] ;' -> 'UTMALDG.2D'."""
    words = [w for w in sass_line.split("*/", 1)[-1].split() if not w.startswith("@")]
    return words[0] if words else ""


def _is_mma(opcode: str, arch: int) -> bool:
    return opcode.startswith("HGMMA") if arch == 90 else bool(re.match(r"UTC\w*MMA", opcode))


def test_the_wheel_ships_at_least_eight_hopper_tutorials():
    assert len(HOPPER) >= 8, f"found {len(HOPPER)} Hopper tutorials in {mt.tutorial_dir()}: {HOPPER}"


def test_every_tutorial_file_has_a_recipe_or_a_reason():
    found = set(mt.names())
    new = sorted(found - set(mt.RECIPES) - set(mt.UNCOVERED))
    assert not new, (f"tutorial file(s) new in this wheel: {new}; add a recipe to "
                     "tlx_kernels.meta_tutorials.RECIPES (or say why not in UNCOVERED)")
    gone = sorted((set(mt.RECIPES) | set(mt.UNCOVERED)) - found)
    assert not gone, f"tutorial file(s) gone from this wheel: {gone}"
    assert set(HOPPER) <= set(mt.RECIPES), "every Hopper tutorial needs a recipe"
    assert set(BLACKWELL) <= set(mt.RECIPES)


def test_a_tutorial_without_a_recipe_is_an_error_that_says_what_to_do():
    with pytest.raises(KeyError, match="add one to tlx_kernels.meta_tutorials.RECIPES"):
        mt.case("vector-add2")


@pytest.mark.parametrize("name", HOPPER + BLACKWELL)
def test_unmodified_file_and_one_of_its_own_configs(name):
    case, art, _ = compiled(name)
    path = mt.tutorial_dir() / f"{name}.py"
    assert Path(mt.load(name).__file__).resolve() == path.resolve()
    assert Path(art.source.filename).resolve() == path.resolve()
    assert any(case.config is c for c in case.kernel.configs)  # the object itself, not a copy
    assert art.target == ("sm_90" if name in HOPPER else "sm_100")
    # the config's num_warps are the kernel's (the default task's, in a warp-specialized kernel)
    warps = art.metadata.tasks[0]["num_warps"] if art.metadata.tasks else art.metadata.num_warps
    assert warps == case.config.num_warps


@pytest.mark.parametrize("name", HOPPER + BLACKWELL)
def test_every_stage_down_to_sass(name):
    _, art, _ = compiled(name)
    for stage in STAGES:
        assert art.stages.get(stage, "").strip(), f"{name}: stage {stage} is empty"
    assert art.metadata.registers and art.metadata.shared_bytes > 0


@pytest.mark.parametrize("name", HOPPER + BLACKWELL)
def test_ptx_has_the_instructions_the_source_asks_for(name):
    case, art, src = compiled(name)
    ptx = art.stages["ptx"]
    uses_mma = "async_dot(" in src
    uses_tma = any(s in src for s in ("async_descriptor_load(", "TensorDescriptor", "make_tensor_descriptor("))
    if case.arch == 90:
        assert ("wgmma.mma_async" in ptx) == uses_mma
        assert "tcgen05" not in ptx
    else:
        assert ("tcgen05.mma" in ptx) == uses_mma
        assert "wgmma" not in ptx
    assert ("cp.async.bulk.tensor" in ptx) == uses_tma


@pytest.mark.parametrize("name", HOPPER + BLACKWELL)
def test_tasks_with_warps_and_register_budgets(name):
    _, art, src = compiled(name)
    tasks = art.metadata.tasks
    if "async_tasks(" not in src:
        assert tasks == []
        return
    assert len(tasks) >= 2 and tasks[0]["partition"] is None
    assert [t["partition"] for t in tasks[1:]] == list(range(len(tasks) - 1))
    assert all(t["num_warps"] >= 1 and t["first_line"] for t in tasks)
    budgets = {int(x) for x in _SETMAXNREG.findall(art.stages["ptx"])}
    if not budgets:  # no setmaxnreg: every warp keeps the kernel's own register count
        assert all(t["registers"] is None for t in tasks) and art.metadata.registers
        return
    for t in tasks[1:]:
        assert t["registers"] in budgets, f"{name}: task {t} vs setmaxnreg {sorted(budgets)}"


def test_blackwell_default_task_budget_is_its_setmaxnreg():
    """allocate-warp-groups gives this default task a pool share of 488 registers; setmaxnreg caps it at 256."""
    _, art, _ = compiled("blackwell_gemm_ws")
    budgets = {int(x) for x in _SETMAXNREG.findall(art.stages["ptx"])}
    assert art.metadata.tasks[0]["registers"] in budgets


@pytest.mark.parametrize("name", HOPPER + BLACKWELL)
def test_source_maps_both_ways_down_to_sass(name):
    case, art, src = compiled(name)
    lines = src.splitlines()
    sass = art.stages["sass"].splitlines()
    forward, back = art.source_map("sass"), art.reverse_map("sass")
    first = art.source.first_line
    body = range(first + 1, first + len(art.source.kernel_text.splitlines()))
    # a line of the kernel's body maps to SASS lines (that exist), and SASS lines map back into the body
    assert any(forward.get(ln) for ln in body), f"{name}: no line of the kernel body maps to SASS"
    assert all(1 <= s <= len(sass) for ln in body for s in forward.get(ln, []))
    assert any(u in body for users in back.values() for u in users)
    # the MMA: its tlx.async_dot line maps to MMA instructions, and those map back to an async_dot line
    dots = [ln for ln in forward if "async_dot(" in lines[ln - 1]]
    assert dots, f"{name}: no tlx.async_dot line maps to SASS"
    mma = [s for ln in dots for s in forward[ln] if _is_mma(_opcode(sass[s - 1]), case.arch)]
    assert mma, f"{name}: the async_dot lines {dots} map to no MMA instruction"
    assert all(any("async_dot(" in lines[u - 1] for u in back[s]) for s in mma)


@pytest.mark.parametrize("name", HOPPER)
def test_the_gpu_host_call_fits_the_tutorials_own_function(name):
    import inspect

    host = mt.HOSTS[name]
    fn = getattr(mt.load(name), host.function)
    args = ("a", "b") if host.kind == "gemm" else ("q", "k", "v", mt.SM_SCALE)
    inspect.signature(fn).bind(*args, **({"config": {}} if host.pass_config else {}))
    if host.pass_config:
        cfg = mt.host_config(name)
        tuner = getattr(mt.load(name), mt.RECIPES[name].kernel)
        assert any(cfg == c.all_kwargs() for c in tuner.configs) and {"num_warps", "num_stages"} <= set(cfg)


def test_inputs_reference_and_baseline_agree_on_a_cpu():
    import torch

    a, b = mt.inputs("gemm", (64, 32, 48), torch.float32, device="cpu")
    assert a.shape == (64, 48) and b.shape == (48, 32)
    torch.testing.assert_close(mt.reference("gemm", a, b), mt.baseline("gemm", a, b))
    q, k, v = mt.inputs("attention", (1, 2, 64, 16), torch.float32, device="cpu")
    assert 0.4 < float(q.std()) < 0.6
    torch.testing.assert_close(mt.reference("attention", q, k, v), mt.baseline("attention", q, k, v))
    assert mt.flops("gemm", (2, 3, 4)) == 48 and mt.flops("attention", (1, 2, 3, 4)) == 4 * 2 * 9 * 4


@pytest.mark.parametrize("name", sorted(BLACKWELL_ERRORS))
def test_a_tutorial_stock_triton_cannot_build_is_an_error_at_its_line(name):
    import workbench

    with pytest.raises(workbench.CompileError, match=BLACKWELL_ERRORS[name]) as err:
        mt.case(name).compile()
    src = (mt.tutorial_dir() / f"{name}.py").read_text().splitlines()
    assert err.value.lineno and src[err.value.lineno - 1].strip() == err.value.source_line.strip()


@pytest.mark.parametrize("name", HOPPER + BLACKWELL)
def test_the_checks_raise_no_false_alarm_on_a_tutorial(name):
    """Meta's tutorials are correct (they ran and matched torch on an H200, Hopper; Meta tests the Blackwell ones):
    no error-level finding. blackwell_fa_ws had two: its K/V slots are released by the MMA's second mBarrier
    (``tlx.async_dot(..., mBarriers=[qk_fulls[i], kv_empties[k]])``), which the model did not count."""
    import workbench

    case, _, _ = compiled(name)
    with mt.device_standins(case.arch):
        findings = workbench.check(case.kernel, *case.args, target=case.target, config=case.config, **case.kwargs)
    errors = [(f.rule, f.line, f.message[:200]) for f in findings if f.severity == "error"]
    assert not errors, errors
