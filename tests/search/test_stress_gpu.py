"""workbench.stress on a GPU: the correct ring gives the reference's output in every delayed run; the ring whose
consumer releases its slot before reading it (search_kernels.ring_sum, BUG 3) is judged run by run, and the runs
that differ name their seed and the delays that go with them. Run on the H200 (bench/gpu_session.sh tests)."""

from __future__ import annotations

import pytest
import torch
from search_kernels import ring_sum
from triton.tools.tensor_descriptor import TensorDescriptor

import workbench

pytestmark = pytest.mark.gpu
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

K, BM, BK = 4096, 64, 64


def _stress(bug: int, runs: int):
    x = torch.randn(BM, K, dtype=torch.float16, device="cuda")
    out = torch.empty(BM, BK, dtype=torch.float16, device="cuda")
    desc = TensorDescriptor(x, [BM, K], [K, 1], [BM, BK])
    expected = lambda d, o, k: d.base.float().reshape(BM, K // BK, BK).sum(1).half()  # noqa: E731
    return workbench.stress(ring_sum, desc, out, K, grid=(1,), reference=expected, runs=runs, progress=False,
                            skip_on_error=False, BM=BM, BK=BK, STAGES=3, BUG=bug)


def test_the_correct_ring_passes_every_delayed_run():
    s = _stress(0, 20).info["stress"]
    assert s["ran"] == 20 and s["differing"] == s["hangs"] == s["faults"] == 0, s


def test_the_slot_released_before_its_read_is_judged_run_by_run():
    r = _stress(3, 30)
    s = r.info["stress"]
    print("stress of the write-after-read ring:", s)
    assert s["ran"] == 30, r.table.to_string()
    if s["differing"]:  # the race showed: its seed and its most telling delay are named
        assert s["first_failing_seed"] is not None and s["telling"], s
