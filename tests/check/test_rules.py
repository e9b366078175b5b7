"""One small TLX ring kernel per rule with a deliberate bug: each gives its finding at the marked line
(rule, severity, line and a key phrase of the message); the correct rings give no finding at all.

The kernels compile for sm_90 on the CPU (about a second each, once per session)."""

from __future__ import annotations

import functools
import inspect

import pytest

torch = pytest.importorskip("torch")

import ring_kernels as R  # noqa: E402
from triton.tools.tensor_descriptor import TensorDescriptor  # noqa: E402

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


def test_shared_memory_over_the_limit_names_the_biggest_allocation():
    findings = ring_findings("too_much_smem", BM=128, BK=128, STAGES=16)
    f = next(f for f in findings if f.rule == "smem-limit")
    assert f.severity == "error"
    assert f.line == marked_line(R.too_much_smem, "# BUG: smem-limit")
    assert "more than the 227 KiB a block can use on sm_90" in f.message
    assert "`bufs`: 16 x 128x128 f16 = 512 KiB" in f.message


@pytest.mark.parametrize("name", ["ring_ok", "ring_flip_ok", "ring_rewait_ok"])
def test_correct_rings_give_no_finding(name):
    assert ring_findings(name) == []


def test_the_correct_mma_ring_gives_no_finding():
    assert mma_findings(early_release=False) == []


def test_findings_serialise_for_the_report():
    f = next(f for f in ring_findings("first_wait_passes"))
    d = f.to_dict()
    assert set(d) == {"rule", "severity", "line", "message", "related", "hint"}
    assert all(set(r) == {"line", "message"} for r in d["related"])
    assert d["related"] and all(isinstance(r["line"], int) for r in d["related"])
