"""One small TLX ring kernel per rule with a deliberate bug: each gives its finding at the marked line
(rule, severity, line and a key phrase of the message); the correct rings give no finding at all. A
ping-pong ring: consumer 1's phase-1 first waits are correct when the named-barrier hand-over orders
them after consumer 0's waits, and found when the hand-over comes before those waits.

The kernels compile for sm_90 on the CPU (about a second each, once per session)."""

from __future__ import annotations

import functools
import inspect
import re

import pytest

torch = pytest.importorskip("torch")

import handover_kernels as H  # noqa: E402
import ring_kernels as R  # noqa: E402
from triton.tools.tensor_descriptor import TensorDescriptor  # noqa: E402

import workbench  # noqa: E402
from workbench.check import check  # noqa: E402

BM, BK, K, STAGES = 64, 64, 512, 3  # 8 K steps through a 3-slot ring: the ring wraps twice


def marked_line(kernel, marker: str) -> int:
    """The file line of ``kernel`` that carries ``# BUG: <marker>`` (or ends with ``marker``)."""
    lines, first = inspect.getsourcelines(kernel.fn)
    hits = [first + i for i, text in enumerate(lines) if text.rstrip().endswith(marker)]
    assert len(hits) == 1, f"{kernel.fn.__name__}: {len(hits)} lines end with {marker!r}"
    return hits[0]


@functools.cache
def ring_findings(name: str, **constexprs):
    params = dict(BM=BM, BK=BK, STAGES=STAGES) | constexprs
    bm, bk = params["BM"], params["BK"]
    x = torch.empty(bm, K, dtype=torch.float16)
    out = torch.empty(2 * bm, bk, dtype=torch.float16)
    desc = TensorDescriptor(x, [bm, K], [K, 1], [bm, bk])
    return check(getattr(R, name), desc, out, K, strict=True, **params)


@functools.cache
def mma_findings(early_release: bool):
    a, b = torch.empty(64, K, dtype=torch.float16), torch.empty(K, 64, dtype=torch.float16)
    c = torch.empty(64, 64, dtype=torch.float16)
    descs = (TensorDescriptor(a, [64, K], [K, 1], [64, 64]), TensorDescriptor(b, [K, 64], [64, 1], [64, 64]),
             TensorDescriptor(c, [64, 64], [64, 1], [64, 64]))
    return check(R.mma_ring, *descs, K, BM=64, BN=64, BK=64, STAGES=STAGES, EARLY_RELEASE=early_release,
                 strict=True)


# (kernel, rule, severity, a phrase the message must hold)
BUGS = [
    ("wait_never_completes", "wait-never-completes", "error", "no task arrives on it"),
    ("first_wait_passes", "first-wait-passes", "error", "a fresh barrier reports as already complete"),
    ("phase_never_flips", "phase-flip", "error", "the phase does not flip"),
    ("too_few_arrivals", "arrive-count", "error", "arrive_count=2, but each round 1 arrival(s)"),
    ("too_many_arrivals", "arrive-count", "error", "arrive_count=1, but each round 2 arrival(s)"),
    ("wrong_expect_bytes", "expect-bytes", "error", "announces 16384 bytes"),
    ("producer_waits_phase0", "hang", "error", "can wait here forever"),
    ("reads_unfilled_slot", "read-before-write", "error", "nothing orders this read after"),
    ("reads_unwritten_buffer", "unwritten-buffer", "error", "no task ever writes it"),
    ("narrowing_store", "narrowing-store", "warning", "fp32 value is stored here into f16"),
]


@pytest.mark.parametrize("name,rule,severity,phrase", BUGS, ids=[b[0] for b in BUGS])
def test_each_bug_is_found_at_its_line(name, rule, severity, phrase):
    findings = ring_findings(name)
    line = marked_line(getattr(R, name), f"# BUG: {rule}")
    hits = [f for f in findings if f.rule == rule]
    assert hits, f"{name}: no {rule} finding in {[str(f) for f in findings]}"
    f = next((f for f in hits if f.line == line), None)
    assert f is not None, f"{name}: {rule} at {[h.line for h in hits]}, expected line {line}"
    assert f.severity == severity
    assert phrase in f.message, f.message
    assert f.hint, "every finding says what idiom fixes it"
    # the bug is the only thing wrong: no error from another rule
    assert {g.rule for g in findings if g.severity == "error"} <= {rule}, [str(g) for g in findings]


def test_bytes_announced_on_another_barrier_than_the_copy_of_the_same_iteration():
    """Each phase gets its bytes in the end (the byte counts agree), but the copy lands on `full[s]` before its
    expect, which went to the next slot's barrier: found at that expect, with the copy's line; no hang besides."""
    kernel = R.expects_on_the_next_slot
    fs = ring_findings("expects_on_the_next_slot")
    [f] = [f for f in fs if f.severity == "error"]
    expect = marked_line(kernel, "# the next slot's barrier")
    copy = marked_line(kernel, "tlx.async_descriptor_load(x_desc, bufs[s], [0, k * BK], full[s])")
    assert (f.rule, f.line) == ("expect-bytes", expect), str(f)
    assert f"announces bytes on `full[1]` here, but its copy at line {copy} in the same iteration (iteration 1 of" \
        in f.message and "completes on `full[0]`" in f.message, f.message
    assert [r.line for r in f.related] == [copy]


def test_a_hang_on_a_barrier_whose_copy_landed_unannounced_points_at_the_copy():
    """The same early copy with the expect outside the loop (no iteration to pair it with): a hang, whose hint
    names the copy."""
    fs = ring_findings("expects_once_before_the_loop")
    [f] = [f for f in fs if f.severity == "error"]
    copy = marked_line(R.expects_once_before_the_loop, "bufs[s], [0, k * BK], full[s])")
    assert f.rule == "hang" and f.hint.startswith(f"the copy at line {copy} completed on `full["), str(f)
    other = next(f.hint for f in ring_findings("producer_waits_phase0") if f.rule == "hang")
    assert "must use phase 1" in other, other  # a hang with its own cause keeps its own hint


def test_a_slot_released_before_its_mma_finished_is_overwritten_under_the_reader():
    findings = mma_findings(early_release=True)
    line = marked_line(R.mma_ring, "# BUG: slot-reuse")
    f = next((f for f in findings if f.rule == "slot-reuse" and f.line == line), None)
    assert f is not None, [str(g) for g in findings]
    assert f.severity == "error" and "may still read it" in f.message
    release = marked_line(R.mma_ring, "tlx.barrier_arrive(empty[s])  # released before the MMA is done")
    read = marked_line(R.mma_ring, "acc = tlx.async_dot(a[s], b[s], acc)")
    assert [r.line for r in f.related] == [release, read]
    assert {g.rule for g in findings if g.severity == "error"} == {"slot-reuse"}


def test_one_allocation_over_the_limit_stops_the_compile_at_its_line(tmp_path, monkeypatch):
    """Larger alone than a block may use: the compile stops after TTGIR (workbench.compile.resource_gate). (A
    kernel both caches already hold compiles no more: the smem-limit finding then says it.)"""
    from workbench.compile import cache

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    monkeypatch.setenv("TLX_WORKBENCH_CACHE_DIR", str(tmp_path / "wb"))
    cache.clear()
    with pytest.raises(workbench.CompileError) as err:
        ring_findings("too_much_smem", BM=128, BK=128, STAGES=16)
    assert err.value.lineno == marked_line(R.too_much_smem, "# BUG: smem-limit")
    assert "alone needs 512 KiB" in err.value.message and "227 KiB a block can use on sm_90" in err.value.message


def test_shared_memory_over_the_limit_names_the_biggest_allocation():
    """Each allocation fits, together they do not: the smem-limit finding lists them biggest first."""
    a, b = torch.empty(128, K, dtype=torch.float16), torch.empty(K, 128, dtype=torch.float16)
    c = torch.empty(128, 128, dtype=torch.float16)
    descs = (TensorDescriptor(a, [128, K], [K, 1], [128, 64]), TensorDescriptor(b, [K, 128], [128, 1], [64, 128]),
             TensorDescriptor(c, [128, 128], [128, 1], [128, 128]))
    findings = check(R.mma_ring, *descs, K, BM=128, BN=128, BK=64, STAGES=8, EARLY_RELEASE=False, strict=True)
    f = next(f for f in findings if f.rule == "smem-limit")
    assert f.severity == "error" and f.line is not None
    assert "more than the 227 KiB a block can use on sm_90" in f.message
    assert "Biggest first: `a`: 8 x 128x64 f16 = 128 KiB; `b`: 8 x 64x128 f16 = 128 KiB" in f.message


@pytest.mark.parametrize("name", ["ring_ok", "ring_flip_ok", "ring_rewait_ok"])
def test_correct_rings_give_no_finding(name):
    assert ring_findings(name) == []


def test_the_correct_mma_ring_gives_no_finding():
    assert mma_findings(early_release=False) == []


@pytest.mark.parametrize("plain_loop", [True, False])
def test_an_async_dot_the_compiler_waits_for_at_issue_is_found_only_where_it_happens(plain_loop):
    """A plain ``range`` loop: Triton puts a wgmma.wait_group 0 right after the dot, and the kernel's
    async_dot_wait(1) keeps nothing in flight (the finding at the dot, the kernel's wait related); the same ring in
    a ``tl.range(..., num_stages=0)`` loop keeps the dot asynchronous and gives no finding."""
    a, b = torch.empty(64, K, dtype=torch.float16), torch.empty(K, 128, dtype=torch.float16)
    c = torch.empty(64, 128, dtype=torch.float16)
    descs = (TensorDescriptor(a, [64, K], [K, 1], [64, 64]), TensorDescriptor(b, [K, 128], [128, 1], [64, 128]),
             TensorDescriptor(c, [64, 128], [128, 1], [64, 128]))
    art = workbench.compile(R.mma_in_flight, *descs, K, BM=64, BN=128, BK=64, STAGES=STAGES, PLAIN_LOOP=plain_loop)
    findings = check(R.mma_in_flight, *descs, K, BM=64, BN=128, BK=64, STAGES=STAGES, PLAIN_LOOP=plain_loop,
                     strict=True)
    waits = [int(n) for n in re.findall(r"wgmma\.wait_group\.sync\.aligned (\d+)", art.stages["ptx"])]
    if not plain_loop:
        assert findings == [] and waits.count(0) == 1  # the final wait only
        return
    assert waits.count(0) == 2  # the compiler's, and the final one
    [f] = findings
    assert (f.rule, f.severity, f.line) == ("dot-waited-at-issue", "warning",
                                             marked_line(R.mma_in_flight, "# BUG: dot-waited-at-issue"))
    assert [r.line for r in f.related] == [marked_line(R.mma_in_flight, "# the wait the kernel meant")]
    assert "keeps nothing in flight" in f.message and "num_stages=0" in f.hint


@functools.cache
def pingpong_run(early_handover: bool):
    """The findings and the simulated trace of the ping-pong ring (4 tiles of 8 steps through 3 slots)."""
    from workbench import compile as wb_compile
    from workbench.analyse.orchestration import build_model
    from workbench.analyse.orchestration_sim import simulate
    from workbench.check import check_artifact
    from workbench.check.values import launch_values

    x, out = torch.empty(BM, K, dtype=torch.float16), torch.empty(2 * BM, BK, dtype=torch.float16)
    args = (TensorDescriptor(x, [BM, K], [K, 1], [BM, BK]), out, K)
    kw = dict(BM=BM, BK=BK, STAGES=STAGES, TILES=4, EARLY_HANDOVER=early_handover)
    art = wb_compile(H.pingpong_ring, *args, target="sm_90", **kw)
    trace = simulate(build_model(art), launch_values(H.pingpong_ring, args, kw), grid=(132, 1, 1))
    return check_artifact(art, H.pingpong_ring, *args, strict=True, **kw), trace


def _consumer1_first_waits(trace) -> dict[int, tuple[int, int]]:
    """Slot -> (parity, phases known complete) of consumer 1's (task 2's) first wait on each full[slot]."""
    return {w.barrier[1]: (w.parity, w.known) for w in trace.waits
            if w.task == 2 and w.ordinal == 0 and w.line == marked_line(H.pingpong_ring, "# BUG: first-wait-passes")}


def test_a_phase_1_first_wait_ordered_after_phase_0_by_a_named_barrier_is_no_finding():
    findings, trace = pingpong_run(early_handover=False)
    assert findings == [], [str(f) for f in findings]
    assert not trace.blocked and not trace.lost and trace.finished == [0, 1, 2]
    # tile 1 starts at ring position 8: slot 2 at phase 2 (parity 0), slots 0 and 1 at phase 3 (parity 1);
    # consumer 0 waited on the phases before those, then handed the turn over (named barrier 10): consumer 1
    # knows they completed, so each of its first waits is for the phase it needs
    assert _consumer1_first_waits(trace) == {2: (0, 2), 0: (1, 3), 1: (1, 3)}


def test_a_phase_1_first_wait_the_hand_over_does_not_order_is_still_found():
    findings, trace = pingpong_run(early_handover=True)
    line = marked_line(H.pingpong_ring, "# BUG: first-wait-passes")
    f = next((f for f in findings if f.rule == "first-wait-passes"), None)
    assert f is not None and f.line == line and f.severity == "error", [str(g) for g in findings]
    assert "`full[0]` uses phase 1" in f.message and "(replica 1)" in f.message
    # the turn is handed over before consumer 0's waits: consumer 1 knows no phase of full[0] completed
    assert _consumer1_first_waits(trace)[0] == (1, 0)


def test_findings_serialise_for_the_report():
    f = next(f for f in ring_findings("first_wait_passes"))
    d = f.to_dict()
    assert set(d) == {"rule", "severity", "line", "message", "related", "hint"}
    assert all(set(r) == {"line", "message"} for r in d["related"])
    assert d["related"] and all(isinstance(r["line"], int) for r in d["related"])


def test_a_kernel_served_from_tritons_cache_under_another_files_name_keeps_its_finding_lines(tmp_path, monkeypatch):
    """Triton's cache keys a kernel by its text and first line, not its file: a copy of ring_kernels.py (same
    lines) is served the IR compiled from ring_kernels.py, whose locations name that file; the copy's findings
    are still at its own lines."""
    import importlib.util

    from workbench.compile import cache

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    monkeypatch.setenv("TLX_WORKBENCH_CACHE_DIR", str(tmp_path / "wb"))
    cache.clear(memory=True)
    x = torch.empty(BM, K, dtype=torch.float16)
    out = torch.empty(2 * BM, BK, dtype=torch.float16)
    desc = TensorDescriptor(x, [BM, K], [K, 1], [BM, BK])
    args = (desc, out, K)
    params = dict(BM=BM, BK=BK, STAGES=STAGES, strict=True)
    first = check(R.too_few_arrivals, *args, **params)  # fills Triton's cache from ring_kernels.py
    copy = tmp_path / "ring_copy.py"
    copy.write_text(open(R.__file__).read())
    spec = importlib.util.spec_from_file_location("ring_copy", copy)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    again = check(mod.too_few_arrivals, *args, **params)
    want = marked_line(R.too_few_arrivals, "# BUG: arrive-count")
    assert [f.line for f in first if f.rule == "arrive-count"] == [want]
    assert [f.line for f in again if f.rule == "arrive-count"] == [want]


def test_roles_written_without_async_tasks_are_said_to_be_no_roles():
    """``tlx.async_task`` with no ``tlx.async_tasks()`` around it compiles to one warp-uniform body: the checks say
    so at the first role's line (and, run in turn, the ring's producer stalls: the run shows that too)."""
    findings = ring_findings("roles_without_async_tasks")
    line = marked_line(R.roles_without_async_tasks, "# BUG: task-outside-tasks")
    f = next((f for f in findings if f.rule == "task-outside-tasks"), None)
    assert f is not None and f.line == line and f.severity == "warning", [str(g) for g in findings]
    assert "not warp-specialized" in f.message and "async_tasks()" in f.hint
    assert not [g for g in ring_findings("ring_ok") if g.rule == "task-outside-tasks"]


def test_a_one_way_named_barrier_handover_is_said_to_run_ahead():
    """A task that only arrives at a named barrier fills generations alone (it counts threads, not tasks): the
    hang is found at the waiter's line, with the arriving task named and a two-way hand-off as the fix."""
    x = torch.empty(BM, K, dtype=torch.float16)
    out = torch.empty(2 * BM, BK, dtype=torch.float16)
    desc = TensorDescriptor(x, [BM, K], [K, 1], [BM, BK])
    findings = check(H.one_way_handover, desc, out, K, BM=BM, BK=BK, STAGES=STAGES, strict=True)
    [f] = [f for f in findings if f.rule == "hang"]
    assert f.line == marked_line(H.one_way_handover, "# BUG: hang")
    assert "completed alone: it arrived 2 times in one generation" in f.message and "replica 1" in f.message
    assert "both ways" in f.hint
