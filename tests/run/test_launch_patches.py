"""workbench.run.launch_patches, the capture's reach into Triton's runtime: the signatures it assumes, the
launches it routes to the active capture (on this machine, with no GPU), and every patch undone after."""

from __future__ import annotations

import inspect

import pytest

torch = pytest.importorskip("torch")
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
import triton.language.extra.tlx  # noqa: E402,F401  (uTLX's kernel class, if it defines run, is patched too)
from triton.runtime.autotuner import Autotuner  # noqa: E402
from triton.runtime.jit import JITFunction  # noqa: E402

from workbench.compile import driver  # noqa: E402
from workbench.run import launch_patches  # noqa: E402


@triton.jit
def _copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


@triton.autotune(configs=[triton.Config({"BLOCK": 32}), triton.Config({"BLOCK": 64})], key=["n"])
@triton.jit
def _tuned_copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)


class StubCapture:
    """What the patches call on a capture, recorded."""

    def __init__(self) -> None:
        self.suspended = 0
        self.benchmarking = 0
        self.record_only = False  # %%tlx --search: launches recorded, not run
        self.launches: list[dict] = []
        self.autotuned: list[tuple] = []
        self.recorded: list[tuple] = []

    def record(self, kernel, args, kwargs, grid):
        self.recorded.append((kernel, args, kwargs, grid))

    def runs_on_gpu_default(self) -> bool:
        return False

    def on_launch(self, kernel, args, kwargs, grid, warmup, launch, jit_compile):
        self.launches.append(dict(kernel=kernel, args=args, kwargs=kwargs, grid=grid, warmup=warmup,
                                  launch=launch, jit_compile=jit_compile))
        return "captured"

    def _autotune_without_gpu(self, tuner, args, kwargs):
        self.autotuned.append((tuner, args, kwargs))
        return "tuned without a GPU"

    def _direct_compile(self, orig, kernel, args, kw):
        return ("direct", kernel, args)


def test_the_signatures_the_patches_assume():
    for cls in [JITFunction, *launch_patches.subclasses_with_run(JITFunction)]:
        params = inspect.signature(cls.__dict__["run"]).parameters
        assert {"grid", "warmup"} <= set(params), (cls, list(params))
        assert params["grid"].kind is inspect.Parameter.KEYWORD_ONLY
        assert any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params.values())
    assert callable(Autotuner.run) and callable(Autotuner._bench)
    assert list(inspect.signature(driver.compile_kernel).parameters)[0] == "kernel"


def test_a_launch_reaches_the_active_capture_without_a_gpu():
    cap = StubCapture()
    x, y = torch.arange(8, dtype=torch.float32), torch.empty(8)
    undo = launch_patches.install(lambda: cap)
    try:
        assert _copy[(1,)](x, y, 8, BLOCK=32) == "captured"
        assert _tuned_copy[(1,)](x, y, 8) == "tuned without a GPU"
        assert driver.compile_kernel("k", 1, 2)[0] == "direct"
    finally:
        undo()
    (launch,) = cap.launches
    assert launch["kernel"] is _copy and launch["grid"] == (1,) and launch["warmup"] is False
    assert launch["args"] == (x, y, 8) and launch["kwargs"] == {"BLOCK": 32}
    assert cap.autotuned[0][0] is _tuned_copy


def test_a_recording_capture_records_launches_and_runs_nothing():
    """%%tlx --search: the object launched (a kernel or an autotuner), its arguments and its grid, nothing run."""
    cap = StubCapture()
    cap.record_only = True
    x, y = torch.arange(8, dtype=torch.float32), torch.empty(8)
    undo = launch_patches.install(lambda: cap)
    try:
        assert _copy[(1,)](x, y, 8, BLOCK=32) is None
        assert _tuned_copy[(2,)](x, y, 8) is None
    finally:
        undo()
    assert cap.launches == [] and cap.autotuned == []
    assert cap.recorded[0] == (_copy, (x, y, 8), {"BLOCK": 32}, (1,))
    assert cap.recorded[1][0] is _tuned_copy and cap.recorded[1][3] == (2,) and "grid" not in cap.recorded[1][2]


def test_no_capture_or_a_suspended_one_passes_through():
    cap = StubCapture()
    cap.suspended = 1
    seen = []
    undo = launch_patches.install(lambda: cap)
    try:
        with pytest.raises(Exception) as err:  # Triton's own run: no GPU driver here
            _copy[(1,)](torch.zeros(8), torch.zeros(8), 8, BLOCK=32)
        seen.append(type(err.value).__name__)
    finally:
        undo()
    assert not cap.launches and seen


def test_every_patch_is_undone():
    classes = [JITFunction, *launch_patches.subclasses_with_run(JITFunction)]
    before = ([c.__dict__["run"] for c in classes], Autotuner.run, Autotuner._bench, driver.compile_kernel)
    undo = launch_patches.install(lambda: None)
    assert all(c.__dict__["run"].__wrapped__ is r for c, r in zip(classes, before[0], strict=True))
    assert all(now is not then for now, then in zip((Autotuner.run, Autotuner._bench, driver.compile_kernel),
                                                    before[1:], strict=True))
    undo()
    after = ([c.__dict__["run"] for c in classes], Autotuner.run, Autotuner._bench, driver.compile_kernel)
    assert after == before


class _LibraryTuner(Autotuner):
    """A library's autotuner with a ``run`` of its own (as FlagGems' ``LibTuner``: its own policy and cache)."""

    def run(self, *args, **kwargs):
        raise AssertionError("a library tuner's own run times configs on a GPU: never reached under a capture")


def test_an_autotuner_subclass_with_its_own_run_reaches_the_capture_and_is_restored():
    tuner = _LibraryTuner(_copy, _copy.arg_names, [triton.Config({"BLOCK": 32})], key=["n"], reset_to_zero=None,
                          restore_value=None)
    own = _LibraryTuner.__dict__["run"]
    cap = StubCapture()
    undo = launch_patches.install(lambda: cap)
    try:
        assert _LibraryTuner.__dict__["run"].__wrapped__ is own
        assert tuner[(1,)](torch.zeros(8), torch.zeros(8), 8) == "tuned without a GPU"
    finally:
        undo()
    assert cap.autotuned[0][0] is tuner and _LibraryTuner.__dict__["run"] is own


def test_gpu_launches_hears_triton_launch_enter_hook_with_name_and_stream():
    """The launcher calls ``launch_enter_hook(launch_metadata)``; the metadata's eager part names the kernel and the
    stream (pinned in Triton's source); the hook is there only inside the block."""
    from triton import knobs
    from triton.compiler.compiler import CompiledKernel, LazyDict

    src = inspect.getsource(CompiledKernel.launch_metadata)
    assert 'LazyDict({"name": self.name, "function": self.function, "stream": stream})' in src
    assert "launch_enter_hook" in inspect.getsource(CompiledKernel.__getitem__)
    before = list(knobs.runtime.launch_enter_hook.calls)
    with launch_patches.gpu_launches() as seen:
        knobs.runtime.launch_enter_hook(LazyDict({"name": "_copy", "function": 1, "stream": 77}))
        knobs.runtime.launch_enter_hook(LazyDict({"name": "_other", "function": 2, "stream": 0}))
    knobs.runtime.launch_enter_hook(LazyDict({"name": "after", "function": 3, "stream": 5}))
    assert seen == [("_copy", 77), ("_other", 0)]
    assert knobs.runtime.launch_enter_hook.calls == before
