"""What crosses the process boundary for one isolated launch, and how it is rebuilt in the worker.

A launch request holds the kernel (a ``KernelRef``: the files Triton's cache holds for it, never the
Python function, which may live in a notebook cell the worker cannot import), the grid, and the
arguments as ``workbench.run.launch_record`` specs whose views name storages by token (a constexpr
parameter, which Triton's launcher skips, is ``Value(None)``). The worker rebuilds them with the same
``launch_record.rebuild`` every other path uses.

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

import itertools
from dataclasses import dataclass, field
from typing import Any

from workbench.compile.triton_reach import storage_id
from workbench.run.launch_record import Record, Value, rebuild, relabel, storage_bytes

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


class Encoder:
    """Client side: turns launch arguments into specs and the storages the worker does not hold yet."""

    def __init__(self, mode: str = "ipc") -> None:
        if mode not in ("ipc", "copy"):
            raise ValueError(f"mode {mode!r}")
        self.mode = mode
        self._sent: dict[int, tuple[int, Any, int, int]] = {}  # storage cdata -> (token, weakref, ptr, nbytes)
        self._pending: dict[int, Any] = {}  # token -> payload, for the next request
        self._drop: list[int] = []
        self.copied: dict[int, Any] = {}  # copy mode: token -> the caller's storage (to write results back)

    def encode(self, values: list[Any], constexpr: list[bool]) -> list[Any]:
        for v in values:
            if hasattr(v, "data_ptr") and not hasattr(v, "untyped_storage"):
                raise UnsendableArgument(f"{type(v).__name__} is not a torch tensor: it cannot be shared with a worker")
        rec = Record.of({i: None if c else v for i, (v, c) in enumerate(zip(values, constexpr, strict=True))})
        tokens = [self._token(rec.live(i)) for i in range(len(rec.storages))]
        return [Value(None) if c else relabel(rec.args[i], tokens) for i, c in enumerate(constexpr)]

    def take(self) -> tuple[dict[int, Any], list[int]]:
        """The storages to send with this request and the tokens the worker may drop."""
        storages, drop = self._pending, self._drop
        self._pending, self._drop = {}, []
        return storages, drop

    def collect(self) -> None:
        """Forget storages the notebook has freed (their tokens go out with the next request)."""
        for cdata, (token, ref, _, _) in list(self._sent.items()):
            if ref.expired():
                del self._sent[cdata]
                self._drop.append(token)

    def _token(self, t: Any) -> int:
        if self.mode == "copy":
            token = next(_TOKENS)
            self._pending[token] = ("bytes", t.untyped_storage().nbytes(), storage_bytes(t))
            self.copied[token] = t.untyped_storage()
            return token
        if t.device.type != "cuda":
            raise UnsendableArgument(f"a {t.device.type} tensor ({tuple(t.shape)}, {t.dtype}) was passed to a GPU "
                                     "kernel: create it on the GPU (device=DEVICE)")
        from torch.multiprocessing.reductions import StorageWeakRef

        storage = t.untyped_storage()
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
        try:
            return rebuild(spec, self.storages)
        except KeyError as e:
            raise KeyError(f"storage {e.args[0]} was not sent to this worker") from None
