"""Every place the workbench reaches inside Triton rather than through a public hook, in one module.

Triton 3.8 gives no public API for these; each is pinned by ``tests/compile/test_triton_reach.py``
against the installed (exactly pinned) Triton, so an upgrade fails one test here instead of
misbehaving elsewhere.

- ``jit_file_line``: where a ``JITFunction`` was defined (``file_name``/``def_file_line_number``).
- ``specialize``: the JIT's own argument binder and packer (``create_function_from_signature`` and
  ``JITFunction._pack_args``), so a compile sees exactly the specialization a launch would.
- ``warp_groups``: the register budgets Triton gives each ``ttg.warp_specialize`` partition, by
  running its ``allocate-warp-groups`` pass on a copy of the final TTGIR (the attribute it writes,
  ``actualRegisters``, exists only inside the LLIR lowering otherwise).
- ``active_driver``: a stand-in for ``triton.runtime.driver.active`` for the length of a block, then
  exactly what was there before (``DriverConfig._active``: ``reset_active()`` raises with no GPU).
- ``jit_options``: what ``triton.jit`` was given for a ``JITFunction`` (``_repr`` among them), so that
  another process can build the same kernel again (``workbench.compile.portable``).
- ``autotuner_key``: the key under which ``Autotuner.run`` caches its choice for a launch's arguments, so a
  winner found elsewhere can be fixed on the autotuner (``workbench.search.autotune``).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from typing import Any


def jit_file_line(fn: Any) -> tuple[str, int]:
    """(file, first line of the decorated function) of a ``JITFunction``."""
    return fn.file_name, fn.def_file_line_number


def specialize(fn: Any, backend: Any, args: tuple, kwargs: dict[str, Any]) -> tuple[Any, dict, dict, dict]:
    """(options, signature, constexprs, attrs) exactly as ``JITFunction.run`` computes them."""
    from triton import knobs
    from triton.runtime.jit import create_function_from_signature

    binder = create_function_from_signature(fn.signature, fn.params, backend)
    bound_args, specialization, options = binder(*args, **kwargs)
    hook = knobs.runtime.add_stages_inspection_hook
    if hook is not None:
        # JITFunction.run appends this entry (a string, as Triton 3.8 writes it) when a stages hook is installed
        # (uTLX always installs one); _pack_args turns it into an extra attrs path, which is part of the cache
        # key: without it the JIT's compile after ours misses the cache and compiles the kernel again.
        specialization.append(f'("custom_pipeline", {hook()[1]})')
    return fn._pack_args(backend, kwargs, bound_args, specialization, options)


_WS_ATTRS = re.compile(r"ttg\.warp_specialize\(.*?\)\s+attributes\s*\{([^}]*)\}")
_ARRAY = re.compile(r"(\w+) = array<i32(?::\s*([-\d,\s]*))?>")


def warp_groups(ttgir: str, gpu_target: Any) -> list[dict[str, list[int]]]:
    """Per ``ttg.warp_specialize`` op: ``actualRegisters`` (default task first), ``requestedRegisters``
    and ``warpGroupStartIds``, as Triton's allocate-warp-groups pass computes them. Empty when the
    module has no warp specialization or cannot be re-parsed."""
    if "ttg.warp_specialize" not in ttgir:
        return []
    import os
    import tempfile

    from triton._C.libtriton import ir, passes
    from triton.compiler import make_backend

    ctx = ir.context()
    ir.load_dialects(ctx)
    make_backend(gpu_target).load_dialects(ctx)
    with tempfile.NamedTemporaryFile("w", suffix=".ttgir", delete=False) as f:
        f.write(ttgir)
    try:
        mod = ir.parse_mlir_module(f.name, ctx)
        pm = ir.pass_manager(ctx)
        passes.ttgpuir.add_allocate_warp_groups(pm, False)
        pm.run(mod, "allocate_warp_groups")
        text = str(mod)
    except Exception:
        return []
    finally:
        os.unlink(f.name)
    out = []
    for m in _WS_ATTRS.finditer(text):
        arrays = {name: [int(x) for x in (vals or "").replace(" ", "").split(",") if x]
                  for name, vals in _ARRAY.findall(m.group(1))}
        out.append(arrays)
    return out


@contextlib.contextmanager
def active_driver(stand_in: Any) -> Iterator[Any]:
    """Make ``stand_in`` Triton's active driver inside the block (code that asks
    ``triton.runtime.driver.active`` for its target or torch device gets it), then restore the previous
    one as it was: ``None`` stays ``None`` (resolved lazily later), since ``reset_active()`` would build
    the default driver, which raises on a machine with no GPU."""
    from triton.runtime import driver

    previous = driver._active
    driver.set_active(stand_in)
    try:
        yield stand_in
    finally:
        driver._active = previous


_JIT_OPTIONS = ("version", "do_not_specialize", "do_not_specialize_on_alignment", "debug", "noinline",
                "launch_metadata")


def jit_options(fn: Any) -> dict[str, Any]:
    """The keyword arguments ``JITFunction(fn.fn, **options)`` needs to build ``fn`` again."""
    out = {k: getattr(fn, k) for k in _JIT_OPTIONS}
    out["repr"] = fn._repr
    return out


def autotuner_key(tuner: Any, args: tuple, kwargs: dict[str, Any]) -> tuple:
    """``Autotuner.run``'s cache key: the values of its ``key`` arguments, then the dtype of every argument
    that has one, in argument order."""
    all_args = {**dict(zip(tuner.arg_names, args)), **kwargs}
    named = {k: v for k, v in all_args.items() if k in tuner.arg_names}
    key = [named[k] for k in tuner.keys if k in named]
    key += [str(v.dtype) for v in named.values() if hasattr(v, "dtype")]
    return tuple(key)
