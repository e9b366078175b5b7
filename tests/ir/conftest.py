import pytest


@pytest.fixture(scope="session")
def ws_gemm():
    """The library's warp-specialized GEMM compiled for sm_90 on the CPU: real TTGIR (warp_specialize with a default
    region and partitions, inlined device functions) and real SASS (nvdisasm with line info)."""
    torch = pytest.importorskip("torch")
    from tlx_kernels.gemm import ws_cooperative as G

    import workbench

    a = torch.empty(1024, 1024, dtype=torch.bfloat16)
    args, kwargs, _grid, _out = G.prepare(a, a, sms=132)
    return workbench.compile(G.kernel, *args, target="sm_90", **kwargs)
