"""IPython integration: ``%load_ext workbench`` registers the ``%%tlx`` cell and ``%tlx`` line magics."""

from __future__ import annotations

from workbench.magic.capture import intercept_launch
from workbench.magic.magic import TlxMagics, load_ipython_extension, unload_ipython_extension

__all__ = ["TlxMagics", "intercept_launch", "load_ipython_extension", "unload_ipython_extension"]
