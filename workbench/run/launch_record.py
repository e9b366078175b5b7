"""One launch's arguments as a record every verdict path shares: ``--check``, ``--search``, ``--export``,
``workbench.evaluate`` and the isolated worker's protocol.

A record holds each argument as a spec and the storages under the tensors:

- ``View``: a tensor as a view of a storage (``storage`` is its index among the record's; tensors that share
  storage in the launch share it when rebuilt: a descriptor over ``c`` and ``c`` itself stay one buffer);
- ``Composite``: a dataclass holding tensors (Triton's or Gluon's ``TensorDescriptor``), rebuilt by calling its
  class on its fields again; a tuple holding tensors stays a tuple of specs;
- ``Value``: anything else, as it is (ints, floats, None, strings, dtypes, tensor-free dataclasses).

A ``Storage`` says how large it is and, when the record was taken ``with_data``, what a rebuild with fresh data
needs: floating-point storages their mean, spread and sign (values are never shipped: new ones are drawn with the
same statistics), integer and boolean storages their values (a random index is not an index).

``build`` makes the arguments again: on ``meta`` (dtype, shape, strides and alignment are all a compile needs),
on a GPU with fresh data, or over storages the caller already holds (the worker's IPC buffers). ``poison_`` and
``refill_`` are the two in-place fills every check uses: NaN for outputs, fresh values for inputs.
"""

from __future__ import annotations

import dataclasses
import math
import weakref
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Composite", "Record", "Storage", "Value", "View", "is_descriptor", "is_tensor", "poison_", "refill_",
           "storage_key", "tensors_in"]

MAX_VALUE_BYTES = 64 << 20  # integer storages up to this size keep their values in a record taken with data


# ---------------------------------------------------------------------------------------------------- tensors
def is_tensor(v: Any) -> bool:
    """A torch tensor (anything with a storage, a dtype and strides)."""
    return hasattr(v, "untyped_storage") and hasattr(v, "dtype") and hasattr(v, "stride")


def is_descriptor(v: Any) -> bool:
    """A tensor descriptor (Triton's host ``TensorDescriptor`` or Gluon's): a dataclass with a ``base`` tensor."""
    return dataclasses.is_dataclass(v) and not isinstance(v, type) and is_tensor(getattr(v, "base", None))


def storage_key(t: Any) -> tuple:
    """Where ``t``'s storage lives: tensors with the same key alias each other."""
    if t.device.type == "meta":
        return ("meta", id(t.untyped_storage()))
    return (t.device.type, t.device.index, t.untyped_storage().data_ptr())


def tensors_in(value: Any) -> list[Any]:
    """The tensors a value holds: itself, or those in its tuple, list, dict or dataclass (descriptor bases)."""
    if is_tensor(value):
        return [value]
    if isinstance(value, tuple | list):
        return [t for v in value for t in tensors_in(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in tensors_in(v)]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [t for f in dataclasses.fields(value) for t in tensors_in(getattr(value, f.name, None))]
    return []


def _dtype_name(t: Any) -> str:
    return str(t.dtype).replace("torch.", "")


def _stats(t: Any) -> tuple[float, float, bool]:
    """Mean, spread and whether all finite values are non-negative (of at most 4M elements)."""
    import torch

    if t.device.type == "meta" or t.numel() == 0:
        return 0.0, 1.0, False
    with torch.no_grad():
        f = t.detach().reshape(-1)[: 1 << 22]
        f = f.real if f.is_complex() else f
        f = f.to(torch.float64)
        f = f[torch.isfinite(f)]
        if f.numel() == 0:
            return 0.0, 1.0, False
        mean, std = float(f.mean()), float(f.std()) if f.numel() > 1 else 1.0
        nonneg = bool(f.min() >= 0)
    if not math.isfinite(std) or std == 0.0:
        std = 1.0
    return mean, std, nonneg


def _draw(shape: tuple[int, ...], stats: tuple[float, float, bool], generator: Any, device: Any) -> Any:
    """Fresh float32 values with the given mean, spread and sign."""
    import torch

    mean, std, nonneg = stats
    new = torch.randn(shape, generator=generator, device=device, dtype=torch.float32) * std + mean
    return new.abs() if nonneg else new


def poison_(t: Any) -> bool:
    """Fill ``t`` with NaN (integers: the dtype's minimum); False for a dtype left alone (bool)."""
    import torch

    with torch.no_grad():
        if t.is_floating_point() or t.is_complex():
            t.fill_(float("nan"))
        elif t.dtype == torch.bool:
            return False
        else:
            t.fill_(torch.iinfo(t.dtype).min)
    return True


def refill_(t: Any, generator: Any) -> None:
    """New random values in ``t``, in place, shaped like the old ones (mean, spread, sign)."""
    import torch

    with torch.no_grad():
        t.copy_(_draw(tuple(t.shape), _stats(t), generator, t.device).to(t.dtype))


# ---------------------------------------------------------------------------------------------------- specs
@dataclass(frozen=True)
class View:
    """A tensor as a view of the record's storage number ``storage``."""

    storage: int
    dtype: str  # torch dtype name, e.g. "bfloat16"
    shape: tuple[int, ...]
    stride: tuple[int, ...]
    offset: int  # storage offset, in elements


@dataclass(frozen=True)
class Composite:
    """A dataclass holding tensors (a tensor descriptor): its class and each init field's spec."""

    cls: type
    fields: dict[str, Any] = field(hash=False)

    @property
    def base(self) -> View | None:
        b = self.fields.get("base")
        return b if isinstance(b, View) else None


@dataclass(frozen=True)
class Value:
    """Anything else, passed as it is."""

    value: Any


@dataclass
class Storage:
    nbytes: int
    dtype: str  # the dtype of its first tensor: what fresh values are drawn as
    device: str = "cpu"
    stats: tuple[float, float, bool] | None = None  # mean, spread, non-negative (floating point, taken with data)
    data: bytes | None = None  # the values (integer and boolean storages, taken with data)

    def numel(self, dtype: str | None = None) -> int:
        import torch

        return self.nbytes // torch.empty((), dtype=getattr(torch, dtype or self.dtype)).element_size()


class Record:
    """A launch's named arguments as specs over the storages under them (see the module's docstring)."""

    def __init__(self, with_data: bool = False) -> None:
        self.args: dict[str, Any] = {}
        self.storages: list[Storage] = []
        self.with_data = with_data
        self._index: dict[tuple, int] = {}
        self._live: dict[int, Any] = {}  # storage -> weakref to a tensor over it (never pickled)

    @classmethod
    def of(cls, values: dict[str, Any], *, with_data: bool = False) -> Record:
        rec = cls(with_data)
        rec.args = {k: rec.spec(v) for k, v in values.items()}
        return rec

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_index": {}, "_live": {}}

    # ------------------------------------------------------------------ describing
    def spec(self, v: Any) -> Any:
        """The spec of one value; its storages are added to the record."""
        if is_tensor(v):
            return self.view(v)
        if isinstance(v, tuple) and tensors_in(v):
            return tuple(self.spec(x) for x in v)
        if dataclasses.is_dataclass(v) and not isinstance(v, type) and tensors_in(v):
            return Composite(type(v), {f.name: self.spec(getattr(v, f.name)) if tensors_in(getattr(v, f.name))
                                       else Value(getattr(v, f.name)) for f in dataclasses.fields(v) if f.init})
        return Value(v)

    def view(self, t: Any) -> View:
        """``t`` as a view of its storage, which is added to the record if it is new."""
        key = storage_key(t)
        if key not in self._index:
            self._index[key] = len(self.storages)
            self.storages.append(self._storage(t))
            self._live[self._index[key]] = weakref.ref(t)
        return self.view_of(t)

    def view_of(self, t: Any) -> View | None:
        """``t`` as a view of one of the record's storages, or None where it lives elsewhere."""
        i = self._index.get(storage_key(t))
        if i is None:
            return None
        return View(i, _dtype_name(t), tuple(int(s) for s in t.shape), tuple(int(s) for s in t.stride()),
                    int(t.storage_offset()))

    def _storage(self, t: Any) -> Storage:
        nbytes = int(t.untyped_storage().nbytes())
        s = Storage(nbytes, _dtype_name(t), str(t.device))
        if not self.with_data or t.device.type == "meta":
            return s
        if t.is_floating_point() or t.is_complex():
            s.stats = _stats(t)
        elif nbytes <= MAX_VALUE_BYTES:
            s.data = storage_bytes(t)
        return s

    def root(self, name: str) -> View | None:
        """The tensor under argument ``name``: itself, or a descriptor's base (None for other arguments)."""
        spec = self.args.get(name)
        return spec if isinstance(spec, View) else spec.base if isinstance(spec, Composite) else None

    def live(self, storage: int) -> Any | None:
        """A tensor over storage number ``storage`` while the caller still holds one, else None."""
        ref = self._live.get(storage)
        return ref() if ref is not None else None

    def whole(self, v: View) -> bool:
        """Whether ``v`` is its whole storage, contiguous from its first element."""
        return (v.offset == 0 and math.prod(v.shape) == self.storages[v.storage].numel(v.dtype)
                and v.stride == contiguous(v.shape))

    def arguments(self, constexprs: set[str] = frozenset()) -> list[dict[str, Any]]:
        """The Report's ``arguments`` of the record (see report/schema.json)."""
        return [_argument(self, k, s, k in constexprs) for k, s in self.args.items()]

    # ------------------------------------------------------------------ rebuilding
    def build(self, device: str = "meta", *, seed: int = 0,
              blocks: dict[str, tuple[int, ...]] | None = None) -> tuple[dict[str, Any], list[Any]]:
        """The named values again over a tensor per storage on ``device`` (``meta``, or fresh data drawn from the
        storages' statistics with ``seed``), with ``blocks`` as the descriptors' block shapes. Returns them and the
        storage tensors."""
        import torch

        gen = None
        if device != "meta":
            gen = torch.Generator(device=device)
            gen.manual_seed(seed)
        bufs = [_fresh(s, device, gen) for s in self.storages]
        return with_blocks({name: rebuild(spec, bufs) for name, spec in self.args.items()}, blocks or {}), bufs


def rebuild(spec: Any, bufs: list[Any]) -> Any:
    """One spec's value over the storage tensors ``bufs`` (any dtype: a view is taken in the spec's)."""
    if isinstance(spec, View):
        import torch

        base = bufs[spec.storage]
        view = torch.empty(0, dtype=getattr(torch, spec.dtype), device=base.device)
        return view.set_(base.untyped_storage(), spec.offset, spec.shape, spec.stride)
    if isinstance(spec, Composite):
        return spec.cls(**{k: rebuild(s, bufs) for k, s in spec.fields.items()})
    if isinstance(spec, tuple):
        return tuple(rebuild(s, bufs) for s in spec)
    return spec.value


def relabel(spec: Any, storages: list[Any]) -> Any:
    """``spec`` with each view's storage number ``i`` replaced by ``storages[i]`` (a worker's token for it)."""
    if isinstance(spec, View):
        return dataclasses.replace(spec, storage=storages[spec.storage])
    if isinstance(spec, Composite):
        return Composite(spec.cls, {k: relabel(s, storages) for k, s in spec.fields.items()})
    if isinstance(spec, tuple):
        return tuple(relabel(s, storages) for s in spec)
    return spec


def with_blocks(values: dict[str, Any], blocks: dict[str, tuple[int, ...]]) -> dict[str, Any]:
    """``values`` with each descriptor copied (never changed in place) and given its block shape from ``blocks``."""
    out = dict(values)
    for name, shape in blocks.items():
        if is_descriptor(out.get(name)):
            out[name] = dataclasses.replace(out[name], block_shape=list(shape))
    return out


def descriptor_shapes(values: dict[str, Any]) -> dict[str, tuple[int, ...]]:
    """The block shape of each descriptor argument (what a config's pre_hook sets)."""
    return {k: tuple(int(x) for x in v.block_shape) for k, v in values.items()
            if is_descriptor(v) and hasattr(v, "block_shape")}


def contiguous(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Row-major strides of ``shape``."""
    out, step = [], 1
    for s in reversed(shape):
        out.append(step)
        step *= max(s, 1)
    return tuple(reversed(out))


def storage_bytes(t: Any) -> bytes:
    """The bytes of ``t``'s whole storage."""
    import torch

    raw = torch.empty(0, dtype=torch.uint8, device=t.device).set_(t.untyped_storage())
    return bytes(raw.cpu().numpy().tobytes())


def _fresh(s: Storage, device: str, generator: Any | None) -> Any:
    import torch

    dtype = getattr(torch, s.dtype)
    n = s.numel()
    if device == "meta":
        return torch.empty(n, dtype=dtype, device="meta")
    if s.data is not None:
        raw = torch.frombuffer(bytearray(s.data), dtype=torch.uint8) if s.data else torch.empty(0, dtype=torch.uint8)
        return raw.to(device)
    buf = torch.empty(n, dtype=dtype, device=device)
    if buf.is_floating_point():
        with torch.no_grad():
            buf.copy_(_draw((n,), s.stats or (0.0, 1.0, False), generator, device))
    return buf


def _argument(rec: Record, name: str, spec: Any, constexpr: bool) -> dict[str, Any]:
    from workbench.ir.json_values import jsonable

    if isinstance(spec, View):
        return {"name": name, "kind": "tensor", "dtype": spec.dtype, "shape": list(spec.shape),
                "strides": list(spec.stride), "device": rec.storages[spec.storage].device}
    if isinstance(spec, Composite) and spec.base is not None:
        device = rec.storages[spec.base.storage].device
        return {"name": name, "kind": "descriptor", "dtype": spec.base.dtype, "device": device,
                "shape": [int(s) for s in _field(spec, "shape") or []],
                "value": {"block_shape": jsonable(list(_field(spec, "block_shape") or []))}}
    if not isinstance(spec, Value):  # a tuple or dataclass holding tensors
        return {"name": name, "kind": "other", "value": f"a {type(spec).__name__.lower()} holding tensors"}
    v = spec.value
    if constexpr:
        return {"name": name, "kind": "constexpr", "value": jsonable(getattr(v, "value", v))}
    if v is None:
        return {"name": name, "kind": "none", "value": None}
    for kind, types in (("bool", bool), ("int", int), ("float", float), ("tuple", tuple)):
        if isinstance(v, types):
            return {"name": name, "kind": kind, "value": v if kind in ("bool", "int") else jsonable(v)}
    return {"name": name, "kind": "other", "value": repr(v)[:200]}


def _field(spec: Composite, name: str) -> Any:
    v = spec.fields.get(name)
    return v.value if isinstance(v, Value) else None
