"""The corpus evaluation's cases (``testbed/corpus_eval_cases.py``, run on the GPU by ``bench/corpus_evaluate.py``)
hold together before any GPU time is spent on them: every op has candidates, its reference and input maker exist,
the references compute on the CPU shapes, and the 20-or-more ops span the three packages."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "testbed"))

import corpus_eval_cases as C  # noqa: E402


def test_every_op_has_candidates_a_reference_and_inputs():
    assert len(C.OPS) >= 20
    packages = set()
    for op, (ref, make, _, gpu_shapes) in C.OPS.items():
        names = C.candidates(op)
        assert names, op
        packages |= {n.split("__", 1)[1].split("_")[0] for n in names}
        assert callable(getattr(C, ref)) and callable(getattr(C, make)), op
        assert gpu_shapes, op
    assert packages == {"liger", "flag", "fla"}


@pytest.mark.parametrize("op", [op for op, v in C.OPS.items() if v[2]])
def test_references_compute_on_the_cpu_shapes(op):
    ref, make, cpu_shapes, _ = C.OPS[op]
    for shape in cpu_shapes:
        out = getattr(C, ref)(*getattr(C, make)(shape, 0, "cpu"))
        outs = out if isinstance(out, tuple) else (out,)
        assert all(isinstance(t, torch.Tensor) and torch.isfinite(t.float()).all() for t in outs), op
        again = getattr(C, ref)(*getattr(C, make)(shape, 1, "cpu"))  # another seed, other inputs
        assert not torch.equal(outs[0], (again if isinstance(again, tuple) else (again,))[0]), op
