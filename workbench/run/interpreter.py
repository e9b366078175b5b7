"""Plain ``@triton.jit`` kernels on CPU tensors, run by Triton's interpreter (no GPU needed).

Triton's interpreter (3.8, ``triton/runtime/interpreter.py``) changes the process while it runs, and
``interpret`` undoes all of it, exactly, when the kernel returns (or raises):

- ``_patch_lang`` replaces every builtin of ``tl``/``tl.core``/``tl.math``, ``tl.tensor``, ``tl.dtype``
  and ``tensor_descriptor_base`` (plus ``range``, ``reduce``, ``dtype.to_ir``, ...) with interpreter
  versions. The grid executor restores its own patches (not exactly: an inherited attribute such as
  ``tensor.__repr__`` comes back as an attribute of the class itself), but a device-function call
  (``InterpretedFunction.__call__``) patches again with the language modules its function's module
  sees and never restores: ``tl.cdiv``'s module sees ``tl.core``, so after a kernel that called it,
  ``tl.core``'s builtins stayed interpreter versions and every later compile in the process failed
  ("'block_argument' object has no attribute 'dtype'"). ``_snapshot`` records the ``__dict__`` of those
  modules and of every class they define, ``_restore`` puts each back as it was.
- ``FunctionRewriter`` adds the interpreter module's globals to the module of every function it
  rewrites (the kernel's, each helper's, ``triton.language.standard`` for ``tl.cdiv``); they are taken
  out again, and the rewritten functions leave the interpreter's cache.

It also computes ``tl.dot`` on bf16 operands as integers (bf16 is held as ``uint16``): the dot is
upcast to fp32 first here (exact: a bf16 product fits in fp32; the accumulator is fp32, as on the GPU).
Other bf16 arithmetic it gets wrong too; ``interpreter_limits`` keeps such kernels from running here.

Every load, store and atomic is checked against the launch's tensors before it touches memory
(``interpreter_bounds``): an out-of-bounds access is an error at its line, not a corrupted notebook.
"""

from __future__ import annotations

import types
from typing import Any

from workbench.compile.tuners import base_jit
from workbench.run.interpreter_bounds import OutOfBoundsError, at_line, checked, regions_of

_MISSING = object()


def _patchable() -> list[Any]:
    """What the interpreter may patch: ``tl``, ``tl.core``, ``tl.math`` and the classes they define."""
    import triton.language as tl
    from triton.runtime import interpreter as ti

    out: list[Any] = [tl, tl.core, tl.math, ti.interpreter_builder]
    for mod in (tl, tl.core, tl.math):
        for v in vars(mod).values():
            if isinstance(v, type) and v.__module__.startswith("triton.language") and v not in out:
                out.append(v)
    return out


def _snapshot(objs: list[Any]) -> list[tuple[Any, dict[str, Any]]]:
    return [(o, dict(vars(o))) for o in objs]


def _restore(saved: list[tuple[Any, dict[str, Any]]]) -> None:
    """Each object's attributes exactly as recorded (a module keeps a submodule imported meanwhile)."""
    for obj, before in saved:
        now = vars(obj)
        for name in [n for n in now if n not in before]:
            if not isinstance(now[name], types.ModuleType):
                delattr(obj, name)
        for name, value in before.items():
            if now.get(name, _MISSING) is not value:
                setattr(obj, name, value)


def _dot_upcasting_bf16(builder: Any) -> Any:
    """``builder.create_dot`` with bf16 operands widened to fp32 (their exact values) first."""
    import numpy as np
    import triton.language as tl
    from triton.runtime.interpreter import TensorHandle

    orig = builder.create_dot

    def widen(h: Any) -> Any:
        if h.dtype != tl.bfloat16:
            return h
        return TensorHandle((h.data.astype(np.uint32) << 16).view(np.float32), tl.float32)

    def create_dot(a, b, d, input_precision, max_num_imprecise_acc):
        return orig(widen(a), widen(b), d, input_precision, max_num_imprecise_acc)

    return create_dot


def interpret(kernel: Any, args: tuple, kwargs: dict[str, Any], grid: Any) -> None:
    """Run a plain ``@triton.jit`` kernel on CPU tensors with Triton's interpreter; leave the process as it was."""
    from triton.runtime import interpreter as ti
    from triton.runtime.jit import JITFunction

    fn = base_jit(kernel).fn
    helpers: dict[Any, Any] = {}
    globs: dict[int, tuple[dict[str, Any], set[str]]] = {id(fn.__globals__): (fn.__globals__, set(fn.__globals__))}
    saved = _snapshot(_patchable())
    orig_call = JITFunction.__dict__["__call__"]

    def call(self, *a, **k):  # device-function calls made by the kernel
        f = helpers.get(self.fn)
        if f is None:
            g = self.fn.__globals__
            globs.setdefault(id(g), (g, set(g)))
            f = helpers[self.fn] = ti.InterpretedFunction(self.fn)
        return f(*a, **k)

    JITFunction.__call__ = call
    ti.interpreter_builder.create_dot = _dot_upcasting_bf16(ti.interpreter_builder)
    regions = regions_of(dict(zip(base_jit(kernel).arg_names, args)) | kwargs)
    try:
        with checked(ti.interpreter_builder, regions):  # an out-of-bounds access raises at its line, touching nothing
            ti.InterpretedFunction(fn).run(*args, grid=grid, warmup=False, **kwargs)
    except ti.InterpreterError as e:
        if isinstance(e.__cause__, OutOfBoundsError):  # the interpreter wraps it: give it back, at the kernel's line
            raise at_line(e.__cause__, fn.__code__.co_filename) from None
        raise
    finally:
        JITFunction.__call__ = orig_call
        _restore(saved)
        for g, keep in globs.values():
            for name in set(g) - keep:
                del g[name]
        for f in [fn, *helpers]:
            ti.InterpretedFunction.rewritten_fn.pop(f, None)
