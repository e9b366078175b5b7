"""The grouped GEMMs' tile schedule and the plain-Triton grouped GEMM, run by Triton's CPU interpreter
(``workbench.run.interpreter``; the TLX kernel needs a GPU: ``test_moe_gpu.py``).

Cases: ragged groups (counts no multiple of the tile), empty groups first, in the middle and last, one group, all
groups empty, tokens past the last group; the forward, ``dx`` and ``dw`` against a loop of ``torch.matmul`` in
fp32, into NaN-poisoned outputs. Tolerances: fp16 ``fp32_tolerance`` (1e-3: rounding the output to fp16, fp32
summation order); bf16 8e-3: the interpreter converts fp32 to bf16 by truncation, not rounding (measured here:
about half of the elements come out one bf16 ulp, 2^-7 relative, below the rounded value), so one ulp of the
largest output plus summation noise.
"""

from __future__ import annotations

import itertools

import pytest

torch = pytest.importorskip("torch")

from tlx_kernels.accuracy import rel_err  # noqa: E402
from tlx_kernels.gemm.common import fp32_tolerance  # noqa: E402
from tlx_kernels.moe import problem as P  # noqa: E402
from tlx_kernels.moe import triton_grouped as TG  # noqa: E402
from tlx_kernels.moe.reference import covered_rows, reference  # noqa: E402
from tlx_kernels.moe.routing import offsets_of  # noqa: E402
from tlx_kernels.moe.schedule import host_schedule, schedule_table  # noqa: E402

from workbench.run.interpreter import interpret  # noqa: E402

# token counts per expert: ragged, empty first / middle / last, a single group, all empty, a large one among small
COUNTS = {
    "ragged": [100, 37, 130, 1],
    "empty-first-middle-last": [0, 50, 0, 70, 0],
    "single": [193],
    "all-empty": [0, 0, 0],
    "one-large": [3, 260, 5, 0, 9],
}
SMALL = dict(BM=64, BN=64, BK=32, GROUP_M=2, NUM_STAGES=2)  # several tiles per group at these sizes
K, N = 136, 200  # multiples of 8 (TMA), not of the tiles
_seeds = itertools.count(7)


def _tile_coords(t, npm, npn, g):
    """tlx_kernels.gemm.device.tile_coords, replayed in Python."""
    in_group = g * npn
    first = (t // in_group) * g
    size = min(npm - first, g)
    return first + (t % in_group) % size, (t % in_group) // size


def _expected(counts, M, n, K_, BM, BN, group_m, ragged_k):
    """Per global tile: (group, pid_m, pid_n, first token, gm, gk), group after group."""
    out, start = [], 0
    for g, rows in enumerate(counts):
        gm, gk = (M, rows) if ragged_k else (rows, K_)
        npm, npn = -(-gm // BM), -(-n // BN)
        out += [(g, *_tile_coords(t, npm, npn, group_m), start, gm, gk) for t in range(npm * npn)]
        start += rows
    return out


@pytest.mark.parametrize("ragged_k", [False, True], ids=["ragged-m", "ragged-k"])
@pytest.mark.parametrize("programs", [1, 3, 7])
@pytest.mark.parametrize("name", list(COUNTS))
def test_schedule_visits_every_tile_once_in_order(name, programs, ragged_k):
    counts = COUNTS[name]
    offsets = offsets_of(counts)
    M, BM, BN, GROUP_M = 130, 32, 64, 2
    want = _expected(counts, M, N, K, BM, BN, GROUP_M, ragged_k)
    assert [(r[0], r[4], r[5]) for r in want] == host_schedule(counts, M, N, K, BM, BN, ragged_k)
    seen = torch.full((len(want) + 4, 8), -1, dtype=torch.int32)  # rows past the last tile must stay untouched
    interpret(schedule_table, (offsets, seen, len(counts), M, N, K),
              dict(BM=BM, BN=BN, GROUP_M=GROUP_M, RAGGED_K=ragged_k), (programs,))
    got = [tuple(r) for r in seen.tolist()]
    assert [r[1:7] for r in got[:len(want)]] == want
    assert all(r == (-1,) * 8 for r in got[len(want):]), "a tile past the last one was taken"
    for t, r in enumerate(got[:len(want)]):
        assert r[0] == t % programs and r[7] == t // programs, f"tile {t} taken by {r[0]} as its {r[7]}-th"
    if ragged_k:  # every group has tiles, empty ones too (they store zeros)
        assert {r[0] for r in want} == set(range(len(counts)))
    else:  # empty groups have none
        assert {r[0] for r in want} == {g for g, c in enumerate(counts) if c}


def _operands(kind, counts, dtype, extra_rows=0):
    g = torch.Generator().manual_seed(next(_seeds))
    T, E = sum(counts) + extra_rows, len(counts)
    x = torch.randn(T, K, generator=g).to(dtype)
    w = torch.randn(E, K, N, generator=g).to(dtype)
    dy = torch.randn(T, N, generator=g).to(dtype)
    a, b = {"fwd": (x, w), "dx": (dy, w), "dw": (x, dy)}[kind]
    return a, b, offsets_of(counts)


def _run(kind, a, b, offsets, programs=3, config=SMALL):
    p = P.problem(kind, a, b, offsets)
    p.c.fill_(float("nan"))
    if not p.empty:
        interpret(TG.kernel, p.args(), dict(config, **p.constexprs()), (programs,))
    else:
        P.finish_empty(p)
    return p.c


def _tolerance(dtype):
    return 8e-3 if dtype == torch.bfloat16 else fp32_tolerance(dtype)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
@pytest.mark.parametrize("kind", ["fwd", "dx", "dw"])
@pytest.mark.parametrize("name", list(COUNTS))
def test_plain_triton_grouped_gemm_matches_a_loop_of_matmuls(name, kind, dtype):
    counts = COUNTS[name]
    a, b, offsets = _operands(kind, counts, dtype, extra_rows=5)  # 5 tokens past the last group
    out = _run(kind, a, b, offsets)
    ref = reference(kind, a, b, offsets)
    if kind == "dw":
        assert not torch.isnan(out).any(), "a weight gradient left unwritten (empty experts must be zeros)"
        for e, c in enumerate(counts):
            if c == 0:
                assert torch.equal(out[e].float(), torch.zeros_like(ref[e])), f"expert {e} has no tokens: dw = 0"
    else:
        rows = covered_rows(offsets)
        assert not torch.isnan(out[:rows]).any(), "an output row of a group left unwritten"
        assert torch.isnan(out[rows:]).all(), "a row past the last group was written"
        out, ref = out[:rows], ref[:rows]
    if ref.numel() and ref.abs().max() > 0:
        assert rel_err(out, ref) < _tolerance(dtype), (name, kind)


@pytest.mark.parametrize("config", TG.CONFIGS, ids=lambda c: f"{c['BM']}x{c['BN']}x{c['BK']}")
def test_library_configs_in_the_interpreter(config):
    """The library's own tile sizes, forward and dw, with groups smaller and larger than a tile."""
    cfg = {k: v for k, v in config.items() if k != "num_warps"}
    for kind in ("fwd", "dw"):
        a, b, offsets = _operands(kind, [0, 70, 300, 0, 9], torch.float16)
        out = _run(kind, a, b, offsets, programs=4, config=cfg)
        rows = covered_rows(offsets) if kind != "dw" else None
        ref = reference(kind, a, b, offsets)
        assert rel_err(out[:rows], ref[:rows]) < fp32_tolerance(torch.float16), kind


def test_reference_agrees_with_torch_grouped_mm():
    """The oracle itself, against torch._grouped_mm on the CPU (forward: ragged rows; dw: ragged reduction)."""
    counts = COUNTS["empty-first-middle-last"]
    x, w, offsets = _operands("fwd", counts, torch.bfloat16)
    dy = torch.randn(x.shape[0], N).to(torch.bfloat16)
    assert rel_err(torch._grouped_mm(x, w, offs=offsets), reference("fwd", x, w, offsets)) < fp32_tolerance(x.dtype)
    assert rel_err(torch._grouped_mm(x.t(), dy, offs=offsets), reference("dw", x, dy, offsets)) < 1e-2
