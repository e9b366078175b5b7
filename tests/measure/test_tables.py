"""Timing statistics, the capture table, sweep DataFrames, counts hooks, the cache directory."""

import importlib
import json

import pandas as pd
import pytest

import workbench.measure as prof
from workbench.measure.capture import kernel_table
from workbench.measure.sweep import COLUMNS, expand_configs
from workbench.measure.timing import quantile, summarize


def test_summarize_stable_and_unstable():
    r = summarize(
        [1.0, 1.01, 0.99, 1.0, 1.02, 0.98, 1.0, 1.0, 1.0, 1.0],
        name="k",
        method="cuda-events",
        l2="flushed",
        flops=2e9,
        bytes=1e6,
    )
    assert r.median_ms == 1.0 and r.stable and r.warning is None
    assert r.runs == 10 and r.tflops == pytest.approx(2.0) and r.tbs == pytest.approx(1e-3)
    d = json.loads(json.dumps(r.to_dict(), allow_nan=False))
    assert "samples_ms" not in d and d["method"] == "cuda-events"
    bad = summarize([1.0, 2.0, 1.0, 3.0, 1.0, 1.0, 5.0, 1.0], name="k", method="cuda-events", l2="warm")
    assert not bad.stable and "too wide to trust" in bad.warning
    few = summarize([1.0, 1.0], name="k", method="cuda-events", l2="warm")
    assert not few.stable and "too few" in few.warning


def test_quantile_matches_triton():
    from triton.testing import _quantile

    xs = [5.0, 1.0, 3.0, 2.0, 4.0, 10.0, 7.0]
    assert [quantile(xs, q) for q in (0.1, 0.5, 0.9)] == pytest.approx(_quantile(xs, [0.1, 0.5, 0.9]))


def test_kernel_table():
    events = [("gemm", 100.0), ("gemm", 110.0), ("relu", 10.0), ("Memcpy DtoD (Device -> Device)", 30.0)] * 2
    df = kernel_table(events, repeat=2)
    assert list(df.columns) == ["name", "kind", "calls", "device_us", "mean_us", "share"]
    assert df.iloc[0]["name"] == "gemm" and df.iloc[0]["calls"] == 2 and df.iloc[0]["device_us"] == 210.0
    assert df.iloc[0]["mean_us"] == 105.0
    assert df["share"].sum() == pytest.approx(1.0)
    assert set(df["kind"]) == {"kernel", "memcpy"}
    assert kernel_table([]).empty


class FakeTimer:
    def __init__(self):
        self.calls = []

    def __call__(self, fn, name=None, **opts):
        ms = fn()  # the fake "kernel" returns its time
        self.calls.append((name, opts))
        return summarize([ms] * 10, name=name, method="cuda-events", l2="flushed")


def test_sweep_dataframe_shape_and_derived_columns():
    timer = FakeTimer()
    configs = {"n": [1024, 2048], "block": [64, 128, 256]}
    df = prof.sweep(
        lambda n, block: lambda: n / block / 1000,
        configs,
        reference=lambda n, block: lambda: n / 128 / 1000,
        counts=lambda n, block: (2 * n**3, 3 * n * n * 2),
        bench_options={"rep_ms": 50},
        timer=timer,
        progress=False,
        name="gemm",
    )
    assert df.shape == (6, 2 + len(COLUMNS))
    assert list(df.columns[:2]) == ["n", "block"]
    assert len(timer.calls) == 12 and timer.calls[0][1] == {"rep_ms": 50}
    row = df[(df.n == 1024) & (df.block == 256)].iloc[0]
    assert row.median_ms == pytest.approx(0.004)
    assert row.ratio == pytest.approx(2.0)  # twice as fast as the reference
    assert row.tflops == pytest.approx(2 * 1024**3 / 4e-6 / 1e12)
    assert row.tbs == pytest.approx(3 * 1024**2 * 2 / 4e-6 / 1e12)
    assert bool(row.stable) and row.counts_source == "caller"
    assert df.attrs["config_keys"] == ["n", "block"]
    fig = prof.sweep_figure(df, color="n")
    assert fig.layout.xaxis.title.text == "block"
    assert len(fig.data) == 4  # two lines and two reference lines


def test_sweep_keeps_going_after_a_failing_config():
    seen = []

    def make(n):
        if n == 2:
            raise RuntimeError("out of shared memory")
        return lambda: 1.0

    df = prof.sweep(
        make,
        [{"n": 1}, {"n": 2}, {"n": 3}],
        timer=FakeTimer(),
        progress=lambda i, total, cfg: seen.append((i, total)),
    )
    assert df.shape[0] == 3
    assert df.loc[1, "error"] == "RuntimeError: out of shared memory"
    assert pd.isna(df.loc[0, "error"]) and df.loc[2, "median_ms"] == 1.0
    assert seen == [(1, 3), (2, 3), (3, 3)]
    prof.sweep_figure(df)


def test_expand_configs():
    assert expand_configs({"a": [1, 2], "b": "x"}) == [{"a": 1, "b": "x"}, {"a": 2, "b": "x"}]
    assert expand_configs([{"a": 1}]) == [{"a": 1}]


def test_declared_counts_from_launch_metadata_hook():
    import triton
    import triton.language as tl

    def meta(grid, metadata, args):
        n = args["n"]
        return {"name": f"scale {n}", "flops32": n, "bytes": 8 * n}

    @triton.jit(launch_metadata=meta)
    def scale(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)

    c = prof.declared_counts(scale, (4,), (None, None, 4096, 1024))
    assert c.flops == 4096 and c.bytes == 8 * 4096 and c.source == "declared"
    assert prof.declared_counts(scale, (4,), {"n": 10}).bytes == 80
    r = prof.roofline(kernel=scale, grid=(4,), args={"n": 1 << 20}, device="H100")
    assert r.counts.source == "declared" and r.bound == "memory"

    @triton.jit
    def plain(x_ptr):
        pass

    assert prof.declared_counts(plain, (1,), ()) is None


def test_cache_dir_override(monkeypatch, tmp_path):
    monkeypatch.setenv("TLX_WORKBENCH_CACHE_DIR", str(tmp_path))
    assert prof.cache_dir() == tmp_path
    monkeypatch.delenv("TLX_WORKBENCH_CACHE_DIR")
    assert "tlx-workbench" in str(prof.cache_dir())


def test_ceilings_cache_roundtrip(monkeypatch, tmp_path):
    cmod = importlib.import_module("workbench.measure.ceilings")

    monkeypatch.setenv("TLX_WORKBENCH_CACHE_DIR", str(tmp_path))
    c = cmod.Ceilings(
        "NVIDIA H200",
        "measured",
        {"bf16": 760.0, "fp16": 770.0, "fp8": 1300.0, "tf32": 380.0},
        4.28,
        datasheet=cmod.datasheet("H200"),
        driver="570.1",
    )
    cmod._write_cache(cmod._cache_key("NVIDIA H200", "570.1"), c)
    assert cmod.Ceilings.from_dict(cmod._read_cache()["NVIDIA H200 | driver 570.1"]) == c
