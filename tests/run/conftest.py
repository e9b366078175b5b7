from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))


@pytest.fixture(scope="session", autouse=True)
def _session_cache(tmp_path_factory):
    # a fresh artifact cache: compiles in this session keep their Triton CompiledKernel (a disk hit has none)
    # and a fresh Triton cache: its entries are keyed by source, not file, so a cubin compiled from a copy of
    # these kernels elsewhere would carry that file's name in its line info
    names = ("TLX_WORKBENCH_CACHE_DIR", "TRITON_CACHE_DIR")
    old = {n: os.environ.get(n) for n in names}
    for n in names:
        os.environ[n] = str(tmp_path_factory.mktemp(n.lower()))
    yield
    for n, v in old.items():
        if v is None:
            os.environ.pop(n, None)
        else:
            os.environ[n] = v
