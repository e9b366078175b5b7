"""The orchestration model (from TTGIR) and its simulated run, on Meta's warp-specialized GEMM tutorial
from the installed wheel, plus the pieces on their own: the TTGIR reader's region scoping, mbarrier and
named-barrier semantics, and the integer arithmetic."""

from __future__ import annotations

import functools
import inspect

import pytest

pytest.importorskip("torch")

from tlx_kernels import meta_tutorials as mt  # noqa: E402

from workbench.analyse.orchestration import build_model  # noqa: E402
from workbench.analyse.orchestration_arith import evaluate  # noqa: E402
from workbench.analyse.orchestration_sim import simulate  # noqa: E402
from workbench.analyse.orchestration_state import MBarrier, NamedBarrier  # noqa: E402
from workbench.check.values import launch_values  # noqa: E402
from workbench.ir.mlir import Op, element_bytes, memdesc_type, parse_ttgir  # noqa: E402


@functools.cache
def gemm_ws():
    c = mt.case("hopper_gemm_ws")  # BM=128, BN=256, BK=64, NUM_STAGES=3, two consumer replicas
    art = c.compile()
    return art, build_model(art), launch_values(c.kernel, c.args, c.kwargs)


def test_buffer_and_barrier_sets_come_with_resolved_sizes_names_and_lines():
    art, model, _ = gemm_ws()
    bufs = {b.name: b for b in model.buffers}
    assert (bufs["a"].count, bufs["a"].shape, bufs["a"].dtype) == (6, [64, 64], "f16")
    assert (bufs["b"].count, bufs["b"].shape, bufs["b"].bytes) == (3, [64, 256], 3 * 64 * 256 * 2)
    bars = {b.name: (b.count, b.arrive_count) for b in model.barriers}
    assert bars == {"bars_empty_a": (6, 1), "bars_empty_b": (3, 2), "bars_full_a": (6, 1), "bars_full_b": (3, 1)}
    for s in [*model.buffers, *model.barriers]:
        assert f"{s.name} = tlx." in model.line_text(s.line)


def test_tasks_replicas_warps_and_what_each_does():
    _, model, _ = gemm_ws()
    producer, c0, c1 = model.tasks
    assert (producer.name, producer.num_warps) == ("the default task", 4)
    assert (c0.replica, c1.replica, c0.num_warps, c0.partition, c1.partition) == (0, 1, 4, 0, 1)
    assert "async_task(num_warps=4, replicate=2)" in model.line_text(int(c0.name.split()[-3]))
    kinds = [o.kind for o in producer.ops]
    assert kinds.count("wait") == 3 and kinds.count("expect") == 3 and kinds.count("tma_load") == 3
    names = {b.id: b.name for b in model.barriers}
    assert {names[o.barrier] for o in c0.ops if o.kind == "wait"} == {"bars_full_a", "bars_full_b"}
    assert {names[o.barrier] for o in c0.ops if o.kind == "arrive"} == {"bars_empty_a", "bars_empty_b"}
    for o in (*producer.ops, *c0.ops):
        call = {"wait": "barrier_wait", "expect": "barrier_expect_bytes", "tma_load": "async_descriptor_load",
                "arrive": "barrier_arrive"}.get(o.kind)
        if call:
            assert call in o.text, (o.kind, o.line, o.text)
    copies = [o for o in producer.ops if o.kind == "tma_load"]
    expects = [o for o in producer.ops if o.kind == "expect"]
    assert [o.bytes for o in copies] == [o.bytes for o in expects] == [8192, 32768, 8192]


def test_the_model_serialises():
    import json

    _, model, _ = gemm_ws()
    d = json.loads(json.dumps(model.to_dict()))
    assert [t["name"] for t in d["tasks"]][0] == "the default task"
    assert {b["name"]: b["bytes"] for b in d["buffers"]} == {"a": 6 * 64 * 64 * 2, "b": 3 * 64 * 256 * 2}
    assert all(o["line"] for t in d["tasks"] for o in t["ops"])


def test_the_run_follows_each_phase_sequence_and_the_bytes_of_every_phase():
    _, model, values = gemm_ws()
    trace = simulate(model, values)
    assert trace.finished == [0, 1, 2] and not trace.blocked and not trace.races
    full_b = next(b.id for b in model.barriers if b.name == "bars_full_b")
    empty_b = next(b.id for b in model.barriers if b.name == "bars_empty_b")
    consumer = [w.parity for w in trace.waits if w.task == 1 and w.barrier == (full_b, 0)]
    producer = [w.parity for w in trace.waits if w.task == 0 and w.barrier == (empty_b, 0)]
    k_steps = values["K"] // 64  # 8 steps over a 3-slot ring: slot 0 is used at steps 0, 3, 6
    assert consumer == [0, 1, 0][: len(range(0, k_steps, 3))]
    assert producer == [1, 0, 1][: len(range(0, k_steps, 3))]
    for bar in trace.barriers.values():
        assert not bar.byte_mismatches
        for phase in bar.phases:
            assert phase.expected == phase.copied
    assert trace.barriers[(empty_b, 0)].per_call == {1: 1, 2: 1}  # both replicas release slot 0 once per use
    wait_b = next(o.line for o in model.tasks[1].ops if o.kind == "wait" and o.barrier == full_b)
    assert trace.sequence(1, wait_b) == [(0, 0), (1, 0), (2, 0), (0, 1), (1, 1), (2, 1), (0, 0), (1, 0)]


_SIBLINGS = """\
module {
  tt.func public @k(%n: i32) {
    %c0 = arith.constant 0 : i32
    %bars = ttg.local_alloc : () -> SET
    %b0 = ttg.memdesc_index %bars[%c0] : SET -> ONE
    ttng.init_barrier %b0, 1 : ONE
    %cond = arith.cmpi eq, %n, %c0 : i32
    scf.if %cond {
      %5 = ttg.memdesc_index %bars[%c0] : SET -> ONE
      ttng.arrive_barrier %5, 1 : ONE
    } else {
      %5 = arith.addi %n, %c0 : i32
      %6 = arith.muli %5, %5 : i32
    }
    tt.return
  }
}
""".replace("SET", "!ttg.memdesc<2x1xi64, #s, #smem, mutable>").replace("ONE", "!ttg.memdesc<1xi64, #s, #smem>")


def test_a_name_reused_in_a_sibling_region_means_its_own_definition():
    from workbench.analyse.orchestration import _walk_task, classify

    module = parse_ttgir(_SIBLINGS)
    func = next(op for op in module.regions[0].ops[0].regions[0].ops if op.name == "tt.func")
    scf_if = next(op for op in func.regions[0].ops if op.name == "scf.if")
    assert [r.label for r in scf_if.regions] == ["", "else"]
    kinds = [(op.name, getattr(classify(op, scope), "kind", None))
             for op, _, scope in _walk_task(func.regions[0], {"%bars": ("bar", 0)}, False)]
    assert ("ttng.arrive_barrier", "arrive") in kinds
    assert ("arith.muli", None) in kinds  # %5 is an i32 there, not the barrier view of the other branch


def test_mbarrier_phases_parity_and_bytes():
    bar = MBarrier(0, 0, arrive_count=1)
    assert bar.passes(1) and not bar.passes(0)  # a fresh barrier: phase 1 passes at once
    bar.expect(8192, (0, 10), {0: 1})
    assert bar.completed == 0 and bar.tx == 8192
    bar.copy(8192, (0, 11), {0: 1, 1000: 1})
    assert bar.completed == 1 and bar.passes(0) and not bar.passes(1) and bar.vc_done == {0: 1, 1000: 1}
    bar.expect(8192, (0, 10), {0: 2})
    bar.copy(16384, (0, 11), {0: 2})  # more bytes than expected: completes, but the mismatch is kept
    assert bar.completed == 2 and bar.byte_mismatches[0].expected == 8192


def test_the_phases_a_waiter_knows_completed_are_those_whose_arrivals_and_copies_it_is_ordered_after():
    bar = MBarrier(0, 0, arrive_count=1)
    assert bar.known({}) == 0
    bar.expect(8192, (0, 10), {0: 1})
    bar.copy(8192, (0, 11), {0: 1, 1000: 1})  # phase 0: the producer's expect (clock 1) and its copy
    assert bar.phases[0].vc == {0: 1, 1000: 1}
    assert bar.known({0: 5}) == 0  # ordered after the expect but not after the copy landing
    assert bar.known({0: 1, 1000: 1, 2: 3}) == 1  # e.g. a consumer that waited on phase 0, or one told so
    bar.expect(8192, (0, 10), {0: 2})
    bar.copy(8192, (0, 11), {0: 2, 1000: 2})
    assert bar.known({0: 2, 1000: 2}) == 2 and bar.known({0: 9, 1000: 1}) == 1


def test_named_barrier_generations():
    nb = NamedBarrier(9)
    assert nb.arrive(128, 256, {1: 1}) == 0 and nb.generation == 0
    assert nb.arrive(128, 256, {2: 1}) == 0 and nb.generation == 1 and nb.vc_done == {1: 1, 2: 1}


@pytest.mark.parametrize("text,args,value", [
    ("arith.divsi %a, %b : i32", (-7, 2), -3), ("arith.remsi %a, %b : i32", (-7, 2), -1),
    ("arith.xori %a, %b : i32", (1, 1), 0), ("arith.cmpi slt, %a, %b : i32", (1, 2), 1),
    ("arith.select %a, %b, %b : i32", (0, 5), 5), ("arith.divsi %a, %b : i32", (1, 0), None),
])
def test_integer_arithmetic(text, args, value):
    name, body = text.split(" ", 1)
    env = dict(zip(("%a", "%b"), args))
    assert evaluate(Op(name, ["%r"], body, 1), env.get) == value


def test_constants_and_types():
    assert evaluate(Op("arith.constant", ["%t"], "true", 1), {}.get) == 1
    assert evaluate(Op("arith.constant", ["%f"], "1.000000e+00 : f32", 1), {}.get) is None
    assert memdesc_type("!ttg.memdesc<6x64x64xf16, #shared, #smem, mutable>")[:2] == ([6, 64, 64], "f16")
    assert (element_bytes("bf16"), element_bytes("f8E4M3FN"), element_bytes("i64")) == (2, 1, 8)


def test_module_docstring_says_where_the_model_comes_from():
    import workbench.analyse.orchestration as orch

    doc = inspect.getdoc(orch)
    assert "TTGIR" in doc and "source" in doc and "launch arguments" in doc
