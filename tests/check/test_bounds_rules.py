"""index-out-of-range and register-budget on small ring kernels (``bounds_kernels``): each bug is found
at its marked line, with the numbers the compile and the simulated run saw; what Triton gives as
asked, and indices the run cannot know, give nothing. The kernels compile for sm_90 on the CPU."""

from __future__ import annotations

import functools
import re

import pytest

torch = pytest.importorskip("torch")

import bounds_kernels as B  # noqa: E402
from test_rules import BK, BM, STAGES, K, marked_line  # noqa: E402
from triton.tools.tensor_descriptor import TensorDescriptor  # noqa: E402

from workbench.check import check  # noqa: E402


def _args():
    x = torch.empty(BM, K, dtype=torch.float16)
    out = torch.empty(2 * BM, BK, dtype=torch.float16)
    return TensorDescriptor(x, [BM, K], [K, 1], [BM, BK]), out, K


@functools.cache
def findings(name: str, **constexprs):
    return check(getattr(B, name), *_args(), BM=BM, BK=BK, STAGES=STAGES, strict=True, **constexprs)


@functools.cache
def artifact(name: str, **constexprs):
    import workbench

    return workbench.compile(getattr(B, name), *_args(), target="sm_90", BM=BM, BK=BK, STAGES=STAGES, **constexprs)


def only(fs, rule: str, line: int):
    hits = [f for f in fs if f.rule == rule]
    assert [f.line for f in hits] == [line], [str(f) for f in fs]
    assert not [f for f in fs if f.rule != rule and f.severity != "info"], [str(f) for f in fs]
    return hits[0]


def test_a_view_past_the_ring_names_the_allocation_its_count_the_index_and_the_iteration():
    kernel = B.view_past_the_ring
    f = only(findings("view_past_the_ring"), "index-out-of-range", marked_line(kernel, "# BUG: index-out-of-range"))
    loop = _consumer_loop(kernel)
    assert f.severity == "error"
    assert f"`bufs` has {STAGES} slots (indices 0 to {STAGES - 1})" in f.message
    assert f"indexes it with {STAGES * 7} here (iteration 1 of the loop at line {loop}, loop variable 0)" in f.message
    use = marked_line(kernel, "acc += tlx.local_load(tile).to(tl.float32)")
    assert f"and reads it at line {use}" in f.message
    alloc = marked_line(kernel, "bufs = tlx.local_alloc((BM, BK), tl.float16, STAGES)")
    assert [r.line for r in f.related] == [alloc, use]
    assert "k % NUM_STAGES" in f.hint and "tlx.local_view(bufs, slot)" in f.hint
    # the consumer stops there: said once, not as a 'could not follow' too
    assert not [g for g in findings("view_past_the_ring") if g.rule == "not-followed"]


def test_a_barrier_index_past_the_ring_is_found_at_the_iteration_it_first_leaves_it():
    kernel = B.barrier_past_the_ring
    f = only(findings("barrier_past_the_ring"), "index-out-of-range",
             marked_line(kernel, "# BUG: index-out-of-range"))
    assert f"`empty` has {STAGES} mbarriers (indices 0 to {STAGES - 1})" in f.message
    # k % (STAGES + 1) stays in range for k < STAGES: the first index out is STAGES, at iteration STAGES + 1
    assert f"the default task indexes it with {STAGES} here (iteration {STAGES + 1} of the loop" in f.message
    assert f"loop variable {STAGES})" in f.message and "waits on it" in f.message


def test_barriers_one_short_of_their_ring_are_told_to_match_it():
    """The index is right (k % STAGES) and the barrier set is too small: the hint names the ring it pairs with."""
    kernel = B.barriers_short_of_the_ring
    fs = [f for f in findings("barriers_short_of_the_ring") if f.rule == "index-out-of-range"]
    expect = marked_line(kernel, "tlx.barrier_expect_bytes(full[s], BM * BK * 2)")
    wait = marked_line(kernel, "tlx.barrier_wait(full[s], p)")
    assert [f.line for f in fs] == [expect, wait], [str(f) for f in fs]
    alloc = marked_line(kernel, "bufs = tlx.local_alloc((BM, BK), tl.float16, STAGES)")
    for f in fs:
        assert f"`full` has {STAGES - 1} mbarriers" in f.message
        assert f.hint.startswith(f"`bufs` (line {alloc}) has {STAGES} slots: if `full` pairs with it, allocate "
                                 f"`full` with {STAGES} as well"), f.hint


def test_an_index_the_run_cannot_know_says_nothing():
    """Without the launch's K the loops are not followed: the index is never computed, nothing is said."""
    import workbench
    from workbench.check import check_artifact

    art = workbench.compile(B.view_past_the_ring, *_args(), target="sm_90", BM=BM, BK=BK, STAGES=STAGES)
    fs = check_artifact(art, None, strict=True)
    assert not [f for f in fs if f.rule == "index-out-of-range"], [str(f) for f in fs]
    assert {f.rule for f in fs} <= {"not-followed"}


def _consumer_loop(kernel) -> int:
    import inspect

    lines, first = inspect.getsourcelines(kernel.fn)
    loops = [first + i for i, text in enumerate(lines) if text.strip().startswith("for k in range")]
    return loops[1]


# register-budget ---------------------------------------------------------------------------


def test_a_budget_setmaxnreg_gives_as_asked_gives_no_finding():
    assert findings("ring_with_budget", REGS=232, REPLICAS=1) == []
    tasks = artifact("ring_with_budget", REGS=232, REPLICAS=1).metadata.tasks
    assert [t["registers"] for t in tasks] == [256, 232]  # the default task gets the rest (capped at 256)


def test_a_budget_over_256_is_said_with_what_triton_gave_and_what_it_cost_the_default_task():
    f = only(findings("ring_with_budget", REGS=300, REPLICAS=1), "register-budget",
             marked_line(B.ring_with_budget, "# BUG: register-budget"))
    assert f.severity == "warning"
    assert "asked for 300 registers; setmaxnreg allows at most 256; Triton gave 256" in f.message
    default = artifact("ring_with_budget", REGS=300, REPLICAS=1).metadata.tasks[0]["registers"]
    assert default == 208  # 8 warps: 256 each; the consumer's 304 (300 rounded up) is counted against it
    assert "counts 304 for it" in f.message
    assert f"the default task gets {default} per thread instead of 256" in f.message


def test_a_budget_off_the_step_of_8_is_rounded_up_and_said():
    f = only(findings("ring_with_budget", REGS=100, REPLICAS=1), "register-budget",
             marked_line(B.ring_with_budget, "# BUG: register-budget"))
    assert "asked for 100 registers; setmaxnreg takes multiples of 8; Triton gave 104" in f.message


def test_budgets_that_do_not_fit_64k_are_dropped_by_triton_and_said_with_the_most_that_fits():
    fs = findings("ring_with_budget", REGS=248, REPLICAS=2)
    f = only(fs, "register-budget", marked_line(B.ring_with_budget, "# BUG: register-budget"))
    assert all(t["registers"] is None for t in artifact("ring_with_budget", REGS=248, REPLICAS=2).metadata.tasks)
    assert "64,512 registers (168 per thread x 384 threads)" in f.message
    assert "248 x 128 + 248 x 128 = 63,488, which leaves 8 per thread" in f.message
    assert "no setmaxnreg" in f.message
    most = int(re.search(r"At most (\d+) for this task fits", f.message).group(1))
    assert most == 240
    # the suggestion holds: at that budget Triton gives both replicas what they ask
    tasks = artifact("ring_with_budget", REGS=most, REPLICAS=2).metadata.tasks
    assert [t["registers"] for t in tasks] == [24, 240, 240]
    assert findings("ring_with_budget", REGS=most, REPLICAS=2) == []


def test_a_budget_on_the_default_task_is_said_to_be_ignored():
    f = only(findings("default_task_budget"), "register-budget",
             marked_line(B.default_task_budget, "# BUG: register-budget"))
    assert "`registers=40` on the default task is not passed on" in f.message
    assert artifact("default_task_budget").metadata.tasks[0]["registers"] == 256
    assert "(256 per thread here)" in f.message


def test_a_library_consumer_budget_under_what_its_code_needs_makes_ptxas_drop_every_setmaxnreg():
    """Tutorial 01's knob try: the cooperative GEMM's consumers at 120 registers need more (remark C7507)."""
    import inspect

    from tlx_kernels import gemm as G

    import workbench
    from workbench.check import check_artifact

    a, b = torch.empty(1000, 776, dtype=torch.bfloat16), torch.empty(776, 1500, dtype=torch.bfloat16)
    mod, kernel = G.MODULES["ws_cooperative"], G.KERNELS["ws_cooperative"]
    args, kw, grid, _ = mod.prepare(a, b, dict(mod.CONFIGS[0], CONSUMER_REGS=120))
    art = workbench.compile(kernel, *args, **kw)
    if "C7507" not in str(art.metadata.extra.get("ptxas", "")):
        pytest.skip("ptxas's report was not kept for this artifact")
    fs = check_artifact(art, kernel, *args, grid=tuple(grid), strict=True, **kw)
    lines = inspect.getsource(mod).splitlines()
    with_line = next(i + 1 for i, t in enumerate(lines) if "registers=CONSUMER_REGS" in t and "async_task" in t)
    f = only(fs, "register-budget", with_line)
    used = art.metadata.registers
    assert used > 120
    assert f"The task at line {with_line} (2 replicas) asked for 120 registers" in f.message
    assert f"ptxas used {used} per thread" in f.message and "C7507" in f.message
    assert f"the default task runs with {used}, not {art.metadata.tasks[0]['registers']}" in f.message


def test_metas_blackwell_gemm_config_its_pruner_rejects_indexes_past_its_tmem_barriers():
    """blackwell_gemm_ws's autotune space holds INTERLEAVE_EPILOGUE=1 with NUM_MMA_GROUPS=1, which its own
    pruner drops ('Interleaved epilogue requires NUM_MMA_GROUPS == 2'): the interleaved epilogue waits on
    tmem_full_bars[1 * NUM_TMEM_BUFFERS + buf] of a 1-barrier allocation. The check finds it without the pruner."""
    from tlx_kernels import meta_tutorials as mt

    from workbench.check import check_artifact

    c = mt.case("blackwell_gemm_ws", config={"INTERLEAVE_EPILOGUE": 1, "NUM_MMA_GROUPS": 1, "NUM_TMEM_BUFFERS": 1})
    fs = check_artifact(c.compile(), c.kernel, *c.args, strict=True, **dict(c.kwargs, config=c.config))
    f = next((f for f in fs if f.rule == "index-out-of-range"), None)
    assert f is not None, [str(g) for g in fs]
    assert "`tmem_full_bars` has 1 mbarriers (indices 0 to 0)" in f.message and "indexes it with 1 here" in f.message
    source = mt.tutorial_dir().joinpath("blackwell_gemm_ws.py").read_text().splitlines()
    inner = [r.line for r in f.related if r.message.startswith("the index is computed here")]
    assert inner and "tmem_full_bars[buf_idx_1]" in source[inner[0] - 1]
