from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))


@pytest.fixture(scope="session", autouse=True)
def _session_cache(tmp_path_factory):
    # One artifact cache for the session, shared with the kernels nbclient starts (they inherit the env).
    old = os.environ.get("TLX_WORKBENCH_CACHE_DIR")
    os.environ["TLX_WORKBENCH_CACHE_DIR"] = str(tmp_path_factory.mktemp("wb-magic-cache"))
    yield
    if old is None:
        os.environ.pop("TLX_WORKBENCH_CACHE_DIR", None)
    else:
        os.environ["TLX_WORKBENCH_CACHE_DIR"] = old


@pytest.fixture(scope="session")
def has_gpu() -> bool:
    from workbench.run.device import detect

    return detect().available
