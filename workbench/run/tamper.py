"""What a candidate kernel's Python may not do while it is judged, and how each is seen.

A harness that times and checks code it did not write (a kernel agent's, say) must not trust that code's view of
the clock, the stream or the reference. The ways generated kernels have faked results, and the watch kept here:

- **patched timers or torch** (``torch.cuda.Event.elapsed_time``, ``time.perf_counter``, ``torch.matmul`` made
  slow so the reference loses): ``Watch`` records the identity of every attribute of the modules and classes a
  timing or a reference goes through, when the worker starts; ``Watch.changed()`` names what differs, and
  ``restore()`` puts the originals back. The harness's own timer (``Clock``) holds the originals, bound before
  any candidate code is imported.
- **work on a side stream** (the timed stream sees nothing): ``Clock`` times both with CUDA events on the current
  stream and with the host clock between full-device synchronizations; an event time far below the synchronized
  one means work it did not see.
- **calling the reference, or torch's op that the reference uses** instead of a kernel of its own: ``OpLog``
  records the aten ops a call runs (a ``TorchDispatchMode``); the harness counts the Triton kernels a call
  launches with the launch capture (``workbench.run.capture``).

Outputs cached between calls, returned reference tensors and modified inputs are the judge's harness's checks
(``workbench.run.evaluation``).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["COMPUTE_OPS", "PLUMBING_OPS", "Clock", "OpLog", "Watch"]

# aten ops that compute an op's result (not views, allocation, copies or fills): a candidate that runs one the
# reference runs computes with torch's implementation, not its own kernel
COMPUTE_OPS = frozenset({
    "mm", "bmm", "addmm", "addbmm", "baddbmm", "matmul", "linear", "dot", "mv", "einsum", "_scaled_mm",
    "_grouped_mm", "_scaled_grouped_mm", "convolution", "_convolution", "cudnn_convolution",
    "_scaled_dot_product_flash_attention", "_scaled_dot_product_efficient_attention",
    "_scaled_dot_product_cudnn_attention", "_scaled_dot_product_attention_math", "_flash_attention_forward",
    "_efficient_attention_forward", "_softmax", "_log_softmax", "native_layer_norm", "native_group_norm",
    "native_batch_norm", "_fused_rms_norm", "rms_norm", "cumsum", "sort", "topk", "gelu", "silu",
})


# aten ops that only make, view, move or fill tensors: what any host wrapper runs
PLUMBING_OPS = frozenset({
    "empty", "empty_like", "empty_strided", "zeros", "zeros_like", "ones", "ones_like", "full", "full_like",
    "new_empty", "new_zeros", "new_ones", "new_full", "new_empty_strided", "fill_", "zero_", "copy_", "clone",
    "_to_copy", "to", "view", "_unsafe_view", "reshape", "t", "transpose", "permute", "contiguous", "expand",
    "as_strided", "slice", "select", "detach", "alias", "split", "chunk", "unsqueeze", "squeeze", "flatten",
    "lift_fresh", "resize_", "set_", "narrow", "unbind", "arange", "scalar_tensor", "_local_scalar_dense", "item",
    "is_nonzero", "stride", "size", "numel", "dim",
})


def _watched() -> list[Any]:
    import torch

    objs: list[Any] = [time, torch, torch.cuda, torch.cuda.Event, torch.cuda.Stream, torch.Tensor,
                       torch.nn.functional, torch.backends.cuda.matmul]
    try:
        import triton
        import triton.testing

        objs += [triton.testing, triton.runtime.driver]
    except ImportError:
        pass
    return objs


class Watch:
    """The identity of every attribute of the watched modules and classes, as at ``Watch()``."""

    def __init__(self) -> None:
        self.objs = _watched()
        self.before = [self._ids(o) for o in self.objs]

    @staticmethod
    def _ids(obj: Any) -> dict[str, Any]:
        """What is watched of ``obj``: a class's callables, dunders too (``Tensor.__matmul__`` is its ``@``); a
        module's public callables (its private state, ``torch.cuda._initialized``, changes as it is used)."""
        if isinstance(obj, type):
            return {k: v for k, v in list(vars(obj).items()) if callable(v) or isinstance(v, property | staticmethod
                                                                                         | classmethod)}
        return {k: v for k, v in list(getattr(obj, "__dict__", {}).items()) if not k.startswith("_") and callable(v)}

    def changed(self) -> list[str]:
        """``module.attr`` of everything replaced, added or removed since (empty when nothing was)."""
        out = []
        for obj, before in zip(self.objs, self.before, strict=True):
            now = self._ids(obj)
            name = getattr(obj, "__name__", type(obj).__name__)
            out += [f"{name}.{k}" for k in before if k not in now or now[k] is not before[k]]
            out += [f"{name}.{k}" for k in now if k not in before and _is_override(obj, k)]
        return out

    def restore(self) -> None:
        for obj, before in zip(self.objs, self.before, strict=True):
            now = self._ids(obj)
            for k, v in before.items():
                if now.get(k) is not v:
                    setattr(obj, k, v)
            for k in now:
                if k not in before and _is_override(obj, k):
                    delattr(obj, k)


def _is_override(obj: Any, name: str) -> bool:
    """An attribute added to a class that shadows an inherited one (``Event.elapsed_time`` set on a subclass)."""
    return isinstance(obj, type) and any(name in vars(b) for b in obj.__mro__[1:])


class Clock:
    """The harness's timer, bound to the originals of what it calls when it is made (before candidates load)."""

    def __init__(self, cuda: bool) -> None:
        self.cuda = cuda
        self.perf = time.perf_counter
        if cuda:
            import torch

            self.event = torch.cuda.Event
            self.record = torch.cuda.Event.record
            self.elapsed = torch.cuda.Event.elapsed_time
            self.sync = torch.cuda.synchronize
        else:
            self.sync = lambda: None

    def events_ms(self, fn: Callable[[], Any], n: int) -> float:
        """Mean ms of ``n`` back-to-back calls between two events on the current stream."""
        if not self.cuda:
            return self.synced_ms(fn, n)
        start, end = self.event(enable_timing=True), self.event(enable_timing=True)
        self.sync()
        self.record(start)
        for _ in range(n):
            fn()
        self.record(end)
        self.sync()
        return float(self.elapsed(start, end)) / n

    def synced_ms(self, fn: Callable[[], Any], n: int) -> float:
        """Mean ms of ``n`` calls by the host clock between full-device synchronizations (every stream's work)."""
        self.sync()
        t0 = self.perf()
        for _ in range(n):
            fn()
        self.sync()
        return (self.perf() - t0) * 1e3 / n

    def host_ms(self, fn: Callable[[], Any]) -> float:
        """How long one call takes to return (host-side work), after the device is idle."""
        self.sync()
        t0 = self.perf()
        fn()
        took = (self.perf() - t0) * 1e3
        self.sync()
        return took


class OpLog:
    """The aten ops (by short name: ``mm``, ``_softmax``) run inside ``with log.recording():``."""

    def __init__(self) -> None:
        self.ops: set[str] = set()

    @contextlib.contextmanager
    def recording(self) -> Iterator[OpLog]:
        from workbench.compile.triton_reach import dispatch_mode

        TorchDispatchMode = dispatch_mode()  # noqa: N806 - the class, by its own name
        ops = self.ops

        class _Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001 - torch's signature
                ops.add(func.overloadpacket.__name__)
                return func(*args, **(kwargs or {}))

        with _Mode():
            yield self

    def compute(self) -> set[str]:
        """Ops that compute an op's result (``COMPUTE_OPS``)."""
        return self.ops & COMPUTE_OPS

    def core(self) -> set[str]:
        """Every op but plumbing (``PLUMBING_OPS``)."""
        return self.ops - PLUMBING_OPS
