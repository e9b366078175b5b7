"""The public ``matmul`` of each GEMM kernel: the config (given, or tuned once per problem), then the launch, cached
per call (:mod:`tlx_kernels.launch`): a repeated call with the same layouts costs a key, a lookup and Triton's C
launcher; ``graph=True`` replays a CUDA graph captured for the call's tensors."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tlx_kernels import launch as L
from tlx_kernels.gemm.common import check_operands, empty_out, empty_product, new_out
from tlx_kernels.gemm.tuning import config_name, problem_key
from tlx_kernels.hopper import require_sm90
from tlx_kernels.tuner import Tuner


def call_key(a, b, out, config: dict[str, Any] | None) -> tuple:
    """What a cached launch depends on: the operands' and the output's layouts, and the config (None: tuned)."""
    return (L.layout(a), L.layout(b), L.layout(out), None if config is None else tuple(config.items()))


class Matmul:
    """``launch`` and ``matmul`` of one kernel module (the module exports the bound methods).

    ``prepare(a, b, config, out)`` gives the launch (``(args, kwargs, grid, out)``, or ``(kernel, args, kwargs,
    grid, out)`` when ``kernel`` is None: the ``tl.dot`` baseline picks one of two kernels); ``configs`` are what
    the tuner tries on the first call of a problem without ``config``; ``before(a)`` runs before a general launch
    (the ``tl.dot`` baseline sets Triton's allocator)."""

    def __init__(self, kernel: Any, prepare: Callable, configs: list[dict[str, Any]], tuner: Tuner,
                 before: Callable[[Any], None] | None = None) -> None:
        self.kernel, self.prepare, self.configs, self.tuner, self.before = kernel, prepare, configs, tuner, before
        self.plans, self.graphs = L.Plans(), L.Graphs()

    def launch(self, a, b, config: dict[str, Any] | None = None, out=None):
        """One launch (``kernel[grid](...)``) with ``config`` (default: the first config); returns the output."""
        return self._launch(a, b, config, out, None)

    def _launch(self, a, b, config: dict[str, Any] | None, out, key: tuple | None):
        """``kernel[grid](...)``; with ``key`` (the call's :func:`call_key`) the launch is offered to the plans."""
        done = empty_product(a, b, out)
        if done is not None:
            return done
        c = out if out is not None else new_out(a, b)
        if self.before is not None:
            self.before(a)
        prepared = self.prepare(a, b, config or self.configs[0], c)
        kernel = self.kernel
        if kernel is None:
            kernel, prepared = prepared[0], prepared[1:]
        args, kwargs, grid, _ = prepared
        compiled = kernel[grid](*args, **kwargs)
        if key is not None:
            self.plans.offer(key, kernel, compiled, args, kwargs, grid, (a, b, c))
        return c

    def config_for(self, a, b) -> dict[str, Any]:
        """The tuned config of this problem (tuned on first use, into a scratch output)."""
        M, N, K = check_operands(a, b)
        if not (M and N and K):
            return self.configs[0]  # nothing to launch, nothing to tune
        pkey = problem_key(a, b)
        config = self.tuner.cache.get(pkey)
        if config is None:
            scratch = empty_out(a.shape[0], b.shape[1], a.dtype, a.device)
            config = self.tuner.choose(pkey, self.configs, lambda cfg: self.launch(a, b, cfg, scratch), config_name)
        return config

    def matmul(self, a, b, *, config: dict[str, Any] | None = None, out=None, graph: bool = False):
        """``a @ b`` (bf16/fp16, fp32 accumulation), row- or column-major operands, any shape.

        Without ``config`` the first call for a problem size tunes over the module's ``CONFIGS`` on the GPU.
        Repeated calls with the same layouts launch from a cache (:mod:`tlx_kernels.launch`); ``graph=True``
        (with ``out``) replays a CUDA graph captured for these tensors.
        """
        key = call_key(a, b, out, config)
        if graph:
            L.need_outputs("matmul", out=out)
            self.graphs.replay(key, (a, b, out), lambda: self.matmul(a, b, config=config, out=out), "matmul")
            return out
        if self.plans.get(key) is not None:  # then the operands were checked when it was made
            c = out if out is not None else new_out(a, b)
            if self.plans.launch(key, (a, b, c)):
                return c
        require_sm90("matmul", a, b)
        return self._launch(a, b, config if config is not None else self.config_for(a, b), out, key)


__all__ = ["Matmul", "call_key"]
