"""The Artifact: everything one compilation produced, for one kernel and one target (built by `workbench.compile`)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Metadata:
    """Resource facts about a compiled kernel. Registers and spills come from the cubin."""

    name: str
    target: str
    triton_version: str
    num_warps: int
    num_stages: int
    num_ctas: int
    shared_bytes: int
    registers: int | None = None
    spill_stores: int | None = None  # bytes stored to local memory by spills
    spill_loads: int | None = None
    local_bytes: int | None = None  # stack frame bytes per thread
    max_threads: int | None = None
    # warp-specialized kernels: one entry per async task (workbench.compile.tasks)
    tasks: list[dict[str, Any]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def spills(self) -> int | None:
        if self.spill_stores is None and self.spill_loads is None:
            return None
        return (self.spill_stores or 0) + (self.spill_loads or 0)

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["spills"] = self.spills
        return d


@dataclass
class ValueUse:
    """One SSA value (or buffer) in TTGIR that carries a layout."""

    value: str  # SSA name without '%', or the user's variable name
    ttgir_line: int  # 1-based line in the TTGIR stage
    user_line: int | None  # 1-based line in the user's source
    type: str  # e.g. 'tensor<128x64xf16, #blocked>'
    shape: list[int]
    dtype: str


@dataclass
class DeclaredLayout:
    """A layout attribute declared at the top of a TTGIR module (`#blocked = #ttg.blocked<...>`)."""

    alias: str  # '#blocked1'
    kind: str  # 'blocked', 'nvidia_mma', 'slice', 'dot_op', 'nvmma_shared', 'swizzled_shared', 'linear', ...
    attr: str  # the attribute text, as in TTGIR
    params: dict[str, Any]
    shared: bool
    uses: list[ValueUse] = field(default_factory=list)


@dataclass
class ValueLayout:
    """A user-facing row of the layout report: one tensor or buffer and the layout it got."""

    name: str  # the user's variable name (or the SSA name where the user gave none)
    line: int | None  # the user's line
    shape: list[int]
    dtype: str
    layout: str  # Gluon form, e.g. 'BlockedLayout([1, 8], [4, 8], [4, 1], [1, 0])'
    ttgir: str  # TTGIR attribute text
    reason: str  # why this layout was chosen
    kind: str = "tensor"  # 'tensor' or 'buffer' or 'barrier'


@dataclass
class Layouts:
    declared: list[DeclaredLayout] = field(default_factory=list)
    values: list[ValueLayout] = field(default_factory=list)
    # Triton's linear layout per (alias, value shape, dtype) the values carry: schema.json's linearLayout
    linear: list[dict[str, Any]] = field(default_factory=list)

    def __iter__(self):
        return iter(self.declared)

    def __len__(self) -> int:
        return len(self.declared)

    def by_alias(self, alias: str) -> DeclaredLayout | None:
        return next((d for d in self.declared if d.alias == alias), None)

    def to_dict(self) -> dict[str, Any]:
        return {
            "declared": [dataclasses.asdict(d) for d in self.declared],
            "values": [dataclasses.asdict(v) for v in self.values],
            "linear": list(self.linear),
        }


@dataclass
class SourceInfo:
    """Where the kernel's source came from. Lines are 1-based lines of ``filename``."""

    filename: str
    first_line: int  # line of the `def` (or decorator) in filename
    text: str  # the whole file (or cell) text, so line numbers resolve
    kernel_text: str  # the kernel function's own source


@dataclass
class Artifact:
    name: str
    target: str
    key: str
    stages: dict[str, str]
    metadata: Metadata
    layouts: Layouts
    source: SourceInfo
    line_maps: dict[str, dict[int, list[int]]]  # stage -> user line -> stage lines
    diagnostics: list[dict[str, Any]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    compiled: Any = field(default=None, repr=False, compare=False)  # triton CompiledKernel
    cache_hit: bool = False

    def source_map(self, stage: str) -> dict[int, list[int]]:
        """User source line (1-based, of ``source.filename``) -> 1-based lines of ``stage``."""
        if stage not in self.stages:
            from workbench.errors import WorkbenchError

            raise WorkbenchError(
                f"stage {stage!r} is not in this artifact",
                hint=f"available stages: {', '.join(self.stages)}",
            )
        return self.line_maps.get(stage, {})

    def reverse_map(self, stage: str) -> dict[int, list[int]]:
        """1-based line of ``stage`` -> user source lines it came from."""
        rev: dict[int, list[int]] = {}
        for user, lines in self.source_map(stage).items():
            for ln in lines:
                rev.setdefault(ln, []).append(user)
        return {k: sorted(set(v)) for k, v in sorted(rev.items())}

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form (no compiled binary)."""
        return {
            "name": self.name,
            "target": self.target,
            "key": self.key,
            "stages": dict(self.stages),
            "metadata": self.metadata.to_dict(),
            "layouts": self.layouts.to_dict(),
            "source": dataclasses.asdict(self.source),
            "line_maps": {s: {str(k): v for k, v in m.items()} for s, m in self.line_maps.items()},
            "diagnostics": list(self.diagnostics),
            "extra": dict(self.extra),
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Artifact:
        md = dict(d["metadata"])
        md.pop("spills", None)
        lay = d.get("layouts", {})
        declared = []
        for x in lay.get("declared", []):
            x = dict(x)
            x["uses"] = [ValueUse(**u) for u in x.get("uses", [])]
            declared.append(DeclaredLayout(**x))
        return cls(
            name=d["name"],
            target=d["target"],
            key=d["key"],
            stages=dict(d["stages"]),
            metadata=Metadata(**md),
            layouts=Layouts(declared, [ValueLayout(**v) for v in lay.get("values", [])], list(lay.get("linear", []))),
            source=SourceInfo(**d["source"]),
            line_maps={s: {int(k): v for k, v in m.items()} for s, m in d.get("line_maps", {}).items()},
            diagnostics=list(d.get("diagnostics", [])),
            extra=dict(d.get("extra", {})),
        )
