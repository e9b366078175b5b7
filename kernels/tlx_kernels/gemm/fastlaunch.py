"""Repeat launches of a library GEMM without Triton's per-call dispatch.

A TLX kernel launched through ``kernel[grid](...)`` pays, on every call, for host descriptors, their
conversion to Gluon descriptors, the lowering context, Triton's binder and cache-key lookup: 50-60 us
for a bare ``kernel[grid]`` and about 100 us through ``matmul()`` on the H200's host, several times what
the GPU needs for a 2048^3 GEMM (``bench/launch_overhead.py``). The first launch of a problem
(sizes, dtype, operand majorness, config, device) goes through ``kernel[grid]`` as usual (compile,
every check); it returns the ``CompiledKernel``, which later launches of the same problem call directly
(``compiled[grid](*args)``, Triton's public launch of a compiled kernel: launch hooks, profilers and
CUDA-graph capture see it as any launch), with Gluon descriptors built straight from the operands in
the layouts that first launch used. Plain Triton kernels (the ``tl.dot`` baseline) get the same
treatment with host descriptors, so that benchmarks launch every library kernel the same way.
Inside a ``%%tlx`` cell every call goes through ``kernel[grid]``, so that the cell captures (compiles,
reports, times) each launch; ``TLX_KERNELS_NO_FASTLAUNCH=1`` does that everywhere.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from triton.tools.tensor_descriptor import TensorDescriptor as HostTensorDescriptor

from tlx_kernels.gemm import common as C
from workbench.tlx.kernel import gluon_descriptor_prechecked


def _in_tlx_cell() -> bool:
    """Whether a ``%%tlx`` cell is capturing launches now (never, if the magic was not even imported)."""
    capture = sys.modules.get("workbench.magic.capture")
    return capture is not None and capture.active() is not None


@dataclass
class _Plan:
    runner: Callable[..., None]  # compiled[grid]
    blocks: list[list[int]]  # block shapes of the a, b, c descriptors
    layouts: list[Any] | None  # their NVMMA shared layouts (TLX kernels: Gluon descriptors), else None
    tail: list[Any]  # the values of the parameters after (a_desc, b_desc, c_desc, M, N, K), in order

    def descriptors(self, tensors) -> list[Any]:
        # C.operands made the descriptor constructors' checks already (2-D, 16-byte aligned base and row
        # stride, unit inner stride), and the plan's key fixes the shapes and blocks that the first,
        # fully checked launch accepted: build the descriptors without checking again.
        if self.layouts is None:
            return [
                _host_descriptor_prechecked(t, list(t.shape), list(t.stride()), block)
                for t, block in zip(tensors, self.blocks, strict=True)
            ]
        return [
            gluon_descriptor_prechecked(t, list(t.shape), list(t.stride()), block, layout)
            for t, block, layout in zip(tensors, self.blocks, self.layouts, strict=True)
        ]


def _host_descriptor_prechecked(base, shape, strides, block_shape) -> HostTensorDescriptor:
    d = object.__new__(HostTensorDescriptor)
    d.base, d.shape, d.strides, d.block_shape, d.padding = base, shape, strides, block_shape, "zero"
    return d


class FastLauncher:
    """``launcher(a, b, config, out) -> out`` for kernels whose parameters start
    ``(a_desc, b_desc, c_desc, M, N, K)``. ``prepare(a, b, config, out)`` returns ``(args, kwargs, grid,
    out)`` for ``kernel``, or, with ``kernel=None``, ``(kernel, args, kwargs, grid, out)``. Repeats pass
    Gluon descriptors when ``gluon_descriptors`` (default: when the kernel is a ``@tlx.jit`` kernel,
    which converts host descriptors at launch), else host descriptors."""

    def __init__(
        self,
        kernel: Any,
        prepare: Callable[..., tuple],
        max_plans: int = 256,
        gluon_descriptors: bool | None = None,
    ) -> None:
        self.kernel = kernel
        self.prepare = prepare
        self.gluon_descriptors = gluon_descriptors
        self.max_plans = max_plans
        self.plans: dict[tuple, _Plan] = {}

    def __call__(self, a, b, config: dict[str, Any], out=None):
        if os.environ.get("TLX_KERNELS_NO_FASTLAUNCH") or _in_tlx_cell():
            return self._ordinary(a, b, config, out, keep=None)
        ops = C.operands(a, b, out)
        key = (C.problem_key(ops), tuple(sorted(config.items())), a.device.index)
        plan = self.plans.get(key)
        if plan is None:
            return self._ordinary(a, b, config, ops.c, keep=key if len(self.plans) < self.max_plans else None)
        plan.runner(*plan.descriptors((ops.a, ops.b, ops.c)), ops.M, ops.N, ops.K, *plan.tail)
        return ops.c

    def _ordinary(self, a, b, config, out, keep: tuple | None):
        """The ordinary launch; with ``keep``, the plan that repeats it is stored under that key."""
        if self.kernel is None:
            kernel, args, kwargs, grid, c = self.prepare(a, b, config, out)
        else:
            kernel, (args, kwargs, grid, c) = self.kernel, self.prepare(a, b, config, out)
        compiled = kernel[grid](*args, **kwargs)
        # no plan for a warmup-only launch or an async compile (no CompiledKernel yet)
        if keep is not None and compiled is not None and not hasattr(compiled, "result"):
            self.plans[keep] = self._plan(kernel, compiled, args, kwargs, grid)
        return c

    def _plan(self, kernel, compiled, args, kwargs, grid) -> _Plan:
        from workbench.tlx.kernel import TLXKernel, convert_args

        tlx_kernel = isinstance(kernel, TLXKernel) if self.gluon_descriptors is None else self.gluon_descriptors
        descs = convert_args(args[:3], {})[0] if tlx_kernel else args[:3]
        names = kernel.arg_names
        if list(names[:6]) != ["a_desc", "b_desc", "c_desc", "M", "N", "K"]:
            raise TypeError(f"FastLauncher: {names} does not start with (a_desc, b_desc, c_desc, M, N, K)")
        params = {p.name: p for p in kernel.params}
        missing = [n for n in names[6:] if n not in kwargs and not params[n].has_default]
        if missing:
            raise TypeError(f"FastLauncher: prepare() gave no value for {missing}")
        grid3 = (*grid, 1, 1)[:3]  # CompiledKernel[grid] indexes all three dimensions
        return _Plan(
            runner=compiled[grid3],
            blocks=[list(d.block_shape) for d in descs],
            layouts=[d.layout for d in descs] if tlx_kernel else None,
            tail=[kwargs[n] if n in kwargs else params[n].default for n in names[6:]],
        )
