"""What crosses the process boundary for one isolated launch, and how it is rebuilt in the worker.

A launch request holds the kernel (a ``KernelRef``: the files Triton's cache holds for it, never the
Python function, which may live in a notebook cell the worker cannot import), the grid, and the
arguments as a spec tree:

- ``("c", None)``: a constexpr parameter (Triton's launcher skips it);
- ``("v", value)``: an int, float, bool, None or string, as is;
- ``("t", token, dtype, offset, shape, stride)``: a tensor, as a view of a storage sent once
  (``token``) with its element offset, shape and strides;
- ``("d", cls, {field: spec})``: a dataclass holding tensors (``TensorDescriptor``, Gluon's
  descriptor), rebuilt by calling ``cls(**fields)`` around the worker's tensors;
- ``("u", [spec, ...])``: a tuple.

Storages travel in one of two ways (``Encoder(mode=...)``):

- ``"ipc"``: a uint8 CUDA tensor over the whole storage, pickled by ``torch.multiprocessing``'s
  reduction (a CUDA IPC handle): the worker writes the notebook's memory in place. Each storage is
  sent once per worker; later launches name its token. The encoder holds a weak reference to each
  storage it sent and tells the worker to drop the token once the notebook has freed it (until then
  torch keeps the block alive for the worker, as ``torch.multiprocessing`` always does).
- ``"copy"``: the storage's bytes (copied to the host); the worker allocates its own copy. Used for
  sanitizer runs (each tensor its own allocation, so out-of-bounds accesses are exact) and for
  tests on machines without a GPU. Nothing is written back.
"""

from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass, field
from typing import Any

from workbench.compile.triton_reach import storage_id
from workbench.run.tensors import is_tensor

__all__ = ["Decoder", "Encoder", "KernelRef", "UnsendableArgument", "kernel_ref"]

_TOKENS = itertools.count(1)


class UnsendableArgument(TypeError):
    """An argument that cannot be given to a worker process (e.g. a CPU tensor for a GPU kernel)."""


@dataclass(frozen=True)
class KernelRef:
    """A compiled kernel the worker can load without the Python function that defined it."""

    kind: str  # "triton": Triton's compiled files; "callable": a Python function "module:name"
    name: str
    key: str  # Triton's hash of the compiled kernel, or "module:name"
    files: dict[str, str] = field(default_factory=dict)  # Triton's metadata_group: file name -> path
    signature: dict[str, Any] = field(default_factory=dict)  # parameter -> Triton type
    arg_names: tuple[str, ...] = ()


def kernel_ref(compiled: Any, arg_names: list[str]) -> KernelRef:
    """The ``KernelRef`` of a Triton ``CompiledKernel`` (as ``JITFunction.run(warmup=True)`` returns it)."""
    group = getattr(compiled, "metadata_group", None)
    if not group:
        raise UnsendableArgument(f"{getattr(compiled, 'name', 'the kernel')} has no files in Triton's cache")
    return KernelRef(kind="triton", name=str(compiled.name), key=str(compiled.hash), files=dict(group),
                     signature=dict(compiled.src.signature), arg_names=tuple(arg_names))


def _storage_bytes(storage: Any) -> bytes:
    import torch

    cpu = storage.cpu() if storage.device.type != "cpu" else storage
    return bytes(torch.empty(0, dtype=torch.uint8).set_(cpu).numpy().tobytes())


class Encoder:
    """Client side: turns launch arguments into specs and the storages the worker does not hold yet."""

    def __init__(self, mode: str = "ipc") -> None:
        if mode not in ("ipc", "copy"):
            raise ValueError(f"mode {mode!r}")
        self.mode = mode
        self._sent: dict[int, tuple[int, Any, int, int]] = {}  # storage cdata -> (token, weakref, ptr, nbytes)
        self._pending: dict[int, Any] = {}  # token -> payload, for the next request
        self._drop: list[int] = []
        self._copied: dict[tuple[int, int], int] = {}  # copy mode: (ptr, nbytes) -> token, per request

    def encode(self, values: list[Any], constexpr: list[bool]) -> list[Any]:
        return [("c", None) if c else self._spec(v) for v, c in zip(values, constexpr, strict=True)]

    def take(self) -> tuple[dict[int, Any], list[int]]:
        """The storages to send with this request and the tokens the worker may drop."""
        storages, drop = self._pending, self._drop
        self._pending, self._drop, self._copied = {}, [], {}
        return storages, drop

    def collect(self) -> None:
        """Forget storages the notebook has freed (their tokens go out with the next request)."""
        for cdata, (token, ref, _, _) in list(self._sent.items()):
            if ref.expired():
                del self._sent[cdata]
                self._drop.append(token)

    def _spec(self, v: Any) -> Any:
        if v is None or isinstance(v, bool | int | float | str):
            return ("v", v)
        if is_tensor(v):
            return self._tensor(v)
        if isinstance(v, tuple):
            return ("u", [self._spec(x) for x in v])
        if dataclasses.is_dataclass(v) and not isinstance(v, type):
            fields = {f.name: self._spec(getattr(v, f.name)) if is_tensor(getattr(v, f.name))
                      else ("v", getattr(v, f.name)) for f in dataclasses.fields(v) if f.init}
            return ("d", type(v), fields)
        if hasattr(v, "data_ptr"):
            raise UnsendableArgument(f"{type(v).__name__} is not a torch tensor: it cannot be shared with a worker")
        return ("v", v)

    def _tensor(self, t: Any) -> Any:
        if self.mode == "ipc" and t.device.type != "cuda":
            raise UnsendableArgument(f"a {t.device.type} tensor ({tuple(t.shape)}, {t.dtype}) was passed to a GPU "
                                     "kernel: create it on the GPU (device=DEVICE)")
        storage = t.untyped_storage()
        token = self._token(storage)
        return ("t", token, str(t.dtype).replace("torch.", ""), int(t.storage_offset()),
                tuple(int(s) for s in t.shape), tuple(int(s) for s in t.stride()))

    def _token(self, storage: Any) -> int:
        if self.mode == "copy":
            where = (storage.data_ptr(), storage.nbytes())
            if where not in self._copied:
                self._copied[where] = token = next(_TOKENS)
                self._pending[token] = ("bytes", storage.nbytes(), _storage_bytes(storage))
            return self._copied[where]
        from torch.multiprocessing.reductions import StorageWeakRef

        cdata = storage_id(storage)
        known = self._sent.get(cdata)
        if known is not None:
            token, ref, ptr, nbytes = known
            if not ref.expired() and ptr == storage.data_ptr() and nbytes == storage.nbytes():
                return token
            del self._sent[cdata]
            self._drop.append(token)
        token = next(_TOKENS)
        self._sent[cdata] = (token, StorageWeakRef(storage), storage.data_ptr(), storage.nbytes())
        self._pending[token] = ("ipc", _whole(storage))
        return token


def _whole(storage: Any) -> Any:
    """A uint8 tensor over the whole storage (what torch.multiprocessing pickles as a CUDA IPC handle)."""
    import torch

    return torch.empty(0, dtype=torch.uint8, device=storage.device).set_(storage)


class Decoder:
    """Worker side: holds the storages by token and rebuilds arguments around them."""

    def __init__(self, device: str = "cuda") -> None:
        self.device = device
        self.storages: dict[int, Any] = {}

    def add(self, payloads: dict[int, Any]) -> None:
        import torch

        for token, payload in payloads.items():
            kind = payload[0]
            if kind == "ipc":
                self.storages[token] = payload[1]
            elif kind == "bytes":
                _, nbytes, data = payload
                host = torch.empty(0, dtype=torch.uint8)
                if nbytes:
                    host = torch.frombuffer(bytearray(data), dtype=torch.uint8)
                self.storages[token] = host.to(self.device) if self.device != "cpu" else host
            else:
                raise ValueError(f"unknown storage payload {kind!r}")

    def drop(self, tokens: list[int]) -> None:
        for token in tokens:
            self.storages.pop(token, None)

    def decode(self, spec: Any) -> Any:
        tag = spec[0]
        if tag in ("c", "v"):
            return spec[1]
        if tag == "u":
            return tuple(self.decode(s) for s in spec[1])
        if tag == "t":
            return self._tensor(*spec[1:])
        if tag == "d":
            cls, fields = spec[1], spec[2]
            return cls(**{name: self.decode(s) for name, s in fields.items()})
        raise ValueError(f"unknown argument spec {tag!r}")

    def _tensor(self, token: int, dtype: str, offset: int, shape: tuple, stride: tuple) -> Any:
        import torch

        base = self.storages.get(token)
        if base is None:
            raise KeyError(f"storage {token} was not sent to this worker")
        view = torch.empty(0, dtype=getattr(torch, dtype), device=base.device)
        return view.set_(base.untyped_storage(), offset, shape, stride)
