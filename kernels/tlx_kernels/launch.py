"""Cached launches for the library's public calls (``matmul``, ``attention``, ``broadcast_linear``).

A public call does, per call, what only depends on its problem: check shapes and dtypes, resolve a config
(maybe tune), build ``TensorDescriptor`` objects, compute the grid, and let ``kernel[grid](...)`` bind and
specialize the arguments and look up the compiled kernel. At small sizes that host work costs more than the
kernel. Here, per problem, all of it is done once:

- :class:`Plans` maps a call's *key* (every input's shape, strides, dtype, device and address alignment mod 16,
  the scalars and the config: whatever decides the kernel arguments other than data pointers) to a
  :class:`Plan`, built from the first call's real launch: the ``CompiledKernel`` that ``kernel[grid]``
  returned, its grid, every parameter's value, and, for each pointer or descriptor argument, which of the
  call's tensors it points into and at what byte offset.
- A repeated call with the same key updates only the data pointers and calls Triton's C launcher on the
  current torch stream; the TMA descriptors for a set of pointers are encoded once (Triton's own code) and
  kept for the last few pointer sets.
- :class:`Graphs` replays a CUDA graph captured per key and data pointers, for callers that pass
  ``graph=True`` (and their output buffers).

A plan is used only while it is certainly the launch the general path would make: the call's key equals its
key (so the same layouts, dtypes, device and alignment class, hence the same kernel specialization), the
current device is the plan's, and Triton's launch path is as it was (:func:`triton_reach.jit_state`: no
``%%tlx`` capture, no new stages hook, instrumentation mode or launch hook; then the general path runs).
A call whose launch reads a copy of an input (operands padded for TMA) or whose inputs share memory is not
planned: the general path serves it. ``TLX_KERNELS_NO_FASTLAUNCH=1`` (read at import) turns plans off.
"""

from __future__ import annotations

import inspect
import os
from collections.abc import Callable, Sequence
from typing import Any

from tlx_kernels import triton_reach as R

ENABLED = not os.environ.get("TLX_KERNELS_NO_FASTLAUNCH")
MAX_POINTER_SETS = 8  # encoded descriptor sets kept per plan (outputs alternate between a few addresses)


class NoPlan(Exception):
    """This call's launch cannot be replayed from its inputs' pointers (the reason says why)."""


def layout(t: Any) -> tuple | None:
    """What a plan's key holds of a tensor: shape, strides, dtype, device and address mod 16 (None for None)."""
    if t is None:
        return None
    return (t.shape, t.stride(), t.dtype, t.device, t.data_ptr() & 15)


def _span(t: Any) -> tuple[int, int]:
    """[first byte, last byte + 1) of the storage a tensor's elements occupy."""
    start = t.data_ptr()
    if t.numel() == 0:
        return start, start
    last = sum((n - 1) * s for n, s in zip(t.shape, t.stride(), strict=True))
    return start, start + (last + 1) * t.element_size()


def _slot_of(base: Any, tensors: Sequence[Any]) -> int:
    """The call's tensor that ``base`` (a kernel argument, or a descriptor's base) is a view into: same storage,
    its elements within that tensor's (the tensors do not overlap, so at most one qualifies)."""
    storage = base.untyped_storage().data_ptr()
    lo, hi = _span(base)
    for i, t in enumerate(tensors):
        if t is not None and t.untyped_storage().data_ptr() == storage:
            t_lo, t_hi = _span(t)
            if t_lo <= lo and hi <= t_hi:
                return i
    raise NoPlan("an argument is a buffer the call made (a copy of an input for TMA, a padded output), not one of "
                 "the call's tensors")


class Template:
    """Every parameter's value of one launch, with the data pointers taken out: ``sources`` says, per pointer or
    descriptor parameter, which of the call's tensors it points into and at what byte offset."""

    __slots__ = ("names", "values", "sources", "descs")

    def __init__(self, kernel: Any, args: Sequence[Any], kwargs: dict[str, Any], tensors: Sequence[Any]) -> None:
        import torch
        from triton.tools.tensor_descriptor import TensorDescriptor

        if "ctas_per_cga" in kwargs:  # uTLX rescales the grid of such a launch inside JITFunction.run
            raise NoPlan("a cluster launch (ctas_per_cga) is not replayed")
        spans = sorted(_span(t) for t in tensors if t is not None)
        if any(a[1] > b[0] for a, b in zip(spans, spans[1:])):
            raise NoPlan("the call's tensors overlap in memory")
        params = kernel.params
        values = list(args)
        for p in params[len(args):]:
            if p.name in kwargs:
                values.append(kwargs[p.name])
            elif p.default is not inspect.Parameter.empty:
                values.append(p.default)
            else:
                raise TypeError(f"{kernel.__name__}: no value for parameter {p.name!r}")
        self.names = tuple(p.name for p in params)
        sources, descs = [], {}
        for i, v in enumerate(values):
            if isinstance(v, TensorDescriptor):
                base, descs[i] = v.base, v
            elif isinstance(v, torch.Tensor):
                base = v
            else:
                continue
            slot = _slot_of(base, tensors)
            sources.append((i, slot, base.data_ptr() - tensors[slot].data_ptr()))
            values[i] = None
        self.values, self.sources = values, tuple(sources)
        self.descs = {i: R.at_address(d, d.base.data_ptr()) for i, d in descs.items()}  # no tensor kept alive

    def fill(self, ptrs: Sequence[int]) -> list[Any]:
        """Every parameter's value with the data pointers ``ptrs`` (one per source, in order)."""
        values = list(self.values)
        for (i, _slot, _off), ptr in zip(self.sources, ptrs, strict=True):
            desc = self.descs.get(i)
            values[i] = ptr if desc is None else R.at_address(desc, ptr)
        return values


class Plan:
    """One problem's launch: the compiled kernel's launcher, its grid and its arguments (:class:`Template`)."""

    __slots__ = ("kernel", "compiled", "state", "device", "grid", "launcher", "template", "slots", "offsets", "flats",
                 "stream", "device_now")

    def __init__(self, kernel: Any, compiled: Any, template: Template, grid: Sequence[int], device: int) -> None:
        if callable(grid):
            raise NoPlan("the grid is a function of the arguments")
        # the CompiledKernel is kept: its module (and so the function handle launched here) is unloaded when it dies
        self.kernel, self.compiled, self.template, self.device = kernel, compiled, template, device
        self.grid = (tuple(grid) + (1, 1))[:3]
        self.state = R.jit_state(kernel)
        self.launcher = R.CompiledLaunch(compiled)
        self.slots = [s for _, s, _ in template.sources]
        self.offsets = [o for _, _, o in template.sources]
        self.flats: dict[tuple, Any] = {}
        self.stream, self.device_now = R.stream_getter(), R.device_getter()

    def __call__(self, tensors: Sequence[Any]) -> bool:
        """Launch with ``tensors``' data pointers; False (nothing launched) if Triton's launch path changed or
        another device is current: then the caller takes the general path."""
        if R.jit_state(self.kernel) != self.state or self.device_now() != self.device:
            return False
        ptrs = tuple([tensors[s].data_ptr() + o for s, o in zip(self.slots, self.offsets)])
        flat = self.flats.get(ptrs)
        if flat is None:
            if len(self.flats) >= MAX_POINTER_SETS:
                self.flats.pop(next(iter(self.flats)))
            flat = self.flats[ptrs] = self.launcher.expand(self.template.fill(ptrs))
        self.launcher.launch(self.grid, self.stream(self.device), flat)
        return True


class Plans:
    """Plans by call key (at most ``maxsize``, the oldest dropped first); keys whose launch cannot be planned
    keep their reason, so the general path does not try again. ``counts``: launches through a plan ("cached"),
    through ``kernel[grid]`` offered here ("general"), and plans made ("planned")."""

    def __init__(self, maxsize: int = 256) -> None:
        self.maxsize = maxsize
        self._plans: dict[Any, Plan | str] = {}
        self.counts = {"cached": 0, "general": 0, "planned": 0}

    def get(self, key: Any) -> Plan | None:
        plan = self._plans.get(key)
        return plan if plan.__class__ is Plan else None

    def launch(self, key: Any, tensors: Sequence[Any]) -> bool:
        """Launch the plan of ``key`` with ``tensors``; False if there is none or it does not apply now."""
        plan = self._plans.get(key)
        if plan.__class__ is Plan and plan(tensors):
            self.counts["cached"] += 1
            return True
        return False

    def reason(self, key: Any) -> str | None:
        """Why ``key`` has no plan (None if it has one or was never offered)."""
        plan = self._plans.get(key)
        return plan if isinstance(plan, str) else None

    def offer(self, key: Any, kernel: Any, compiled: Any, args: Sequence[Any], kwargs: dict[str, Any],
              grid: Sequence[int], tensors: Sequence[Any]) -> None:
        """After the general path launched ``kernel[grid](*args, **kwargs)`` (which returned ``compiled``) for a
        call with ``tensors``: keep the launch as the plan of ``key`` if it can be replayed."""
        self.counts["general"] += 1
        if (not ENABLED or isinstance(self._plans.get(key), str) or not R.is_compiled(compiled) or R.hooks_set()
                or R.run_wrapped(kernel)):
            return  # known not plannable; or a capture or profiler is in the launch path now: plan later
        try:
            plan: Plan | str = Plan(kernel, compiled, Template(kernel, args, kwargs, tensors), grid,
                                    R.current_device())
        except NoPlan as e:
            if "overlap" in str(e):
                return  # another call with this key may have separate tensors
            plan = str(e)
        except ValueError as e:  # CompiledLaunch: a kernel Triton must launch itself
            plan = str(e)
        if len(self._plans) >= self.maxsize:
            self._plans.pop(next(iter(self._plans)))
        self._plans[key] = plan
        self.counts["planned"] += plan.__class__ is Plan

    def clear(self) -> None:
        self._plans.clear()


class Graphs:
    """CUDA graphs of a call, captured per call key and data pointers (at most ``maxsize``, oldest dropped)."""

    def __init__(self, maxsize: int = 32) -> None:
        self.maxsize = maxsize
        self._graphs: dict[Any, Any] = {}

    def replay(self, key: Any, tensors: Sequence[Any], run: Callable[[], Any], what: str) -> None:
        """Replay the graph of ``key`` and these tensors on the current stream; the first time, ``run()`` (the
        call itself: compiles, tunes and computes) and capture a second ``run()``."""
        import torch

        gkey = (key, tuple(t.data_ptr() for t in tensors if t is not None))
        graph = self._graphs.get(gkey)
        if graph is not None:
            graph.replay()
            return
        run()
        graph = torch.cuda.CUDAGraph()
        try:
            with torch.cuda.graph(graph):
                run()
        except Exception as e:
            raise RuntimeError(f"{what}(graph=True): the launch could not be captured in a CUDA graph "
                               f"({type(e).__name__}: {e}); call it without graph=True") from e
        if len(self._graphs) >= self.maxsize:
            self._graphs.pop(next(iter(self._graphs)))
        self._graphs[gkey] = graph

    def clear(self) -> None:
        self._graphs.clear()


def need_outputs(what: str, **outputs: Any) -> None:
    """``graph=True`` replays into the buffers it captured: every output must be the caller's."""
    missing = [name for name, t in outputs.items() if t is None]
    if missing:
        raise ValueError(f"{what}(graph=True) replays a CUDA graph that writes into the buffers it was captured "
                         f"with: pass {', '.join(f'{m}=' for m in missing)} (the same tensors on every call)")


__all__ = ["Graphs", "NoPlan", "Plan", "Plans", "Template", "layout", "need_outputs"]
