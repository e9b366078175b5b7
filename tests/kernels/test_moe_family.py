"""The grouped-GEMM family (``tlx_kernels.moe.family``) through the benchmark runner without a GPU: shapes are
parsed and refused as bench/moe.py takes them, ``--compile-only`` (``workbench.measure.family.compile_only``)
compiles every variant x product x config for sm_90 and records their resources, the summary holds issue 27's
targets, a sweep's candidates cover every config with each GROUP_M, and its preflight in parallel workers says
why each candidate failed when the workers have no GPU."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from tlx_kernels.moe import calls, routing  # noqa: E402
from tlx_kernels.moe import ws_cooperative as WS  # noqa: E402
from tlx_kernels.moe.family import MOE, SWEPT  # noqa: E402

from workbench.measure import family as F  # noqa: E402


def test_shapes_are_parsed_and_bad_ones_refused():
    with pytest.raises(ValueError, match="multiples of 8"):
        MOE.parse_shape("4x60x64x256")  # K not a multiple of 8
    with pytest.raises(ValueError, match="routing uniform or skewed"):
        MOE.parse_shape("4x64x64x256:zipf")
    assert MOE.parse_shape("4x64x64x256:skewed") == (4, 64, 64, 256, "skewed", "fwd", "custom")
    assert MOE.parse_shape("8x128x64x512")[4] == "uniform"
    assert len(MOE.shapes["quick"]) == len(routing.QUICK_SHAPES)
    assert MOE.shape_name(MOE.shapes["quick"][0]) == "dsv3-up E32 K7168 N4096 T16384 uniform fwd"


def test_compile_only_records_every_variant_product_and_config():
    rows = [r for kind in ("fwd", "dw") for r in
            F.compile_only(MOE, (4, 64, 128, 300, "skewed", kind, "custom"), MOE.variants(), log=lambda *a: None)]
    want = {(v, k, i) for v, m in calls.VARIANTS.items() for k in ("fwd", "dw") for i in range(len(m.CONFIGS))}
    assert len(rows) == len(want)
    for row in rows:
        assert not row.get("error") and row["spill_stores"] == 0 and row["findings"] == [], row
        assert row["shared_bytes"] > 0 and row["registers"] > 0
        if row["kernel"] == "ws_cooperative":
            assert row["task_registers"] == [40, 232, 232]


def test_summary_against_the_targets():
    skewed, uniform = (32, 7168, 4096, 16384, "skewed", "fwd", "dsv3-up"), (32, 7168, 4096, 16384, "uniform", "fwd",
                                                                             "dsv3-up")
    base = dict(tflops=600.0, config=None, baseline="torch_grouped_mm")
    rows = [dict(base, shape=list(skewed), kernel="ws_cooperative", ratio=1.12),
            dict(base, shape=list(skewed), kernel="triton", ratio=0.9),
            dict(base, shape=list(uniform), kernel="ws_cooperative", ratio=0.98),
            dict(base, shape=list(uniform), kernel="ws_cooperative", ratio=1.5, baseline="matmul_loop")]
    summ = {s["shape"][4]: s for s in F.summary(MOE, [skewed, uniform], rows)}
    assert (summ["skewed"]["best_kernel"], summ["skewed"]["target"], summ["skewed"]["met"]) == (
        "ws_cooperative", 1.10, True)
    assert (summ["uniform"]["ratio"], summ["uniform"]["met"]) == (0.98, False)
    assert MOE.targets((*skewed[:5], "dx", "dsv3-up")) == {}  # the backward products have no target


def test_a_sweep_times_every_candidate_with_each_group_m():
    sweep = MOE.configs(SWEPT, "candidates", MOE.shapes["sweep"][0])
    names = [MOE.config_name(c) for c in sweep]
    assert len(names) == len(set(names)) == 4 * (len(calls.CANDIDATES) + len(WS.TRIALS))
    assert sum("skip1" in n for n in names) == 4 * len(WS.TRIALS)  # the configs not yet run on a GPU
    for c in sweep:
        calls.check_config(c["VARIANT"], {k: v for k, v in c.items() if k != "VARIANT"})
    assert {c["GROUP_M"] for c in sweep} == {1, 8, 16, 64}
    assert all(MOE.configs(k, "configs", MOE.shapes["sweep"][0]) is None for k in MOE.kernels)  # tune themselves


def test_a_sweep_group_m_compiles_for_sm_90():
    """GROUP_M is a constexpr of the shared schedule: a value no library config uses still compiles clean."""
    cfg = next(c for c in calls.sweep_candidates() if c["VARIANT"] == "ws_cooperative" and c["GROUP_M"] == 1)
    (row,) = F.compile_only(MOE, (4, 256, 512, 600, "skewed", "fwd", "t"), {SWEPT: [cfg]}, log=lambda *a: None)
    assert row["spill_stores"] == 0 and not row.get("error")
    assert not [f for f in row["findings"] if "error" in f.lower()], row["findings"]


def test_the_sweeps_preflight_runs_in_parallel_workers_and_says_why_each_candidate_failed():
    """The runner checks a sweep's candidates in ``workers`` isolated workers; here they have no GPU, so each
    candidate fails at the preflight shape, with its reason, and none is timed."""
    shape = MOE.parse_shape("4x64x64x256:skewed")
    cands = MOE.configs(SWEPT, "candidates", shape)[:4]
    s = F.Settings(workers=2, job_timeout_s=120, gpu=False)
    said: list[str] = []
    verdict = F.preflight(MOE, [shape], {"fwd": {SWEPT: cands}}, s, log=lambda *a: said.append(" ".join(a)))
    mine = verdict["fwd"][SWEPT]
    assert set(mine) == {MOE.config_name(c) for c in cands}
    assert all(v != "ok" and v.startswith("(4, 256, 512, 600, 'skewed', 'fwd', 'check'): ") for v in mine.values())
    assert all("active drivers" in v or "CUDA" in v for v in mine.values()), mine
    assert f"  preflight fwd {SWEPT}: 0/4 ok" in said
