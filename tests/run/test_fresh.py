"""--check that cannot be fooled, on the CPU: NaN poisoning, fresh inputs, stated tolerances, and the
re-run of a cell's launches (plain Triton kernels in Triton's interpreter, captured by ``Capture``)."""

from __future__ import annotations

import math

import pytest
import torch
import triton
import triton.language as tl
from sample_kernels import vector_add

from workbench.run.capture import Capture
from workbench.run.device import Device
from workbench.run.fresh import combine, fresh_checks
from workbench.run.launch_record import poison_, refill_
from workbench.run.verify import evaluate, parse_check

NO_GPU = Device(False, "none", None, None, "test")


@triton.jit
def nothing_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.load(x_ptr + offs, mask=offs < n)


@triton.jit
def accumulate_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(out_ptr + offs, mask=m) + tl.load(x_ptr + offs, mask=m), mask=m)


def run_cell(kernel, ns, *names):
    with Capture(device=NO_GPU, auto_interpret=True) as cap:
        kernel[(triton.cdiv(ns["n"], 128),)](*(ns[k] for k in names), ns["n"], BLOCK=128)
    return cap


def cell_ns(n=300):
    g = torch.Generator().manual_seed(0)
    return {"torch": torch, "n": n, "x": torch.randn(n, generator=g), "y": torch.randn(n, generator=g) * 5 + 3,
            "out": torch.empty(n)}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16, torch.float64])
def test_poison_fills_floats_with_nan(dtype):
    t = torch.ones(10, dtype=dtype)
    assert poison_(t[2:8]) and torch.isnan(t[2:8]).all() and (t[:2] == 1).all() and (t[8:] == 1).all()


def test_poison_integers_and_bools():
    t = torch.zeros(5, dtype=torch.int32)
    assert poison_(t) and (t == torch.iinfo(torch.int32).min).all()
    b = torch.zeros(5, dtype=torch.bool)
    assert not poison_(b) and not b.any()  # left alone, and said so


def test_refill_keeps_mean_spread_and_sign():
    g = torch.Generator().manual_seed(1)
    t = torch.randn(20000) * 3 + 10
    old = t.clone()
    refill_(t, g)
    assert not torch.equal(t, old)
    assert abs(float(t.mean()) - 10) < 0.2 and abs(float(t.std()) - 3) < 0.2
    pos = torch.rand(1000) + 0.5
    refill_(pos, g)
    assert float(pos.min()) >= 0
    h = torch.zeros(64, dtype=torch.bfloat16)  # constant data: spread 1 around it
    refill_(h, g)
    assert h.dtype == torch.bfloat16 and float(h.float().std()) > 0.5


def test_the_rule_is_stated_with_the_verdict():
    d = evaluate(parse_check("out: x + y"), {"out": torch.ones(3), "x": torch.ones(3), "y": torch.zeros(3)})
    assert d["status"] == "passed" and "float32 ulps" in d["message"] and d["rule"] == d["tolerance"]
    assert d["error"]["reference"] == "float64"  # x + y evaluated again on upcast inputs
    given = evaluate(parse_check("out: x + y"), {"out": torch.ones(3), "x": torch.ones(3), "y": torch.zeros(3)},
                     atol=1e-2, rtol=1e-2)
    assert "the given atol/rtol" in given["message"] and given["atol"] == 1e-2
    exact = evaluate(parse_check("out: x"), {"out": torch.arange(3), "x": torch.arange(3)})
    assert exact["status"] == "passed" and "exact (int64)" in exact["message"]


def test_a_correct_kernel_passes_on_fresh_inputs_and_the_notebook_is_restored():
    ns = cell_ns()
    cap = run_cell(vector_add, ns, "x", "y", "out")
    before = {k: ns[k].clone() for k in ("x", "y", "out")}
    specs = [parse_check("out: x + y")]
    [f] = fresh_checks(specs, ns, cap.sequence, seed=7)
    assert f["status"] == "passed" and f["run"] == "fresh" and f["seed"] == 7
    assert "fresh inputs (x, y; seed 7)" in f["message"] and "NaN-poisoned outputs (out)" in f["message"]
    for k, v in before.items():
        assert torch.equal(ns[k], v), k  # inputs and outputs as the cell left them


def test_a_stale_output_fails_on_fresh_inputs():
    ns = cell_ns()
    ns["out"] = ns["x"] + ns["y"]  # the right answer is already there; the kernel writes nothing
    cap = run_cell(nothing_kernel, ns, "x", "y", "out")
    specs = [parse_check("out: x + y")]
    as_run = evaluate(specs[0], ns)
    assert as_run["status"] == "passed"  # fooled
    [f] = fresh_checks(specs, ns, cap.sequence, seed=3)
    assert f["status"] == "failed" and f["mismatched"] == ns["n"] and "got nan" in f["message"]
    c = combine(as_run, f)
    assert c["status"] == "failed" and c["message"].startswith("as the cell ran: ") and c["fresh"]["seed"] == 3
    assert torch.equal(ns["out"], ns["x"] + ns["y"])


def test_what_is_not_re_run_says_why():
    ns = cell_ns()
    cap = run_cell(vector_add, ns, "x", "y", "out")
    ns["res"] = ns["out"] * 1.0  # computed from the output in the cell: not an argument of the launch
    specs = [parse_check("res: x + y"), parse_check("torch.allclose(out, x + y)"), parse_check("out: x + y")]
    res, boolean, ok = fresh_checks(specs, ns, cap.sequence)
    assert res["status"] == "skipped" and "not an argument of a launch" in res["message"]
    assert boolean is None and ok["status"] == "passed"
    assert fresh_checks(specs, ns, []) == [None, None, None]
    too_many = fresh_checks(specs[2:], ns, cap.sequence * 3, max_replays=2)
    assert too_many[0]["status"] == "skipped" and "more than 2 launches" in too_many[0]["message"]


def test_a_kernel_that_reads_its_output_fails_against_poison():
    """The documented limit (use --no-fresh): accumulating into a NaN output gives NaN."""
    ns = cell_ns()
    ns["out"] = torch.zeros(ns["n"])
    cap = run_cell(accumulate_kernel, ns, "x", "out")
    [f] = fresh_checks([parse_check("out: x")], ns, cap.sequence)
    assert f["status"] == "failed" and math.isnan(float(ns["out"].sum())) is False


def test_a_failing_replay_is_an_error_and_restores():
    ns = cell_ns()
    cap = run_cell(vector_add, ns, "x", "y", "out")
    x0 = ns["x"].clone()

    def boom():
        raise RuntimeError("worker gone")

    cap.sequence[0].again = boom
    [f] = fresh_checks([parse_check("out: x + y")], ns, cap.sequence)
    assert f["status"] == "error" and "worker gone" in f["message"] and torch.equal(ns["x"], x0)
