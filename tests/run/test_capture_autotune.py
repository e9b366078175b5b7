"""Autotuned kernels captured without a GPU (``Capture._autotune_without_gpu``): configs are pruned as Triton's
autotuner prunes them, a config the autotuner would skip on a GPU (a failed ``tl.static_assert``) is skipped and
said, and the tuner's ``best_config`` is the config that "ran" (a library's entry point reads it, as FlagGems'
``LibEntry`` does)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from workbench.errors import CompileError  # noqa: E402
from workbench.run.capture import Capture  # noqa: E402
from workbench.run.device import detect  # noqa: E402

_CONFIGS = [triton.Config({"BLOCK": 256}), triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 32})]


@triton.autotune(configs=_CONFIGS, key=["n"])
@triton.jit
def _asserting_copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    tl.static_assert(BLOCK <= 128)  # the first config does not fit: on a GPU the autotuner skips it
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def _prune(configs, nargs, **kwargs):
    return [c for c in configs if c.kwargs["BLOCK"] == 32]


@triton.autotune(configs=_CONFIGS, key=["n"], prune_configs_by={"early_config_prune": _prune})
@triton.jit
def _pruned_copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


@triton.autotune(configs=[triton.Config({"BLOCK": 256})], key=["n"])
@triton.jit
def _never_fits(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    tl.static_assert(BLOCK <= 128)
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


def _capture() -> Capture:
    return Capture(device=detect(), compile_only=True, isolate=False)


def test_a_config_the_autotuner_would_skip_is_skipped_and_said():
    x, y = torch.zeros(1024), torch.zeros(1024)
    cap = _capture()
    with cap:
        _asserting_copy[lambda m: (triton.cdiv(1024, m["BLOCK"]),)](x, y, 1024)
    assert _asserting_copy.best_config is _CONFIGS[1]
    (entry, *rest) = cap.entries.values()
    assert entry.launches == 1 and entry.bound["BLOCK"] == 64 and len(rest) == 1  # BLOCK=32 compiled only
    assert not entry.tuning_only and rest[0].tuning_only and rest[0].launches == 0
    said = [d["message"] for d in cap.diagnostics]
    assert any("1 config(s) of _asserting_copy skipped as Triton's autotuner skips them" in m for m in said), said
    assert cap.failed_kernel is None


def test_the_configs_are_pruned_as_the_autotuner_prunes_them():
    cap = _capture()
    with cap:
        _pruned_copy[(32,)](torch.zeros(1024), torch.zeros(1024), 1024)
    assert [e.bound["BLOCK"] for e in cap.entries.values()] == [32]
    assert _pruned_copy.best_config is _CONFIGS[2]


def test_when_no_config_fits_the_compile_error_is_raised():
    cap = _capture()
    with pytest.raises(CompileError, match="static_assert|Static assert") as err, cap:
        _never_fits[(1,)](torch.zeros(8), torch.zeros(8), 8)
    assert err.value.config_rejected


@triton.autotune(configs=[triton.Config({}, num_warps=w, num_stages=s) for w in (2, 4) for s in (2, 3)], key=["n"])
@triton.jit
def _options_only(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


def test_configs_that_differ_only_in_their_options_are_compiles_of_their_own():
    # fla-core's kernels tune num_warps/num_stages alone: the launch of the config that "ran" kept the options of
    # the last config compiled, and its reproducer compiled 4 warps where the workbench had compiled 2
    cap = _capture()
    with cap:
        _options_only[(1,)](torch.zeros(64), torch.zeros(64), 64, BLOCK=64)
    seen = [(e.artifact.metadata.num_warps, e.bound["num_warps"], e.bound["num_stages"], e.launches, e.tuning_only)
            for e in cap.entries.values()]
    # the first config is the launch; the others were compiled only, each under its own options
    assert seen == [(2, 2, 2, 1, False), (2, 2, 3, 0, True), (4, 4, 2, 0, True), (4, 4, 3, 0, True)]
    assert _options_only.best_config.num_warps == 2 and _options_only.best_config.num_stages == 2
