"""Line diffs of one stage of two artifacts."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from workbench.ir import ptx, sass
from workbench.ir.mlir_loc import is_loc_definition, strip_loc


def _normalise(stage: str, text: str, ignore_locations: bool) -> list[str]:
    lines = text.splitlines()
    if not ignore_locations:
        return lines
    out = []
    for line in lines:
        if is_loc_definition(line) or ptx.is_loc(line) or sass.is_line_info(line):
            continue
        text, expr = strip_loc(line)
        out.append(text if expr is not None else line)
    return out


@dataclass
class StageDiff:
    stage: str
    a_name: str
    b_name: str
    unified: str
    added: int
    removed: int
    opcodes: list[tuple[str, int, int, int, int]] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.added > 0 or self.removed > 0

    def __str__(self) -> str:
        return self.unified

    def _repr_mimebundle_(self, include=None, exclude=None):
        summary = f"{self.stage}: +{self.added} -{self.removed} lines ({self.a_name} -> {self.b_name})"
        return {"text/plain": summary + "\n" + self.unified}

    def to_dict(self) -> dict:
        return {
            "stage": self.stage,
            "a": self.a_name,
            "b": self.b_name,
            "unified": self.unified,
            "added": self.added,
            "removed": self.removed,
        }


def diff(a, b, stage: str = "ttgir", *, ignore_locations: bool = True, context: int = 3) -> StageDiff:
    """Line diff of ``stage`` between two artifacts, two Reports (``%%tlx -o NAME``; a saved Report holds every
    stage whole) or two stage texts.

    Location attributes (MLIR ``loc(...)``, PTX ``.loc``, SASS line comments) are dropped by
    default, so moving code down a line does not show as a change of every op.
    """
    from workbench.errors import WorkbenchError

    def text_of(x, label):
        if isinstance(x, str):
            return x, label
        if callable(getattr(x, "stage", None)) and hasattr(x, "stage_names"):  # a Report (duck-typed: no import up)
            names, text = list(x.stage_names), (x.stage(stage) if stage in x.stage_names else None)
            key = str((getattr(x, "kernel", None) or {}).get("key") or "")
        else:
            names, text, key = list(x.stages), x.stages.get(stage), str(x.key)
        if text is None:
            raise WorkbenchError(f"{type(x).__name__} {x.name!r} has no stage {stage!r}",
                                 hint=f"stages: {', '.join(names)}")
        return text, f"{x.name}@{key[:8]}" if key else x.name

    ta, na = text_of(a, "a")
    tb, nb = text_of(b, "b")
    la, lb = _normalise(stage, ta, ignore_locations), _normalise(stage, tb, ignore_locations)
    sm = difflib.SequenceMatcher(a=la, b=lb, autojunk=False)
    ops = [op for op in sm.get_opcodes() if op[0] != "equal"]
    added = sum(j2 - j1 for tag, _, _, j1, j2 in ops if tag in ("insert", "replace"))
    removed = sum(i2 - i1 for tag, i1, i2, _, _ in ops if tag in ("delete", "replace"))
    unified = "\n".join(
        difflib.unified_diff(la, lb, fromfile=f"{na}:{stage}", tofile=f"{nb}:{stage}", n=context, lineterm="")
    )
    return StageDiff(stage, na, nb, unified, added, removed, ops)
