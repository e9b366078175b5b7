"""The kernel library's families (``tlx_kernels.{gemm,attention,moe,broadcast}.family``) give what the benchmark
runner (``workbench.measure.family``) asks for, without a GPU: a reference the worker imports them by, unique config
names, shapes that round-trip through their names, one preflight shape set per case, a tolerance, targets. (The
MoE family's compile-only path and sweep: tests/kernels/test_moe_family.py.)"""

from __future__ import annotations

import importlib

import pytest

pytest.importorskip("torch")

from tlx_kernels.attention.family import ATTENTION  # noqa: E402
from tlx_kernels.broadcast.family import BROADCAST  # noqa: E402
from tlx_kernels.gemm.family import GEMM  # noqa: E402
from tlx_kernels.moe.family import MOE  # noqa: E402

FAMILIES = {"gemm": GEMM, "attention": ATTENTION, "moe": MOE, "broadcast": BROADCAST}


@pytest.mark.parametrize("name", FAMILIES)
def test_a_family_gives_what_the_runner_asks_for(name):
    fam = FAMILIES[name]
    module, _, attr = fam.ref.partition(":")
    assert getattr(importlib.import_module(module), attr) is fam and fam.name == name
    assert fam.kernels and fam.baselines and not set(fam.kernels) & set(fam.baselines)
    for key in ("bench", "quick", "sweep"):
        assert fam.shapes[key], key
    for shape in fam.shapes["bench"]:
        assert fam.flops(shape) > 0 and fam.checks(shape)
        assert all(fam.case(c) == fam.case(shape) for c in fam.checks(shape) if name != "moe")
        for kernel in fam.kernels:
            cfgs = fam.configs(kernel, "configs", shape)
            assert cfgs is None or len({fam.config_name(c) for c in cfgs}) == len(cfgs) > 0, (kernel, shape)
    assert 0 < fam.tolerance("bf16") <= 2e-2
    assert any(fam.targets(shape) for shape in fam.shapes["bench"])


def test_shapes_round_trip_through_their_names():
    assert GEMM.parse_shape(GEMM.shape_name((4096, 1024, 512))) == (4096, 1024, 512)
    assert ATTENTION.parse_shape(ATTENTION.shape_name((4, 32, 4096, 128, True))) == (4, 32, 4096, 128, True)
    assert BROADCAST.parse_shape("main") in BROADCAST.shapes["bench"]
    with pytest.raises(ValueError, match="choose from"):
        BROADCAST.parse_shape("huge")


def test_cases_share_configs_and_preflight_where_they_should():
    """GEMM: every shape one case and the odd shape in its preflight; attention: a case per head dim and mask
    (its configs depend on D), checked at B2 H8 S1040; the top-level attention tunes over the variants."""
    assert {GEMM.case(x) for x in GEMM.shapes["bench"]} == {"all"}
    assert (1000, 1500, 777) in GEMM.checks((8192, 8192, 8192))
    assert {ATTENTION.case(x) for x in ATTENTION.shapes["bench"]} == {"d128-full", "d128-causal", "d64-full",
                                                                     "d64-causal"}
    assert ATTENTION.checks((4, 32, 4096, 64, True)) == [(2, 8, 1040, 64, True)]
    assert ATTENTION.configs("attention", "configs", (4, 32, 4096, 128, False)) is None
    d64 = ATTENTION.configs("ws_persistent", "configs", (4, 32, 4096, 64, False))
    d128 = ATTENTION.configs("ws_persistent", "configs", (4, 32, 4096, 128, False))
    assert d64 and d128 and len(ATTENTION.configs("ws_persistent", "candidates", (4, 32, 4096, 128, False))) > len(d128)
    assert ATTENTION.targets((4, 32, 4096, 128, False)) == {"meta_*": 1.0}
    assert BROADCAST.targets(BROADCAST.parse_shape("main")) == {"materialized": 2.0}
