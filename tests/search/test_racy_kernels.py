"""The racy set (racy_kernels.py) on a CPU: every kernel, racy and correct, compiles for sm_90, and so does a delayed
build of each (what ``--stress`` runs), its sleeps at the synchronisation points the bug is about."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import racy_kernels as R  # noqa: E402

import workbench  # noqa: E402
from workbench.compile.delays import delayed  # noqa: E402


@pytest.mark.parametrize("case", R.cases(True) + R.cases(False) + R.unshown(True) + R.unshown(False),
                         ids=lambda c: c.name)
def test_each_kernel_of_the_racy_set_compiles_plain_and_delayed(case):
    args = case.make("cpu")
    plain = workbench.compile(case.kernel, *args, **case.constexprs)
    with delayed(seed=7, share=1.0) as plan:
        art = workbench.compile(case.kernel, *args, **case.constexprs)
    plan.read(art.stages["ptx"], art.source.filename, art.stages["ttgir"])
    assert "sass" in art.stages and art.key != plain.key
    kinds = {s.kind for s in plan.sites}
    wanted = {"named-barrier"} if case.kernel is R.handoff else {"tma"}
    assert wanted <= kinds and art.stages["sass"].count("NANOSLEEP") >= len(plan.sites) > 0, kinds


def test_six_racy_kernels_and_one_correct_one_per_kernel():
    racy, correct = R.cases(True), R.cases(False)
    assert len(racy) == 6 and len({c.name for c in racy}) == 6
    assert [c.kernel.__name__ for c in correct] == ["ring_sum", "mma_pipe", "handoff", "store_reuse"]
    assert not {c.name for c in R.unshown(True)} & {c.name for c in racy}  # stressed on a GPU: the six only
