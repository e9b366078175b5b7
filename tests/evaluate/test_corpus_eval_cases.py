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


CRASHING_CASES = '''
import ctypes
import torch


def inputs(shape, seed, device):
    return (torch.full(shape, float(seed), device=device),)


def segfaults__pkg(x):
    return ctypes.string_at(0)  # reads address 0: SIGSEGV


def fine__pkg(x):
    return x + 1


def imports_the_workbench__pkg(x):
    import workbench  # noqa: F401
    return x


CALLS = []


def second_call_segfaults__pkg(x):  # as a package whose second call launches a kernel it cached
    CALLS.append(1)
    return ctypes.string_at(0) if len(CALLS) > 1 else x
'''


def test_a_fault_the_package_shows_without_the_workbench_is_its_own(tmp_path):
    """corpus_bare: a candidate that ends a plain process the same way is the package's limitation, with the
    Python stack of the fault; one that runs fine there stays the workbench's fault; the plain process never
    imports the workbench (the probe says so when it does)."""
    import corpus_bare

    cases = tmp_path / "cases.py"
    cases.write_text(CRASHING_CASES)
    env = {"PYTHONPATH": str(Path(__file__).resolve().parents[2])}  # the workbench importable: the probe hides it
    row = {"op": "x", "candidate": "segfaults__pkg", "status": "fault", "reasons": ["the evaluate process ended"]}
    bare = corpus_bare.bare_run(cases, "segfaults__pkg", "inputs", [(3,)], "cpu", env)
    assert bare["exit"] == -11 and bare["finished"] == [] and "Segmentation fault" in bare["tail"]
    assert "segfaults__pkg" in bare["tail"]  # faulthandler's stack names the call
    judged = corpus_bare.judged(row, bare)
    assert judged["status"] == "limitation" and judged["workbench_status"] == "fault"
    assert "exit code -11" in judged["reasons"][-1]

    fine = corpus_bare.bare_run(cases, "fine__pkg", "inputs", [(3,), (2, 2)], "cpu", env)
    assert fine["exit"] == 0 and fine["finished"] == ["(3,)", "(2, 2)"]
    assert corpus_bare.judged({**row, "candidate": "fine__pkg"}, fine)["status"] == "fault"

    cached = corpus_bare.bare_run(cases, "second_call_segfaults__pkg", "inputs", [(3,)], "cpu", env)
    assert cached["exit"] == -11 and corpus_bare.judged(row, cached)["status"] == "limitation"

    leaked = corpus_bare.bare_run(cases, "imports_the_workbench__pkg", "inputs", [(3,)], "cpu", env)
    assert leaked["exit"] != 0 and "workbench" in leaked["tail"]
    assert corpus_bare.judged(row, leaked)["status"] == "fault"


def test_a_documented_compile_error_reads_as_a_limitation():
    from workbench.report.corpus import limitation

    flaggems = ("CompileError: /root/.flaggems/code_cache/pointwise_dynamic_x_exp_func_kernel_rank_1_bptr.py:92: "
                "AttributeError(\"'_aggregate_type' object has no attribute 'element_ty'\")")
    assert "block pointer" in limitation(flaggems)
    assert limitation("CompileError: x.py:3: out of shared memory") is None
