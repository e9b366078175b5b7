"""Kernels (and the Python that comes with them) as bytes another process can load: the search's compile
tasks and GPU workers get the user's kernel this way, on this machine or another.

A ``JITFunction`` cannot be pickled as it is (it holds locks and per-device caches). ``dumps`` writes each
one as either

- a reference (module and name), when its module can be imported by name (a library kernel: the other
  process imports it), or
- its Python function by value (cloudpickle: the code and the globals it uses, other kernels among them)
  with the lines of the file or cell it was written in, so that Triton, which reads a kernel's source
  from ``linecache``, finds the same lines at the same numbers there; ``loads`` registers them and builds
  the ``JITFunction`` again with what ``triton.jit`` was given. Same source, same lines: the same
  Triton cache key, so a kernel compiled there is the kernel that would be compiled here.

Functions of modules that are loaded but cannot be imported by name (a notebook's, a file loaded by path)
go by value too, hooks such as an autotune config's ``pre_hook`` included.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import io
import linecache
import pickle
import sys
import types
from typing import Any

import cloudpickle

from workbench.compile.triton_reach import jit_options

__all__ = ["dumps", "loads"]


@functools.lru_cache(maxsize=4096)
def _importable(module_name: str) -> bool:
    """Could a fresh process import this module by name? (``importlib.util.find_spec`` answers from
    ``sys.modules`` for a loaded module, so the finders are asked themselves.)"""
    if module_name == "__main__":
        return False
    parent, _, _ = module_name.rpartition(".")
    path = None
    if parent:
        if not _importable(parent):
            return False
        path = getattr(sys.modules.get(parent), "__path__", None)
        if path is None:
            return False
    for finder in sys.meta_path:
        find = getattr(finder, "find_spec", None)
        try:
            if find is not None and find(module_name, path) is not None:
                return True
        except Exception:
            continue
    return False


def _by_reference(fn: Any) -> bool:
    mod = sys.modules.get(fn.module)
    return _importable(fn.module) and getattr(mod, fn.__name__, None) is fn


def _lines(filename: str) -> list[str]:
    return list(linecache.getlines(filename))


def _import_jit(module_name: str, name: str) -> Any:
    return getattr(importlib.import_module(module_name), name)


def _rebuild_jit(fn: Any, filename: str, lines: list[str], options: dict[str, Any]) -> Any:
    from triton.runtime.jit import JITFunction

    # cloudpickle writes code objects with the file name "<dynamic-code>"; Triton reads the source, and names
    # its locations, by the real one
    fn.__code__ = fn.__code__.replace(co_filename=filename)
    if lines and not linecache.getlines(filename):
        # mtime None: linecache keeps the entry although no such file exists here (as IPython does for cells)
        linecache.cache[filename] = (sum(map(len, lines)), None, lines, filename)
    return JITFunction(fn, **options)


class _Pickler(cloudpickle.Pickler):
    """cloudpickle, with kernels as above and the functions of unimportable modules by value."""

    def __init__(self, file: Any) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.by_value: list[Any] = []

    def reducer_override(self, obj: Any) -> Any:
        from triton.runtime.jit import JITFunction

        if isinstance(obj, JITFunction):
            if _by_reference(obj):
                return _import_jit, (obj.module, obj.__name__)
            return _rebuild_jit, (obj.fn, obj.file_name, _lines(obj.file_name), jit_options(obj))
        if isinstance(obj, types.FunctionType | type):
            self._maybe_by_value(getattr(obj, "__module__", None))
        return super().reducer_override(obj)

    def _maybe_by_value(self, module_name: str | None) -> None:
        mod = sys.modules.get(module_name or "")
        if mod is None or module_name == "__main__" or mod in self.by_value or _importable(module_name):
            return
        with contextlib.suppress(ValueError):
            cloudpickle.register_pickle_by_value(mod)
            self.by_value.append(mod)

    def release(self) -> None:
        for mod in self.by_value:
            with contextlib.suppress(ValueError):
                cloudpickle.unregister_pickle_by_value(mod)
        self.by_value = []


def dumps(obj: Any) -> bytes:
    """``obj`` (a kernel, a hook, a config, or anything holding them) as bytes for ``loads`` elsewhere."""
    buf = io.BytesIO()
    pickler = _Pickler(buf)
    try:
        pickler.dump(obj)
    finally:
        pickler.release()
    return buf.getvalue()


def loads(data: bytes) -> Any:
    """What ``dumps`` wrote, with its kernels built again in this process."""
    return pickle.loads(data)
