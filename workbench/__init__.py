"""TLX Workbench: write, compile, inspect, check, run and profile TLX GPU kernels (real TLX: triton-utlx).

``workbench.compile(kernel, *args, target="sm_90", **options)`` returns an Artifact with every
compiler stage, source maps, metadata and layouts, with no GPU needed. ``%load_ext workbench``
registers the ``%%tlx`` cell magic.
"""

from __future__ import annotations

from workbench._version import __version__
from workbench.errors import (
    ArgumentError,
    CheckError,
    CompileError,
    TargetError,
    ToolError,
    WorkbenchError,
)

__all__ = [
    "__version__",
    "Artifact",
    "ArgumentError",
    "CheckError",
    "CompileError",
    "TargetError",
    "ToolError",
    "WorkbenchError",
    "autotune",
    "check",
    "compare",
    "compile",
    "evaluate",
    "export",
    "load_ipython_extension",
    "search",
    "stress",
    "unload_ipython_extension",
]


# Bind the function over the subpackage of the same name (workbench.compile and workbench.check are both).
from workbench.check import check  # noqa: E402
from workbench.compile import compile  # noqa: E402
from workbench.ir.artifact import Artifact  # noqa: E402
from workbench.report.diff import compare  # noqa: E402
from workbench.report.export import export  # noqa: E402
from workbench.search import autotune, search  # noqa: E402
from workbench.search.evaluate import evaluate  # noqa: E402
from workbench.search.stress import stress  # noqa: E402

_SUBPACKAGES = {"analyse": "workbench.analyse", "check": "workbench.check", "run": "workbench.run",
                "measure": "workbench.measure", "report": "workbench.report", "magic": "workbench.magic",
                # the per-role timelines are part of measure; workbench.timeline is their short name
                "timeline": "workbench.measure.timeline"}


def __getattr__(name: str):
    if name in _SUBPACKAGES:
        import importlib

        return importlib.import_module(_SUBPACKAGES[name])
    raise AttributeError(name)


def load_ipython_extension(ipython) -> None:
    from workbench.magic import load_ipython_extension as _load

    _load(ipython)


def unload_ipython_extension(ipython) -> None:
    from workbench.magic import unload_ipython_extension as _unload

    _unload(ipython)
