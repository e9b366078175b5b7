"""The Python a reproducer script needs, as source text: a kernel, the ``@triton.jit`` helpers, functions,
classes and constants it uses, and imports of what an installed library provides.

A name a piece of code uses is found from its compiled code (the ``LOAD_GLOBAL`` instructions, nested code
included: exact, where a source scan would mistake a local ``a`` for the notebook's tensor ``a``), plus its
decorators and defaults. Its value decides how the script gets it:

- a module, function or class of an installed library (the standard library, site-packages, or a distribution
  installed elsewhere, as on a machine whose Triton sits in a site dir of its own; never ``workbench`` or
  ``tlx_kernels``, which the script must not need): an ``import`` line;
- anything else defined in Python (the notebook's cells, ``tlx_kernels``, workbench's own helpers): its
  source, copied in, then what that source uses, recursively;
- a value: a literal (numbers, strings, tuples, ``tl.constexpr``, Triton and torch dtypes).

What cannot be written (a closure, an object with no literal) is a ``problem``: a sentence saying which
name and why, which the script's header repeats.
"""

from __future__ import annotations

import ast
import builtins
import dis
import functools
import inspect
import math
import os
import sys
import sysconfig
import textwrap
import types
from typing import Any

__all__ = ["Sources", "literal", "portable"]

_LIBRARY_DIRS = tuple(sorted({os.path.realpath(sysconfig.get_paths()[k]) + os.sep
                              for k in ("stdlib", "platstdlib", "purelib", "platlib")}))
_NEVER = ("workbench", "tlx_kernels", "__main__")  # never needed where a reproducer runs


@functools.cache
def _distributed() -> frozenset[str]:
    """Top-level names that installed distributions provide (``importlib.metadata``), wherever they sit."""
    from importlib.metadata import packages_distributions

    return frozenset(packages_distributions())


def portable(module: Any) -> bool:
    """Whether a module is installed library code that a plain ``python`` elsewhere can import by name: the
    standard library, site-packages, or any installed distribution (Triton unpacked into a site dir of its own
    is one: its path says nothing, its metadata does)."""
    name = getattr(module, "__name__", "") or ""
    top = name.split(".")[0]
    if top in _NEVER:
        return False
    path = getattr(module, "__file__", None)
    if path is None:
        return name in sys.builtin_module_names or top in sys.builtin_module_names
    installed = os.path.realpath(path).startswith(_LIBRARY_DIRS) or top in _distributed()
    # a file of site-packages loaded under a name of its own (spec_from_file_location, as a tutorial runner loads
    # Meta's tutorials) cannot be imported by that name: its code is copied instead
    return installed and _reached_by_name(name, path)


def _reached_by_name(name: str, path: str) -> bool:
    """Whether ``import name`` finds the file ``path`` from a folder on ``sys.path`` (nothing is imported)."""
    real = os.path.realpath(path)
    for root in sys.path:
        base = os.path.join(os.path.realpath(root or "."), *name.split("."))
        package = real == os.path.join(base, "__init__.py")
        if package or (real.startswith(base + ".") and os.sep not in real[len(base):]):  # .py, .so, ...
            return True
    return False


def _import_name(module: Any) -> str:
    """The name to import a module by: the ``triton.*`` alias of a plugin module (uTLX's ``tlx``) first."""
    names = [k for k, v in list(sys.modules.items()) if v is module] or [module.__name__]
    return sorted(names, key=lambda k: (not k.startswith("triton."), len(k)))[0]


def _import_line(alias: str, module_name: str, attr: str | None = None) -> str:
    if attr is not None:
        return f"from {module_name} import {attr}" + (f" as {alias}" if alias != attr else "")
    if alias == module_name:
        return f"import {module_name}"
    parent, _, last = module_name.rpartition(".")
    if parent and last == alias:
        return f"from {parent} import {last}"
    return f"import {module_name} as {alias}"


def _dtype_literal(v: Any) -> str | None:
    import triton.language as tl

    if isinstance(v, tl.dtype):
        names = sorted(n for n in dir(tl) if not n.startswith("_") and getattr(tl, n, None) == v
                       and isinstance(getattr(tl, n), tl.dtype))
        return f"tl.{names[0]}" if names else None
    if type(v).__module__ == "torch" and type(v).__name__ == "dtype":
        return str(v)
    return None


def literal(v: Any) -> str | None:
    """Python source that evaluates to ``v`` in a script that imports ``torch``, ``triton`` and ``tl``; None
    when there is none."""
    if v is None or isinstance(v, (bool, int, str)):
        return repr(v)
    if isinstance(v, float):
        return repr(v) if math.isfinite(v) else f'float("{v}")'
    if isinstance(v, (tuple, list)):
        items = [literal(x) for x in v]
        if any(x is None for x in items):
            return None
        body = ", ".join(items) + ("," if isinstance(v, tuple) and len(items) == 1 else "")
        return f"({body})" if isinstance(v, tuple) else f"[{body}]"
    if isinstance(v, (set, frozenset)):
        items = sorted((literal(x) for x in v), key=str)
        if any(x is None for x in items):
            return None
        return f"{type(v).__name__}([{', '.join(items)}])"
    if isinstance(v, dict):
        pairs = [(literal(k), literal(x)) for k, x in v.items()]
        if any(a is None or b is None for a, b in pairs):
            return None
        return "{" + ", ".join(f"{a}: {b}" for a, b in pairs) + "}"
    if type(v).__name__ == "constexpr" and type(v).__module__.startswith("triton"):
        inner = literal(v.value)
        return None if inner is None else f"tl.constexpr({inner})"
    return _dtype_literal(v)


def _global_names(code: types.CodeType) -> list[str]:
    out = [i.argval for i in dis.get_instructions(code) if i.opname in ("LOAD_GLOBAL", "LOAD_NAME")]
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            out += _global_names(c)
    return list(dict.fromkeys(out))


def _header_names(source: str) -> list[str]:
    """Names a ``def``/``class`` uses where it is defined: decorators, defaults, bases, annotations of a class
    body (a function's own names come from its code)."""
    tree = ast.parse(source)
    node = tree.body[0]
    parts: list[ast.AST] = list(getattr(node, "decorator_list", []))
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        parts += [d for d in node.args.defaults + node.args.kw_defaults if d is not None]
    elif isinstance(node, ast.ClassDef):  # its methods' own names come from their code (``_method_names``)
        parts += node.bases + node.keywords
        for stmt in node.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                parts += stmt.decorator_list + [d for d in stmt.args.defaults + stmt.args.kw_defaults if d is not None]
            else:
                parts.append(stmt)
    return list(dict.fromkeys(n.id for p in parts for n in ast.walk(p)
                              if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)))


def _method_names(cls: type) -> list[str]:
    """The global names the methods (and properties) of a class use."""
    out: list[str] = []
    for v in vars(cls).values():
        fns = [v.fget, v.fset] if isinstance(v, property) else [getattr(v, "__func__", v)]
        own = [f for f in fns if inspect.isfunction(f) and f.__module__ == cls.__module__
               and f.__code__.co_filename == inspect.getfile(cls)]  # not what a decorator generated (dataclass)
        out += [n for f in own for n in _global_names(f.__code__)]
    return list(dict.fromkeys(out))


def _attributes(source: str) -> dict[str, set[str]]:
    """name -> the attributes ``source`` reads of it (``dev.kv_blocks``: {'dev': {'kv_blocks'}})."""
    out: dict[str, set[str]] = {}
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            out.setdefault(node.value.id, set()).add(node.attr)
    return out


def _is_cached_function(v: Any) -> bool:
    """A ``functools.cache``/``lru_cache`` function: its source (decorator included) is copied like a function's."""
    return type(v).__name__ == "_lru_cache_wrapper" and inspect.isfunction(getattr(v, "__wrapped__", None))


def _is_jit(v: Any) -> bool:
    return hasattr(v, "params") and hasattr(v, "arg_names") and hasattr(v, "src") and hasattr(v, "fn")


class Sources:
    """The script's top level: import lines, then copied sources (what they use first), under unique names."""

    def __init__(self, reserved: dict[str, Any] | None = None) -> None:
        self.imports: dict[str, str] = {}  # script name -> import line
        self.blocks: list[str] = []  # sources and constants, each after what it uses
        self.bound: dict[str, Any] = {}  # script name -> the object it is
        self.problems: list[str] = []
        self._ids: dict[int, str] = {}
        self._module_attrs: dict[str, set[str]] = {}
        for name, value in (reserved or {}).items():
            self.need(name, value)

    # ------------------------------------------------------------------ names
    def name_of(self, value: Any) -> str | None:
        return self._ids.get(id(value))

    def free(self, preferred: str) -> str:
        """``preferred`` if the script does not use it yet, else ``preferred_2``, ``_3``..."""
        name, i = preferred, 2
        while name in self.bound or hasattr(builtins, name):
            name, i = f"{preferred}_{i}", i + 1
        return name

    def reserve(self, preferred: str, value: Any) -> str:
        """A free name, now meaning ``value`` (a variable of the script's ``main``: kept apart from the top
        level's names)."""
        name = self.free(preferred if preferred.isidentifier() else "t")
        self.bound[name] = value
        return name

    def _bind(self, name: str, value: Any) -> bool:
        held = self.bound.get(name, self)
        if held is not self and held is not value:
            self.problems.append(f"two different objects are called {name!r} (the script can hold one)")
            return False
        self.bound[name] = value
        if isinstance(value, types.ModuleType) or _is_jit(value) or inspect.isroutine(value) or inspect.isclass(value):
            self._ids.setdefault(id(value), name)
        return True

    # ------------------------------------------------------------------ the one entry point
    def need(self, name: str, value: Any, used_by: str = "the kernel", attrs: set[str] | None = None) -> str | None:
        """Make ``name`` mean ``value`` in the script (code refers to it by that name; ``attrs``: what it reads
        of it, for a module); the name, or None when a problem was recorded."""
        if isinstance(value, types.ModuleType):
            return self._module(name, value, used_by, attrs or set())
        if name in self.bound and self.bound[name] is value:
            return name
        if _is_jit(value) or inspect.isfunction(value) or inspect.isclass(value) or _is_cached_function(value):
            return self._code(name, value, used_by)
        if inspect.isbuiltin(value):
            return self._library_attr(name, value, used_by)
        text = literal(value)
        if text is None:
            self.problems.append(f"{name} (used by {used_by}) is a {type(value).__name__}, which a script cannot "
                                 "write as a value")
            return None
        if not self._bind(name, value):
            return None
        self.blocks.append(f"{name} = {text}")
        return name

    def any_name(self, preferred: str, value: Any, used_by: str) -> str | None:
        """A name for ``value`` when the caller may choose it (an expression being rewritten): the one it has,
        else ``preferred`` or a free variant of it."""
        known = self.name_of(value)
        if known is not None:
            return known
        if isinstance(value, types.ModuleType) or _is_jit(value) or inspect.isfunction(value) \
                or inspect.isclass(value):
            own = getattr(getattr(value, "fn", value), "__name__", preferred)
            if own not in self.bound:
                return self.need(own, value, used_by)
        return self.need(self.free(preferred), value, used_by)

    # ------------------------------------------------------------------ kinds
    def _module(self, name: str, module: Any, used_by: str, attrs: set[str]) -> str | None:
        if portable(module):
            if self._bind(name, module):
                self.imports[name] = _import_line(name, _import_name(module))
                return name
            return None
        # not importable where the script runs (tlx_kernels, a notebook's module): a module object of its own
        # that holds what the code reads of it (Triton looks up attributes of modules in a kernel)
        if self.bound.get(name) is not module:
            if not self._bind(name, module):
                return None
            self.need("types", types)
            self.blocks.append(f"{name} = types.ModuleType({module.__name__!r})  # what the code below uses of it")
        done = self._module_attrs.setdefault(name, set())
        for attr in sorted(attrs - done):
            done.add(attr)
            if not hasattr(module, attr):
                self.problems.append(f"{name}.{attr} (used by {used_by}) does not exist")
                continue
            value = getattr(module, attr)
            own = self.any_name(attr, value, f"{used_by} as {name}.{attr}")
            if own is not None:
                self.blocks.append(f"{name}.{attr} = {own}")
        return name

    def _library_attr(self, name: str, value: Any, used_by: str) -> str | None:
        mod = sys.modules.get(getattr(value, "__module__", None) or "")
        attr = getattr(value, "__qualname__", getattr(value, "__name__", ""))
        if getattr(builtins, name, None) is value:
            return name
        if mod is None or not portable(mod) or getattr(mod, attr, None) is not value:
            self.problems.append(f"{name} (used by {used_by}) cannot be imported by name")
            return None
        if self._bind(name, value):
            self.imports[name] = _import_line(name, _import_name(mod), attr)
            return name
        return None

    def _code(self, name: str, value: Any, used_by: str) -> str | None:
        fn = value.fn if _is_jit(value) else value.__wrapped__ if _is_cached_function(value) else value
        mod = sys.modules.get(getattr(fn, "__module__", None) or "")
        qual = getattr(fn, "__qualname__", "")
        if mod is not None and portable(mod) and getattr(mod, qual, None) is value:
            if self._bind(name, value):
                self.imports[name] = _import_line(name, _import_name(mod), qual)
                return name
            return None
        if "." in qual or getattr(fn, "__closure__", None):
            self.problems.append(f"{name} (used by {used_by}) is defined inside another function: copy it to the "
                                 "top level of its cell or module to export it")
            return None
        own = fn.__name__
        known = self.name_of(value)
        if known is not None:  # its source is in already: another name for it
            if self._bind(name, value):
                self.blocks.append(f"{name} = {known}")
                return name
            return None
        if not self._bind(own, value):
            return None
        if own != name and not self._bind(name, value):
            return None
        try:
            src = self._source_of(value)
        except (OSError, TypeError) as e:
            self.problems.append(f"the source of {own} (used by {used_by}) is not available: {e}")
            return own
        scope = fn.__globals__ if hasattr(fn, "__globals__") else vars(mod) if mod else {}
        names = _header_names(src) + (_global_names(fn.__code__) if hasattr(fn, "__code__") else
                                      _method_names(fn) if inspect.isclass(fn) else [])
        reads = _attributes(src)
        for n in names:
            if n in scope:
                self.need(n, scope[n], own, reads.get(n))
            elif not hasattr(builtins, n):
                self.problems.append(f"{own} uses {n!r}, which is not defined where it was written")
        self.blocks.append(src if own == name else f"{src}\n\n{name} = {own}")
        return name

    def _source_of(self, value: Any) -> str:
        if _is_jit(value):
            self.need("triton", sys.modules["triton"])
            gluon = getattr(value, "is_gluon", lambda: False)()
            if gluon:
                from triton.experimental import gluon as gluon_module

                self.need("gluon", gluon_module)
            return f"@{'gluon' if gluon else 'triton'}.jit{_jit_arguments(value)}\n{textwrap.dedent(value.src)}"
        return textwrap.dedent(inspect.getsource(value))

    # ------------------------------------------------------------------ output
    def text(self, after_imports: str = "") -> str:
        """The imports (sorted), ``after_imports``, then the blocks, each separated by two blank lines."""
        lines = sorted(set(self.imports.values()), key=lambda s: (s.startswith("from"), s))
        blocks = [b.rstrip() for b in ([after_imports] if after_imports else []) + self.blocks]
        return "\n".join(lines) + "\n\n\n" + "\n\n\n".join(blocks) + "\n"


def _jit_arguments(fn: Any) -> str:
    """What ``triton.jit`` was given beyond its defaults, as call arguments."""
    from workbench.compile.triton_reach import jit_options

    given = {k: v for k, v in jit_options(fn).items() if v and k not in ("repr", "launch_metadata")}
    parts = [f"{k}={literal(v)}" for k, v in given.items() if literal(v) is not None]
    return f"({', '.join(parts)})" if parts else ""
