"""A launch's arguments as specs that any process rebuilds: without data for a compile (``meta`` tensors: dtype,
shape, strides and alignment are all a compile needs) and with fresh random data on a GPU for a run.

Tensors that share storage in the caller's launch share it when rebuilt (a descriptor over ``c`` and ``c``
itself stay one buffer). Floating-point data is never shipped: a GPU worker draws new values with the
original's mean and spread (non-negative data stays non-negative), as ``--check``'s fresh inputs do. Integer
and boolean tensors (indices, offsets, lengths, masks) travel with their values, since a random index is not
an index.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from workbench.run.tensors import is_tensor

__all__ = ["DescSpec", "TensorSpec", "Value", "build", "describe", "descriptor_shapes", "tensor_of"]

MAX_VALUE_BYTES = 64 << 20  # integer tensors up to this size travel with their values


@dataclass(frozen=True)
class TensorSpec:
    storage: int  # index of the storage among the launch's (shared storage: the same index)
    dtype: str  # torch dtype name, e.g. "bfloat16"
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    offset: int  # storage offset, in elements


@dataclass(frozen=True)
class DescSpec:
    """A host ``TensorDescriptor`` over a tensor; its block shape is the candidate's (pre_hooks set it)."""

    base: TensorSpec
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    block_shape: tuple[int, ...]
    padding: str = "zero"


@dataclass(frozen=True)
class Value:
    """Anything else, passed as it is (ints, floats, None, strings, dtypes)."""

    value: Any


@dataclass(frozen=True)
class StorageSpec:
    nbytes: int
    dtype: str  # the dtype of its first tensor: what fresh values are drawn as
    mean: float = 0.0
    std: float = 1.0
    nonnegative: bool = False
    data: bytes | None = None  # the values, for integer and boolean storages


def _is_descriptor(v: Any) -> bool:
    return type(v).__name__ == "TensorDescriptor" and hasattr(v, "block_shape") and is_tensor(getattr(v, "base", None))


def _dtype_name(t: Any) -> str:
    return str(t.dtype).replace("torch.", "")


def _stats(t: Any) -> tuple[float, float, bool]:
    import torch

    if t.device.type == "meta" or t.numel() == 0:
        return 0.0, 1.0, False
    with torch.no_grad():
        f = t.detach().reshape(-1)[: 1 << 22].to(torch.float32)
        f = f[torch.isfinite(f)]
        if f.numel() == 0:
            return 0.0, 1.0, False
        mean, std = float(f.mean()), float(f.std()) if f.numel() > 1 else 1.0
        nonneg = bool(f.min() >= 0)
    if not math.isfinite(std) or std == 0.0:
        std = 1.0
    return mean, std, nonneg


class _Describer:
    def __init__(self) -> None:
        self.storages: list[StorageSpec] = []
        self._index: dict[tuple, int] = {}

    def tensor(self, t: Any) -> TensorSpec:
        st = t.untyped_storage()
        key = (t.device.type, t.device.index, st.data_ptr(), st.nbytes()) if t.device.type != "meta" else (id(st),)
        i = self._index.get(key)
        if i is None:
            i = self._index[key] = len(self.storages)
            self.storages.append(self._storage(t, st.nbytes()))
        return TensorSpec(i, _dtype_name(t), tuple(t.shape), tuple(t.stride()), int(t.storage_offset()))

    def _storage(self, t: Any, nbytes: int) -> StorageSpec:
        if t.is_floating_point() or t.is_complex():
            mean, std, nonneg = _stats(t)
            return StorageSpec(nbytes, _dtype_name(t), mean, std, nonneg)
        data = None
        if t.device.type != "meta" and nbytes <= MAX_VALUE_BYTES:
            import torch

            raw = torch.empty(0, dtype=torch.uint8, device=t.device).set_(t.untyped_storage())
            data = bytes(raw.cpu().numpy().tobytes())
        return StorageSpec(nbytes, _dtype_name(t), data=data)

    def value(self, v: Any) -> Any:
        if is_tensor(v):
            return self.tensor(v)
        if _is_descriptor(v):
            return DescSpec(self.tensor(v.base), tuple(int(x) for x in v.shape), tuple(int(x) for x in v.strides),
                            tuple(int(x) for x in v.block_shape), getattr(v, "padding", "zero"))
        return Value(v)


def describe(values: dict[str, Any]) -> tuple[dict[str, Any], list[StorageSpec]]:
    """Specs of a launch's named argument values, and of the storages under their tensors."""
    d = _Describer()
    return {k: d.value(v) for k, v in values.items()}, d.storages


def descriptor_shapes(values: dict[str, Any]) -> dict[str, tuple[int, ...]]:
    """The block shape of each descriptor argument (what a config's pre_hook sets)."""
    return {k: tuple(int(x) for x in v.block_shape) for k, v in values.items() if _is_descriptor(v)}


def _storage_tensor(s: StorageSpec, device: str, generator: Any | None) -> Any:
    import torch

    dtype = getattr(torch, s.dtype)
    item = torch.empty((), dtype=dtype).element_size()
    n = s.nbytes // item
    if device == "meta":
        return torch.empty(n, dtype=dtype, device="meta")
    if s.data is not None:
        raw = torch.frombuffer(bytearray(s.data), dtype=torch.uint8)
        return raw.view(dtype).to(device) if len(s.data) % item == 0 else raw.to(device)
    buf = torch.empty(n, dtype=dtype, device=device)
    if buf.is_floating_point():
        with torch.no_grad():
            new = torch.randn(n, generator=generator, device=device, dtype=torch.float32) * s.std + s.mean
            buf.copy_(new.abs() if s.nonnegative else new)
    return buf


def tensor_of(spec: TensorSpec, storages: list[Any]) -> Any:
    import torch

    base = storages[spec.storage]
    dtype = getattr(torch, spec.dtype)
    flat = base if base.dtype == dtype else base.view(torch.uint8).view(dtype)
    return flat.as_strided(spec.shape, spec.stride, spec.offset)


def build(specs: dict[str, Any], storages: list[StorageSpec], device: str = "meta", *, seed: int = 0,
          blocks: dict[str, tuple[int, ...]] | None = None) -> tuple[dict[str, Any], list[Any]]:
    """The named values again, on ``device`` ("meta" for a compile, "cuda[:i]" for a run with fresh data), with
    ``blocks`` as the descriptors' block shapes. Returns them and the storage tensors under them."""
    import torch

    gen = None
    if device != "meta":
        gen = torch.Generator(device=device)
        gen.manual_seed(seed)
    bufs = [_storage_tensor(s, device, gen) for s in storages]
    out: dict[str, Any] = {}
    for name, spec in specs.items():
        if isinstance(spec, TensorSpec):
            out[name] = tensor_of(spec, bufs)
        elif isinstance(spec, DescSpec):
            from triton.tools.tensor_descriptor import TensorDescriptor

            block = list((blocks or {}).get(name, spec.block_shape))
            out[name] = TensorDescriptor(tensor_of(spec.base, bufs), list(spec.shape), list(spec.strides), block,
                                         spec.padding)
        else:
            out[name] = spec.value
    return out, bufs


def with_blocks(values: dict[str, Any], blocks: dict[str, tuple[int, ...]]) -> dict[str, Any]:
    """``values`` with each descriptor copied (never changed in place) and given its block shape from ``blocks``."""
    out = dict(values)
    for name, shape in blocks.items():
        if _is_descriptor(out.get(name)):
            out[name] = dataclasses.replace(out[name], block_shape=list(shape))
    return out
