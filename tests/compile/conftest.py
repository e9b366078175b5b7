import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory, monkeypatch):
    # one disk cache per test session, so tests see cold compiles and real cache hits
    d = tmp_path_factory.getbasetemp() / "wb-cache"
    monkeypatch.setenv("TLX_WORKBENCH_CACHE_DIR", str(d))
