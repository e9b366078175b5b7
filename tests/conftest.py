import os
import sys

import pytest

# tests/ on the path: the shared fixtures (sample_kernels, standin_driver) import by name from any test folder
sys.path.insert(0, os.path.dirname(__file__))


@pytest.fixture(scope="session", autouse=True)
def _own_cache_dir(tmp_path_factory):
    """The workbench's caches (compiled artifacts, a search's kept rows) in a folder of this test session's, unless
    the caller names one: a test never reads what another session (or the user's notebooks) left there."""
    if os.environ.get("TLX_WORKBENCH_CACHE_DIR"):
        yield
        return
    os.environ["TLX_WORKBENCH_CACHE_DIR"] = str(tmp_path_factory.mktemp("wb-cache"))
    try:
        yield
    finally:
        os.environ.pop("TLX_WORKBENCH_CACHE_DIR", None)


@pytest.fixture(scope="module")
def ip():
    """An IPython shell with the workbench's extension loaded, for a test module's %%tlx cells (module scope)."""
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "workbench")
    yield shell
    shell.run_line_magic("unload_ext", "workbench")


GPU_TEST_LIMIT_S = float(os.environ.get("WB_GPU_TEST_LIMIT_S", "300"))


@pytest.fixture(autouse=True)
def _gpu_test_limit(request):
    """A GPU test that runs past ``WB_GPU_TEST_LIMIT_S`` (300 s; a module's own ``GPU_TEST_LIMIT_S`` where it sets
    one) ends the run, with every thread's traceback in
    ``$WB_OUT/gpu-test-hang.txt`` (pytest holds stderr): a hang on the lent GPU then costs minutes, not the call,
    and says where it waited."""
    if request.node.get_closest_marker("gpu") is None:
        yield
        return
    import faulthandler
    import tempfile

    limit = float(getattr(request.module, "GPU_TEST_LIMIT_S", GPU_TEST_LIMIT_S))
    path = os.path.join(os.environ.get("WB_OUT") or tempfile.gettempdir(), "gpu-test-hang.txt")
    with open(path, "w") as f:
        f.write(f"{request.node.nodeid} ran past {limit:g} s; its threads:\n")
        f.flush()
        faulthandler.dump_traceback_later(limit, exit=True, file=f)
        try:
            yield
        finally:
            faulthandler.cancel_dump_traceback_later()
