"""A reproducer's inputs: the launch's tensors made again, as the lines of the script that make them.

Tensors that share storage in the notebook share it in the script (``W[:DU]`` and ``W[DU:]`` stay views of
one ``W``; ``X.reshape(B * C, DX)`` stays a view of ``X``): each storage is made once, under the notebook's
name for it where a ``--check``/``--bench-ref`` expression names it whole, and every other tensor is an
``as_strided`` view of it. A storage's values:

- an output of a check (what its ACTUAL names): NaN (integers: the dtype's minimum), as ``--check``'s
  fresh-input run poisons it, so a tile nothing writes fails the check;
- small ones, while the notebook still holds them: their bytes, inline (up to ``INLINE_BYTES`` in all),
  else in a ``.pt`` file beside the script (up to ``SAVED_BYTES`` in all);
- else random, from the script's seed: normal for floating point (absolute values when the notebook's were
  all non-negative), integers in the notebook's [min, max], random booleans.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any

from workbench.report.export_launch import Launch
from workbench.report.export_sources import Sources, literal
from workbench.run.launch_record import Composite, Value, View, rebuild

__all__ = ["INLINE_BYTES", "SAVED_BYTES", "Inputs"]

INLINE_BYTES = 64 * 1024
SAVED_BYTES = 16 * 1024 * 1024


def _layout(r: View) -> tuple:
    return r.storage, r.shape, r.stride, r.offset


@dataclass
class _Root:
    var: str
    record: View | None  # the tensor the storage is made as (None: a flat buffer)
    dtype: str
    fill: str = "randn"
    extra: dict[str, Any] = field(default_factory=dict)  # repro_tensor's data / low / high / nonnegative
    argument: bool = False  # a launch argument lives in it (else: only an expression names it)


class Inputs:
    """Plans the storages of a launch and writes the lines that make them (``lines``) and what is saved in the
    ``.pt`` file beside the script (``saved``); ``var(record)`` is the script's expression for a tensor."""

    def __init__(self, launch: Launch, sources: Sources, outputs: set) -> None:
        self.launch, self.sources, self.outputs = launch, sources, outputs
        self.rec = rec = launch.record
        self.lines: list[str] = []
        self.saved: dict[str, Any] = {}  # the .pt file's tensors, by variable
        self.inline: dict[str, str] = {}  # base64 of small tensors' bytes, by variable
        self.notes: list[str] = []
        self.problems: list[str] = []
        self._roots: dict[tuple, _Root] = {}
        self._vars: dict[tuple, str] = {}
        self._inline = INLINE_BYTES
        self._save = SAVED_BYTES
        records = [(f"{n}_base" if isinstance(v, Composite) else n, rec.root(n)) for n, v in rec.args.items()
                   if rec.root(n) is not None]
        named = [(t, v) for t, v in launch.names.items() if isinstance(v, View) and t.isidentifier()]
        for n, r in records:
            self._root(r, n, named, records, argument=True)
        self.args = {n: self._argument(n, v) for n, v in rec.args.items()}

    # ------------------------------------------------------------------ storages
    def _root(self, r: View, own: str, named: list, records: list, argument: bool) -> _Root:
        root = self._roots.get(r.storage)
        if root is not None:
            root.argument = root.argument or argument
            return root
        whole = [(t, x) for t, x in named + records
                 if x.storage == r.storage and self.rec.whole(x) and x.dtype == r.dtype]
        if whole:
            name, rec = whole[0]
        else:
            name, rec = f"{own}_storage", None
        root = _Root(self.sources.reserve(name, r), rec, r.dtype, argument=argument)
        self._roots[r.storage] = root
        self._values(root, r)
        shape = rec.shape if rec is not None else (self.rec.storages[r.storage].numel(r.dtype),)
        kw = [f"{k}={literal(v)}" for k, v in root.extra.items() if k != "data"]
        if root.fill == "data":
            self.inline[root.var] = root.extra["data"]
            kw.insert(0, f"data=INLINE[{root.var!r}]")
        elif root.fill == "saved":
            self.saved[root.var] = root.extra["data"]
            kw.insert(0, f"data=saved[{root.var!r}]")
        self.lines.append(f"{root.var} = repro_tensor({literal(shape)}, torch.{r.dtype}, device, generator, "
                          f"{root.fill!r}, run{''.join(', ' + k for k in kw)})")
        self.notes.append(f"{root.var}: {r.dtype} {'x'.join(map(str, shape))}, {self._says(root)}")
        self._vars[_layout(rec) if rec is not None else (r.storage, shape, (1,), 0)] = root.var
        return root

    def _values(self, root: _Root, r: View) -> None:
        if r.storage in self.outputs:
            root.fill = "nan"
            return
        storage, held = self.rec.storages[r.storage], self.rec.live(r.storage)
        numel, nbytes = storage.numel(r.dtype), storage.nbytes
        flat = rebuild(View(r.storage, r.dtype, (numel,), (1,), 0), {r.storage: held}) if held is not None else None
        live = rebuild(r, {r.storage: held}) if held is not None else None
        if flat is not None and nbytes <= self._save:
            flat = flat.detach().cpu().contiguous()
            if nbytes <= self._inline:
                self._inline -= nbytes
                root.fill = "data"
                root.extra["data"] = base64.b64encode(_bytes(flat)).decode()
            else:
                self._save -= nbytes
                root.fill = "saved"
                root.extra["data"] = flat
            return
        if r.dtype == "bool":
            root.fill = "bool"
        elif r.dtype.startswith(("int", "uint")):
            root.fill = "randint"
            if live is not None and live.numel():
                root.extra.update(_int_range(live))
        elif live is not None and live.numel() and bool((live.detach().float().nan_to_num() >= 0).all()):
            root.extra["nonnegative"] = True

    def _says(self, root: _Root) -> str:
        return {"nan": "an output: NaN-filled before the launch", "data": "the notebook's values (inline)",
                "saved": "the notebook's values (the .pt file)", "bool": "random booleans",
                "randint": f"random integers in [{root.extra.get('low', 0)}, {root.extra.get('high', 1)}]"}.get(
            root.fill, "random normal" + (" (absolute values)" if root.extra.get("nonnegative") else ""))

    @property
    def exact(self) -> bool:
        """Whether every input is the notebook's own values (so a tensor the notebook computed from them, such
        as a saved expected output, still fits)."""
        return all(r.fill in ("data", "saved", "nan") for r in self._roots.values() if r.argument)

    # ------------------------------------------------------------------ tensors and arguments
    def var(self, r: View, preferred: str = "t") -> str | None:
        """The script's name for the tensor ``r`` (a view of its storage, made on first use)."""
        known = self._vars.get(_layout(r))
        if known is not None:
            return known
        root = self._roots.get(r.storage)
        if root is None:
            root = self._root(r, preferred, [(preferred, r)] if preferred.isidentifier() else [], [], argument=False)
            if not root.argument and root.fill == "nan":
                self.problems.append(f"{preferred} is checked but is not an argument of this kernel's launch (another "
                                     "kernel of the cell writes it?)")
                return None
            if not root.argument and root.fill not in ("data", "saved"):
                self.problems.append(f"{preferred} is a tensor of the notebook that is not an argument of the launch "
                                     f"and too large to save ({r.dtype} {'x'.join(map(str, r.shape))})")
                return None
            if not root.argument and not self.exact:
                self.problems.append(f"{preferred} was computed in the notebook from inputs the script cannot save "
                                     "(it makes new random ones)")
                return None
            known = self._vars.get(_layout(r))
            if known is not None:
                return known
        name = self.sources.reserve(preferred, r)
        self.lines.append(f"{name} = {root.var}.as_strided({literal(r.shape)}, {literal(r.stride)}, {r.offset})")
        self._vars[_layout(r)] = name
        return name

    def _argument(self, name: str, value: Any) -> str | None:
        if isinstance(value, View):
            return self.var(value, name)
        if isinstance(value, Composite) and value.base is not None:
            base = self.var(value.base, f"{name}_base")
            cls = self.sources.need(value.cls.__name__, value.cls, "the launch")
            fields = ", ".join(f"{k}={literal(v.value)}" for k, v in value.fields.items() if k != "base")
            var = self.sources.reserve(name, value)
            self.lines.append(f"{var} = {cls}({base}, {fields})")
            return var
        text = literal(value.value) if isinstance(value, Value) else None
        if text is None:
            self.problems.append(f"argument {name} is a {type(value).__name__}, which a script cannot write")
        return text


def _int_range(t: Any) -> dict[str, int]:
    """``low``/``high`` of an integer tensor; torch has no min/max of uint16/32/64 on the CPU (FlagGems' sort keys
    are uint32): those are read as int64 (a uint64 above 2^63 reads negative, so an unsigned low is at least 0)."""
    unsigned = str(t.dtype).replace("torch.", "").startswith("uint")
    wide = t.detach().long() if unsigned else t.detach()
    low, high = int(wide.min()), int(wide.max())
    return {"low": max(low, 0) if unsigned else low, "high": max(high, 0) if unsigned else high}


def _bytes(flat: Any) -> bytes:
    import torch

    return flat.view(torch.uint8).numpy().tobytes()
