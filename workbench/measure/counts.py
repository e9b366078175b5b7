"""FLOP and byte counts per launch: from the caller, a kernel's declared counts, or an estimate."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

SOURCES = ("caller", "declared", "estimate")


@dataclass(frozen=True)
class Counts:
    """Work of one call: ``flops`` and ``bytes`` moved to and from device memory."""

    flops: float
    bytes: float
    source: str = "caller"  #: "caller", "declared" (the kernel's hook) or "estimate" (from arguments)
    note: str = ""

    @property
    def is_estimate(self) -> bool:
        return self.source == "estimate"

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "estimate": self.is_estimate}


def _shape(t: Any) -> tuple[int, ...]:
    if isinstance(t, Sequence) and not hasattr(t, "shape"):
        return tuple(int(x) for x in t)
    return tuple(int(x) for x in t.shape)


def _itemsize(t: Any, default: int = 2) -> int:
    size = getattr(t, "itemsize", None)
    if size is None and hasattr(t, "element_size"):
        size = t.element_size()
    if size is None and hasattr(t, "dtype"):
        size = getattr(t.dtype, "itemsize", None)
    return int(size) if size else default


def _nbytes(t: Any) -> int:
    return math.prod(_shape(t)) * _itemsize(t)


def gemm_counts(a: Any, b: Any, out: Any = None) -> Counts:
    """Estimate for ``out = a @ b`` with a (..., M, K), b (..., K, N): 2*M*N*K FLOPs per batch;
    bytes = reading a and b once and writing out once (the least traffic a GEMM can have)."""
    sa, sb = _shape(a), _shape(b)
    if len(sa) < 2 or len(sb) < 2:
        raise ValueError(f"gemm_counts needs matrices, got shapes {sa} and {sb}")
    m, k = sa[-2], sa[-1]
    k2, n = sb[-2], sb[-1]
    if k != k2:
        raise ValueError(f"gemm_counts: inner dimensions differ ({sa} @ {sb})")
    batch = max(math.prod(sa[:-2]), math.prod(sb[:-2]))
    out_bytes = _nbytes(out) if out is not None else batch * m * n * _itemsize(a)
    return Counts(
        flops=2.0 * batch * m * n * k,
        bytes=float(_nbytes(a) + _nbytes(b) + out_bytes),
        source="estimate",
        note=f"GEMM {f'{batch}x' if batch > 1 else ''}{m}x{n}x{k}: 2MNK FLOPs, each operand moved once",
    )


def elementwise_counts(*inputs: Any, out: Any = None, flops_per_element: float = 1.0) -> Counts:
    """Estimate for an elementwise kernel: every input read once, the output written once.
    ``out`` defaults to the first input's shape and dtype; a copy has ``flops_per_element=0``."""
    if not inputs:
        raise ValueError("elementwise_counts needs at least one input")
    ref = out if out is not None else inputs[0]
    n = math.prod(_shape(ref))
    return Counts(
        flops=float(n * flops_per_element),
        bytes=float(sum(_nbytes(t) for t in inputs) + _nbytes(ref)),
        source="estimate",
        note=f"elementwise over {n} elements: inputs read once, output written once",
    )


def _counts_from_mapping(d: Mapping[str, Any], source: str) -> Counts | None:
    flops = d.get("flops")
    if flops is None:
        parts = [d[k] for k in ("flops8", "flops16", "flops32", "flops64") if d.get(k) is not None]
        flops = sum(parts) if parts else None
    nbytes = d.get("bytes")
    if flops is None and nbytes is None:
        return None
    return Counts(flops=float(flops or 0.0), bytes=float(nbytes or 0.0), source=source)


def declared_counts(
    kernel: Any, grid: Any = (1, 1, 1), args: Any = None, metadata: Any = None
) -> Counts | None:
    """The counts a kernel declares through a Triton ``launch_metadata`` hook
    (``@triton.jit(launch_metadata=fn)``, ``fn(grid, metadata, args) -> {"flops": ..., "bytes": ...}``;
    Proton's ``flops8``/``flops16``/``flops32`` keys are summed). ``args`` is a dict of argument
    names to values, or a sequence in the kernel's parameter order. None when nothing is declared."""
    from workbench.compile.tuners import base_jit

    obj = base_jit(kernel)
    hook = getattr(obj, "launch_metadata", None)
    if hook is None or _is_compiled_kernel_method(obj, hook):
        return None
    if args is None:
        arg_dict: dict[str, Any] = {}
    elif isinstance(args, Mapping):
        arg_dict = dict(args)
    else:
        names = getattr(obj, "arg_names", None) or []
        arg_dict = dict(zip(names, args, strict=False))
    d = hook(grid, metadata, arg_dict)
    if not isinstance(d, Mapping):
        return None
    return _counts_from_mapping(d, "declared")


def _is_compiled_kernel_method(obj: Any, hook: Any) -> bool:
    # triton's CompiledKernel has a launch_metadata *method* that is not a user hook.
    return getattr(hook, "__self__", None) is obj


def resolve_counts(
    flops: float | None = None,
    bytes: float | None = None,  # noqa: A002
    counts: Counts | Mapping[str, Any] | None = None,
    kernel: Any = None,
    grid: Any = (1, 1, 1),
    args: Any = None,
) -> Counts | None:
    """Counts in order of trust: the caller's numbers, then the kernel's declared hook."""
    if flops is not None or bytes is not None:
        return Counts(flops=float(flops or 0.0), bytes=float(bytes or 0.0), source="caller")
    if isinstance(counts, Counts):
        return counts
    if isinstance(counts, Mapping):
        return _counts_from_mapping(counts, str(counts.get("source", "caller")))
    if kernel is not None:
        return declared_counts(kernel, grid, args)
    return None
