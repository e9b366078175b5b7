"""Delayed builds (workbench.compile.delays): the ring kernel of tests/search/search_kernels.py compiled for sm_90
on a CPU with a sleep before every mbarrier wait and arrive and TMA copy: ptxas takes the PTX (the SASS has one
NANOSLEEP per delayed site), each site is named by the user's line, each seed enables its own subset and is a
build (and a cache entry) of its own, and a compile outside the block has no sleep."""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

import torch
from triton.tools.tensor_descriptor import TensorDescriptor

import workbench
from workbench.compile.delays import delayed

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "search"))
from search_kernels import ring_sum  # noqa: E402

BM, BK, K = 64, 64, 512


def _compile(bug: int = 0):
    x = torch.empty(BM, K, dtype=torch.float16)
    out = torch.empty(BM, BK, dtype=torch.float16)
    return workbench.compile(ring_sum, TensorDescriptor(x, [BM, K], [K, 1], [BM, BK]), out, K, BM=BM, BK=BK,
                             STAGES=3, BUG=bug)


def _line(text: str) -> int:
    src, first = inspect.getsourcelines(ring_sum.fn)
    return first + next(i for i, s in enumerate(src) if text in s)


def _sleeps(art) -> int:
    return art.stages["sass"].count("NANOSLEEP")


def test_every_sync_point_of_the_ring_gets_a_sleep_at_its_line():
    plain = _compile()
    assert _sleeps(plain) == 0
    with delayed(seed=1, share=1.0, max_ns=1500) as plan:
        art = _compile()
    plan.read(art.stages["ptx"], art.source.filename, art.stages["ttgir"])
    kinds = {(s.kind, s.line) for s in plan.sites}
    assert ("wait", _line("tlx.barrier_wait(empty[s], p ^ 1)")) in kinds
    assert ("wait", _line("tlx.barrier_wait(full[s], p)")) in kinds
    assert ("arrive", _line("tlx.barrier_expect_bytes(full[s], BM * BK * 2)")) in kinds  # expect-tx is an arrive
    assert ("tma", _line("tlx.async_descriptor_load(")) in kinds
    assert ("arrive", _line("tlx.barrier_arrive(empty[s])  # slot free again")) in kinds
    assert ("after-arrive", _line("tlx.barrier_arrive(empty[s])  # slot free again")) in kinds
    assert all(s.delayed for s in plan.sites)
    # ptxas took every sleep before a site (one may be unrolled into several); one after an arrive that the next
    # site's sleep follows at once may be merged with it
    before = [s for s in plan.sites if s.kind != "after-arrive"]
    assert _sleeps(art) >= len(before) > 0
    assert "nanosleep.u32" in art.stages["ptx"] and art.metadata.num_warps == plain.metadata.num_warps


def test_each_seed_delays_its_own_subset_in_a_build_of_its_own():
    chosen = []
    for seed in (2, 3):
        with delayed(seed=seed, share=0.5) as plan:
            art = _compile()
        plan.read(art.stages["ptx"], art.source.filename, art.stages["ttgir"])
        chosen.append({s.index for s in plan.delayed})
        assert 0 < _sleeps(art)
        assert art.stages["ptx"].count("nanosleep.u32") == len(plan.delayed)
    assert chosen[0] != chosen[1], chosen
    assert _sleeps(_compile()) == 0  # the plain build is still the plain build (not a delayed cache entry)


def test_a_loop_llvm_unrolled_names_each_copy_of_a_wait_by_the_waits_line_not_its_neighbours():
    """Four tiles: LLVM unrolls each task's loop, so there are more wait sites than TTGIR waits, and each copy's
    ``.loc`` is a neighbour's (the consumer's ``with`` line, the loop's last line): each is named by its wait."""
    import importlib

    from workbench.compile.delays import DelayPlan

    K = importlib.import_module("run.isolation_kernels")
    x = torch.empty(2 * 4 * 1024)
    art = workbench.compile(K.ring_ok, x, x, x.numel(), TILES=4, BLOCK=1024, NUM_BUF=2)
    plan = DelayPlan(0, 1000, 0.0).read(art.stages["ptx"], art.source.filename, art.stages["ttgir"])
    src, first = inspect.getsourcelines(K.ring_ok.fn)
    waits = [first + i for i, s in enumerate(src) if "tlx.barrier_wait(" in s]
    sites = [s.line for s in plan.sites if s.kind == "wait"]
    assert len(sites) > len(waits) == 2 and set(sites) == set(waits), (sites, waits)
    assert sites == sorted(sites)  # the producer's copies, then the consumer's


def test_a_sleep_after_an_early_release_sits_between_the_release_and_the_read():
    """The ring that releases its slot before reading it (BUG 3): the SASS sleeps after the consumer's arrive and
    before its shared-memory loads, the window in which the producer's next copy lands (a sleep before the arrive
    only gives the read more time)."""
    with delayed(seed=1, share=1.0) as plan:
        art = _compile(bug=3)
    plan.read(art.stages["ptx"], art.source.filename, art.stages["ttgir"])
    sass = [ln for ln in art.stages["sass"].splitlines() if "/*" in ln]
    release = next(i for i, ln in enumerate(sass) if "SYNCS.ARRIVE" in ln and ".A1T0" in ln)
    read = next(i for i, ln in enumerate(sass) if i > release and "LDS" in ln)
    assert any("NANOSLEEP" in ln for ln in sass[release + 1:read]), sass[release:read + 1]
