"""IPython integration: ``%load_ext workbench`` registers the ``%%tlx`` cell and ``%tlx`` line magics."""

from __future__ import annotations

from workbench.magic.magic import TlxMagics, load_ipython_extension, unload_ipython_extension

__all__ = ["TlxMagics", "load_ipython_extension", "unload_ipython_extension"]
