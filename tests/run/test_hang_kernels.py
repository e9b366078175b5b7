"""The hanging rings of hang_kernels.py on a CPU: each compiles plain and as a snapshot build whose records name
its ``# HANG`` wait by its line, and the static checks say what they can: the wrong parity is a finding at its
line; the two rings the data decides are beyond the model (tests/run/test_hang_snapshots_gpu.py shows the snapshot
finding them on a GPU)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import hang_kernels as H  # noqa: E402
from isolation_kernels import marked_line  # noqa: E402

import workbench  # noqa: E402
from workbench.compile.snapshot import snapshot_build, snapshot_sites  # noqa: E402

BLOCK, NUM_BUF, TILES = 1024, 2, 8


def launch_args(kernel, device: str = "cpu") -> tuple[tuple, dict]:
    """The positional arguments and constexprs of a hanging launch of ``kernel`` (grid (2,))."""
    x = torch.randn(2 * TILES * BLOCK, device=device)
    y = torch.empty_like(x)
    if kernel is H.ring_counts_from_memory:
        return (x, y, x.numel(), torch.tensor([TILES, TILES + 1], dtype=torch.int32, device=device)), {
            "BLOCK": BLOCK, "NUM_BUF": NUM_BUF}
    if kernel is H.ring_slots_from_table:
        return (x, y, x.numel(), torch.zeros(TILES, dtype=torch.int32, device=device)), {
            "TILES": TILES, "BLOCK": BLOCK, "NUM_BUF": NUM_BUF}
    return (x, y, x.numel()), {"TILES": TILES, "BLOCK": BLOCK, "NUM_BUF": NUM_BUF}


KERNELS = [H.ring_wrong_parity, H.ring_counts_from_memory, H.ring_slots_from_table]


@pytest.mark.parametrize("kernel", KERNELS, ids=lambda k: k.__name__)
def test_each_hanging_ring_compiles_and_its_snapshot_build_records_its_hang_wait(kernel):
    args, consts = launch_args(kernel)
    with snapshot_build():
        art = workbench.compile(kernel, *args, **consts)
    [hang] = marked_line(kernel, "HANG")
    sites = snapshot_sites(art.stages["ptx"], art.source.filename, art.stages["ttgir"]).sites
    assert hang in {s.line for s in sites if s.kind == "wait"}, [(s.kind, s.line) for s in sites]


def test_the_static_checks_find_the_wrong_parity_and_not_the_rings_the_data_decides():
    found = {}
    for kernel in KERNELS:
        args, consts = launch_args(kernel)
        found[kernel.__name__] = {(f.rule, f.line) for f in workbench.check(kernel, *args, grid=(2,), **consts)
                                  if f.severity == "error"}
    [hang] = marked_line(H.ring_wrong_parity, "HANG")
    assert any(line == hang for _, line in found["ring_wrong_parity"]), found
    assert not found["ring_counts_from_memory"] and not found["ring_slots_from_table"], found
