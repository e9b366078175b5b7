"""Every place the kernel library reaches inside Triton for its cached launches (:mod:`tlx_kernels.launch`).

Triton 3.8 has no public call that launches a compiled kernel with arguments prepared once. These are the
pieces, each pinned by ``tests/kernels/test_launch_reach.py`` against the installed (exactly pinned) Triton,
so an upgrade fails a test there instead of launching wrongly:

- :func:`jit_state`: what, besides the arguments, decides which compiled kernel ``JITFunction.run`` launches
  and how (a patched ``run``, as the ``%%tlx`` capture installs; the stages hook, the instrumentation mode and
  the debug flag, which enter the JIT's cache key; whether anything listens to the launch hooks, which the C
  launcher calls). A cached launch is valid only while it is unchanged, and made only while no hook listens.
- :class:`CompiledLaunch`: a ``CompiledKernel``'s C launcher (``driver.active.utils.launch``, called as
  ``CudaLauncher.__call__`` calls it) with the handles it needs, and Triton's own expansion of
  ``TensorDescriptor`` arguments into TMA descriptors (``wrap_handle_tensordesc``), so that the expansion runs
  once per set of data pointers instead of once per launch.
- :func:`run_wrapped`: whether ``JITFunction.run`` is wrapped by something that marks it (``__wrapped__``: the
  ``%%tlx`` capture): then no plan is made, so that every launch reaches it.
- :func:`at_address`: a ``TensorDescriptor`` like another over a given device address (what the expansion
  reads of a descriptor's base is ``data_ptr()`` and, when the descriptor is built, ``dtype``).
- :func:`current_device` and :func:`current_stream`: what ``JITFunction.run`` launches on.

Nothing here imports the workbench: the library stands on Triton, TLX and torch.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any


def _listening(hook: Any) -> bool:
    # Triton 3.8's launch hooks are HookChain objects, empty unless something was added (older: None or a callable)
    return hook is not None and bool(getattr(hook, "calls", True))


def hooks_set() -> bool:
    """Whether anything listens to Triton's launch hooks (a profiler, a tracer)."""
    from triton import knobs

    return _listening(knobs.runtime.launch_enter_hook) or _listening(knobs.runtime.launch_exit_hook)


def jit_state(kernel: Any) -> tuple:
    """What decides, besides the arguments, which compiled kernel ``kernel[grid](...)`` launches and how."""
    from triton import knobs

    rt = knobs.runtime
    return (type(kernel).run, rt.add_stages_inspection_hook, knobs.compilation.instrumentation_mode, rt.debug,
            _listening(rt.launch_enter_hook) or _listening(rt.launch_exit_hook))


def run_wrapped(kernel: Any) -> bool:
    """Whether ``kernel[grid]`` goes through a wrapper of ``JITFunction.run`` that marks what it wraps
    (``__wrapped__``, as the workbench's ``%%tlx`` capture and ``functools.wraps`` do): something that wants to
    see every launch. uTLX's own wrapper (``ctas_per_cga``) carries no such mark."""
    return hasattr(type(kernel).run, "__wrapped__")


def is_compiled(obj: Any) -> bool:
    """Whether ``obj`` is what ``JITFunction.run`` returns after a launch (not a capture's stand-in)."""
    from triton.compiler.compiler import CompiledKernel

    return isinstance(obj, CompiledKernel)


def device_getter():
    """``get() -> device index``: the device ``JITFunction.run`` launches on (the current CUDA device)."""
    from triton.runtime import driver

    return driver.active.get_current_device


def current_device() -> int:
    return device_getter()()


def stream_getter():
    """``get(device) -> raw stream``: the current torch stream of a device, as ``JITFunction.run`` asks for it."""
    from triton.runtime import driver

    return driver.active.get_current_stream


def current_stream(device: int) -> int:
    return stream_getter()(device)


class _Address:
    """A device address standing in for a descriptor's base tensor: Triton's launcher reads ``data_ptr()``."""

    __slots__ = ("ptr", "dtype")

    def __init__(self, ptr: int, dtype: Any) -> None:
        self.ptr, self.dtype = ptr, dtype

    def data_ptr(self) -> int:
        return self.ptr


def at_address(desc: Any, ptr: int) -> Any:
    """``desc`` (a ``TensorDescriptor``) with its base at device address ``ptr`` (checked as Triton checks a base)."""
    return dataclasses.replace(desc, base=_Address(ptr, desc.base.dtype))


def _last(*args: Any) -> Any:
    return args[-1]


class CompiledLaunch:
    """Launches one ``CompiledKernel`` (loaded on the current device) through Triton's C launcher.

    ``expand(values)`` turns every parameter's value, in order (``TensorDescriptor`` objects included), into
    the flat argument list the C launcher takes, exactly as ``CudaLauncher`` does before each launch;
    ``launch(grid, stream, flat)`` launches with it. Construction raises ``ValueError`` (the reason) for a
    kernel this path does not serve: one that needs global or profile scratch memory per launch, or runs
    under the global sanitizer; those keep Triton's own launch.
    """

    __slots__ = ("_c", "function", "packed", "coop", "pdl", "annotations", "signature", "expand", "arg_types")

    def __init__(self, compiled: Any) -> None:
        from triton.backends.nvidia.driver import wrap_handle_tensordesc
        from triton.runtime import driver

        run = compiled.run  # loads the module on the current device (CompiledKernel._init_handles)
        if run.global_scratch_size or run.profile_scratch_size:
            raise ValueError("the kernel needs scratch memory allocated per launch")
        if getattr(run, "gsan_enabled", False):
            raise ValueError("the kernel runs under the global sanitizer")
        self._c = driver.active.utils.launch
        self.function = compiled.function
        self.packed = compiled.packed_metadata
        self.coop, self.pdl = run.launch_cooperative_grid, run.launch_pdl
        self.annotations, self.signature = run.arg_annotations, run.kernel_signature
        signature = dict(compiled.src.signature)
        self.arg_types = tuple(signature.values())
        self.expand = wrap_handle_tensordesc(_last, signature, getattr(compiled.metadata, "tensordesc_meta", None))

    def launch(self, grid: Sequence[int], stream: int, flat: Any) -> None:
        self._c(grid[0], grid[1], grid[2], stream, self.function, self.coop, self.pdl, self.packed, None, None, None,
                None, None, self.annotations, self.signature, flat)


__all__ = ["CompiledLaunch", "at_address", "current_device", "current_stream", "device_getter", "hooks_set",
           "is_compiled", "jit_state", "run_wrapped", "stream_getter"]
