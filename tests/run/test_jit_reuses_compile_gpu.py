"""On a GPU: a launch after ``workbench.compile`` of the same kernel and arguments does not compile again.

``workbench.compile`` compiles through Triton's own cache with the JIT's binder, so the JIT's compile for the
launch must find the kernel there: Triton's compilation listener then reports exactly one real compile
(``cache_hit=False``, ours) and, for the launch, a hit. Fresh Triton and workbench caches make the first
compile real. A plain Triton kernel and a warp-specialized TLX kernel (the isolation tests' ring).
"""

from __future__ import annotations

import isolation_kernels as K
import pytest

torch = pytest.importorskip("torch")

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU"),
]

import triton  # noqa: E402
import triton.language as tl  # noqa: E402


@triton.jit
def scale_rows(x_ptr, y_ptr, n, factor, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * factor, mask=mask)


@pytest.fixture
def compiles(tmp_path, monkeypatch):
    """Every compile Triton does while the test runs: (kernel name, cache_hit)."""
    from workbench.compile import cache

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    monkeypatch.setenv("TLX_WORKBENCH_CACHE_DIR", str(tmp_path / "workbench"))
    cache.clear(memory=True)
    seen: list[tuple[str, bool]] = []

    def listener(*, src, metadata, metadata_group, times, cache_hit):
        seen.append((str(metadata.get("name")), bool(cache_hit)))

    old = triton.knobs.compilation.listener
    triton.knobs.compilation.listener = listener
    yield seen
    triton.knobs.compilation.listener = old
    cache.clear(memory=True)


def _target() -> str:
    major, minor = torch.cuda.get_device_capability()
    return f"sm_{major}{minor}"


def test_plain_kernel_launch_after_compile_is_a_cache_hit(compiles):
    import workbench

    x = torch.randn(5000, device="cuda")
    y = torch.empty_like(x)
    art = workbench.compile(scale_rows, x, y, x.numel(), 3.0, BLOCK=1024, target=_target())
    assert not art.cache_hit
    assert compiles == [("scale_rows", False)], compiles
    scale_rows[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), 3.0, BLOCK=1024)
    torch.cuda.synchronize()
    assert compiles == [("scale_rows", False), ("scale_rows", True)], compiles
    torch.testing.assert_close(y, x * 3.0)


def test_tlx_kernel_launch_after_compile_is_a_cache_hit(compiles):
    import workbench

    ring = triton.jit(K.ring_ok.fn)  # a JITFunction of its own: no in-memory kernels from other tests
    grid = (2,)
    x = torch.randn(grid[0] * K.RING_ARGS["TILES"] * K.RING_ARGS["BLOCK"], device="cuda")
    y = torch.empty_like(x)
    workbench.compile(ring, x, y, x.numel(), **K.RING_ARGS, target=_target())
    assert compiles == [("ring_ok", False)], compiles
    ring[grid](x, y, x.numel(), **K.RING_ARGS)
    torch.cuda.synchronize()
    assert compiles == [("ring_ok", False), ("ring_ok", True)], compiles
    torch.testing.assert_close(y, x * 2.0)
