"""bench/moe.py without a GPU: it says that nothing can be timed here and writes nothing; --compile-only compiles
every variant x product x config for sm_90 and records their resources; the summary holds the issue's targets."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU path")
def test_without_a_gpu_it_says_so_and_writes_nothing(bench_module, capsys, tmp_path):
    moe = bench_module("moe")
    out = tmp_path / "moe.json"
    assert moe.main(["--quick", "--out", str(out)]) == 2
    said = capsys.readouterr().out
    assert "needs a CUDA GPU" in said and "nothing timed" in said and "--compile-only" in said
    assert not out.exists()


def test_bad_shapes_are_refused(bench_module):
    moe = bench_module("moe")
    with pytest.raises(SystemExit):
        moe.parse_args(["--shapes", "4x60x64x256"])  # K not a multiple of 8
    with pytest.raises(SystemExit):
        moe.parse_args(["--kinds", "bwd"])
    args, shapes = moe.parse_args(["--shapes", "4x64x64x256:skewed,8x128x64x512"])
    assert [(s.E, s.K, s.N, s.T, s.routing) for s in shapes] == [(4, 64, 64, 256, "skewed"), (8, 128, 64, 512,
                                                                                                "uniform")]
    assert args.kinds == ["fwd"] and moe.parse_args(["--compile-only"])[0].kinds == ["fwd", "dx", "dw"]


def test_compile_only_records_every_variant_product_and_config(bench_module, tmp_path):
    moe = bench_module("moe")
    out = tmp_path / "moe-compile.json"
    assert moe.main(["--compile-only", "--shapes", "4x64x128x300:skewed", "--kinds", "fwd,dw", "--out",
                     str(out)]) == 0
    doc = json.loads(out.read_text())
    from tlx_kernels.moe import calls

    want = {(v, k, i) for v, m in calls.VARIANTS.items() for k in ("fwd", "dw") for i in range(len(m.CONFIGS))}
    assert len(doc["configs"]) == len(want)
    for row in doc["configs"]:
        assert not row.get("error") and row["spill_stores"] == 0 and row["findings"] == [], row
        assert row["shared_bytes"] > 0 and row["registers"] > 0
        if row["variant"] == "ws_cooperative":
            assert row["task_registers"] == [40, 232, 232]


def test_summary_against_the_targets(bench_module):
    moe = bench_module("moe")
    base = dict(layer="dsv3-up", shape=[32, 7168, 4096, 16384], kind="fwd", tflops=600.0, baseline="torch_grouped_mm")
    rows = [dict(base, routing="skewed", kernel="ws_cooperative", ratio=1.12),
            dict(base, routing="skewed", kernel="triton", ratio=0.9),
            dict(base, routing="uniform", kernel="ws_cooperative", ratio=0.98),
            dict(base, routing="uniform", kernel="ws_cooperative", ratio=1.5, baseline="matmul_loop")]
    summ = {s["routing"]: s for s in moe.summary(rows)}
    assert summ["skewed"]["best"] == "ws_cooperative" and summ["skewed"]["met"] is True
    assert summ["uniform"]["vs_torch_grouped_mm"] == 0.98 and summ["uniform"]["met"] is False


def test_a_shape_that_fails_in_the_worker_is_a_failed_record_and_the_run_goes_on(bench_module):
    """Each shape and product runs in workbench.run.jobs' worker; here (no GPU in the worker) the job raises, and
    the answer is a record that says why, not an exception in the bench."""
    moe = bench_module("moe")
    args, shapes = moe.parse_args(["--shapes", "4x64x64x256:skewed", "--job-timeout", "60"])
    with moe.jobs("moe-test", gpu=False) as worker:
        rows, rec = moe.measure_in_worker(worker, shapes[0], "fwd", args)
    assert rows == [] and rec["shape"] == shapes[0].label and rec["kind"] == "fwd"
    (failed,) = rec["failed"]
    assert failed["shape"] == [4, 64, 64, 256] and failed["routing"] == "skewed"
    assert "CUDA" in failed["error"] or "cuda" in failed["error"], failed


def test_the_sweep_times_every_candidate_with_each_group_m_and_the_baselines(bench_module):
    moe = bench_module("moe")
    from tlx_kernels.moe import calls, routing

    sweep = calls.sweep_candidates()
    names = [calls.candidate_name(c) for c in sweep]
    from tlx_kernels.moe import ws_cooperative as WS

    assert len(names) == len(set(names)) == 4 * (len(calls.CANDIDATES) + len(WS.TRIALS))
    assert sum("skip1" in n for n in names) == 4 * len(WS.TRIALS)  # the configs not yet run on a GPU
    for c in sweep:
        calls.check_config(c["VARIANT"], {k: v for k, v in c.items() if k != "VARIANT"})
    assert {c["GROUP_M"] for c in sweep} == {1, 8, 16, 64}
    args, _ = moe.parse_args(["--sweep", "--shapes", "4x64x64x256:skewed"])
    assert args.sweep
    s = routing.Shape("t", 4, 64, 64, 256, "skewed")
    x, w = torch.empty(s.T, s.K, dtype=torch.bfloat16), torch.empty(s.E, s.K, s.N, dtype=torch.bfloat16)
    offsets = routing.offsets_of(s.counts())
    op = dict(a=x, b=w, offsets=offsets, bounds=[])
    assert list(moe.calls_of("fwd", op, sweep=True)) == [*names, *moe.BASELINES]
    assert list(moe.calls_of("fwd", op)) == [*moe.OURS, *moe.BASELINES]


def test_a_sweep_group_m_compiles_for_sm_90():
    """GROUP_M is a constexpr of the shared schedule: a value no library config uses still compiles clean."""
    from tlx_kernels.moe import calls, problem, routing

    import workbench
    from workbench.check import check_artifact

    s = routing.Shape("t", 4, 256, 512, 600, "skewed")
    x, w = torch.empty(s.T, s.K, dtype=torch.bfloat16), torch.empty(s.E, s.K, s.N, dtype=torch.bfloat16)
    cfg = next(c for c in calls.sweep_candidates() if c["VARIANT"] == "ws_cooperative" and c["GROUP_M"] == 1)
    kernel, args, kwargs, grid = calls.prepare(problem.problem("fwd", x, w, routing.offsets_of(s.counts())),
                                               "ws_cooperative", cfg)
    art = workbench.compile(kernel, *args, target="sm_90", **kwargs)
    assert art.metadata.spill_stores == 0
    assert not [f for f in check_artifact(art, kernel, *args, grid=tuple(grid), **kwargs) if f.severity == "error"]


def test_the_sweep_compiles_in_parallel_workers_and_a_failing_compile_is_reported(bench_module, capsys):
    """--sweep first compiles its candidates in ``--workers`` isolated workers (Triton's disk cache then serves the
    measuring worker); here, with no GPU in the workers, every chunk fails and says why, and the bench goes on."""
    moe = bench_module("moe")
    args, shapes = moe.parse_args(["--sweep", "--shapes", "4x64x64x256:skewed", "--workers", "2",
                                   "--job-timeout", "60"])
    moe.precompile(shapes, ["fwd"], args)
    said = capsys.readouterr().out
    from tlx_kernels.moe import calls

    chunks = -(-len(calls.sweep_candidates()) // 4)
    failed = [ln for ln in said.splitlines() if ln.startswith("  compile custom E4 K64 N64 T256 skewed fwd: ")]
    assert len(failed) == chunks and all("CUDA" in ln for ln in failed), said
    assert f"compiled {len(calls.sweep_candidates())} candidates x 1 shapes x 1 products" in said
