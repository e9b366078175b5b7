import os
import sys

import pytest

# tests/ on the path: the shared fixtures (sample_kernels, standin_driver) import by name from any test folder
sys.path.insert(0, os.path.dirname(__file__))


@pytest.fixture(scope="module")
def ip():
    """An IPython shell with the workbench's extension loaded, for a test module's %%tlx cells (module scope)."""
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "workbench")
    yield shell
    shell.run_line_magic("unload_ext", "workbench")
