"""The Report: one JSON-serialisable record per kernel per ``%%tlx`` cell run.

Its JSON form is described by ``workbench/report/schema.json`` (the contract with the
JupyterLab extension). ``_repr_mimebundle_`` gives the extension's MIME type (stages stored once,
gzip+base64: packing.py), a compact self-contained HTML fallback and a short text summary.
"""

from __future__ import annotations

import copy
import functools
import json
import linecache
import platform
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.compile.kernel_kinds import kernel_kind
from workbench.ir import schema_types as st
from workbench.ir.json_values import jsonable
from workbench.report.highlight import language_of_stage
from workbench.report.packing import pack_stage_diff, pack_stages, unpack_stage, unpack_stage_diff
from workbench.report.sections._common import now as _now
from workbench.report.summaries import write_shown

__all__ = ["BUDGET_BYTES", "MIME_TYPE", "SCHEMA_PATH", "SCHEMA_VERSION", "Report", "load_schema", "validate"]

SCHEMA_VERSION = "2.8"
MIME_TYPE = "application/vnd.tlx-workbench.report+json"
SCHEMA_PATH = Path(__file__).with_name("schema.json")
BUDGET_BYTES = 512 * 1024  # one Report in a notebook, all its representations (issue 17)


@functools.lru_cache(maxsize=1)
def load_schema() -> dict[str, Any]:
    """The Report JSON Schema (draft 2020-12)."""
    return json.loads(SCHEMA_PATH.read_text())


@functools.lru_cache(maxsize=1)
def _validator():
    import jsonschema

    schema = load_schema()
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema)


def validate(data: dict[str, Any]) -> None:
    """Raise ``jsonschema.ValidationError`` when ``data`` is not a valid Report."""
    _validator().validate(data)


def versions() -> dict[str, Any]:
    import triton

    from workbench._version import __version__

    try:
        import torch

        torch_version: str | None = torch.__version__
    except Exception:
        torch_version = None
    return {
        "workbench": __version__,
        "triton": triton.__version__,
        "torch": torch_version,
        "python": platform.python_version(),
    }


def _code_filename(kernel: Any) -> str | None:
    """The file (or cell) a kernel's Python function was defined in."""
    from workbench.compile.tuners import base_jit

    fn = getattr(base_jit(kernel), "fn", None)
    code = getattr(fn, "__code__", None)
    return code.co_filename if code is not None else None


def _stage_entries(artifact: Any) -> list[st.Stage]:
    out = []
    for name, text in artifact.stages.items():
        lmap = artifact.line_maps.get(name, {}) or {}
        out.append(
            {
                "name": name,
                "language": language_of_stage(name),
                "text": text if isinstance(text, str) else repr(text),
                "line_map": {str(int(k)): sorted({int(x) for x in v}) for k, v in lmap.items()},
            }
        )
    return out


def _diagnostic(d: dict[str, Any] | Any, source: str | None = None) -> st.Diagnostic:
    if not isinstance(d, dict):
        d = {"message": str(d)}
    sev = str(d.get("severity", d.get("level", "warning"))).lower()
    if sev not in ("error", "warning", "info"):
        sev = {"note": "info", "remark": "info", "warn": "warning", "fatal": "error"}.get(sev, "warning")
    line = d.get("line", d.get("lineno"))
    out: st.Diagnostic = {
        "severity": sev,
        "message": str(d.get("message", "")),
        "line": int(line) if isinstance(line, int) else None,
        "hint": d.get("hint") if isinstance(d.get("hint"), str) else None,
        "col": d.get("col") if isinstance(d.get("col"), int) else None,
        "source": d.get("source", source),
    }
    return out


def _anchored_source(src: Any, kernel: Any) -> tuple[str, str]:
    """(filename, text) of the kernel's source. A cached artifact may come from an earlier version of the cell
    (same kernel source at the same line, other cell text around it): it is re-anchored to the file the kernel
    object comes from now."""
    defined_in = _code_filename(kernel) if kernel is not None else None
    if defined_in and defined_in != src.filename:
        now_text = "".join(linecache.getlines(defined_in))
        if now_text:
            return defined_in, now_text
    return src.filename, src.text


def kind_of(artifact: Any, kernel: Any) -> str:
    """triton / gluon / tlx / other: what the compile recorded, else what the kernel (or its stages) says."""
    kind = artifact.extra.get("kind") if isinstance(artifact.extra, dict) else None
    if kind in ("triton", "gluon", "tlx", "other"):
        return kind
    return kernel_kind(kernel) if kernel is not None else ("tlx" if "tlx" in artifact.stages else "triton")


def _compile_ms(artifact: Any) -> float | None:
    """The compile's wall time as the artifact recorded it (None if it did not)."""
    extra = artifact.extra if isinstance(artifact.extra, dict) else {}
    secs = extra.get("compile_seconds")
    if secs is None:
        secs = (extra.get("timings") or {}).get("total")
    return secs * 1e3 if isinstance(secs, (int, float)) else None


def _kernel_entry(artifact: Any, kind: str, compile_ms: float | None, launches: int,
                  anchored: tuple[str, str | None, bool]) -> st.Kernel:
    """The Report's ``kernel`` object; ``anchored``: the source's (filename, text, defined in the cell?)."""
    filename, text, in_cell = anchored
    src = artifact.source
    kernel_text = src.kernel_text or ""
    n_lines = max(kernel_text.rstrip("\n").count("\n") + 1, 1)
    first_line = int(src.first_line) if src.first_line else 1
    return {
        "name": artifact.name,
        "kind": kind,
        "target": artifact.target,
        "key": artifact.key,
        "cache_hit": bool(artifact.cache_hit),
        "compile_ms": compile_ms,
        "launches": launches,
        "source": {
            "filename": filename,
            "first_line": max(first_line, 1),
            "last_line": first_line + n_lines - 1,
            "text": text or kernel_text,
            "kernel_text": kernel_text,
            "in_cell": in_cell,
        },
    }


def _orchestration(artifact: Any, runs: list[st.Run] | None, values: tuple[dict[str, int], Any] | None) \
        -> st.Orchestration:
    from workbench.report.orchestration import build

    return build(artifact, runs, values)


@dataclass
class Report:
    """Everything one cell run learned about one kernel. ``to_dict()`` validates against schema.json."""

    kernel: st.Kernel
    cell: st.Cell
    stages: list[st.Stage]
    metadata: st.Metadata
    layouts: st.Layouts
    runs: list[st.Run] = field(default_factory=list)
    measurements: list[st.Measurement] = field(default_factory=list)
    timeline: st.Timeline | None = None
    diagnostics: list[st.Diagnostic] = field(default_factory=list)
    findings: list[st.Finding] = field(default_factory=list)  # workbench.check's static findings
    device: st.Device = field(default_factory=lambda: {"available": False, "kind": "none", "name": None})
    versions: st.Versions = field(default_factory=versions)
    previous: st.Diff | None = None
    view: st.View = field(default_factory=lambda: {"stages_first": [], "selected_stage": None})
    options: dict[str, Any] = field(default_factory=dict)
    kernels: list[str] = field(default_factory=list)
    search: dict[str, Any] | None = None  # %%tlx --search: the search's rows (workbench.search), for the Search tab
    orchestration: st.Orchestration | None = None  # a TLX kernel's model and simulated run (report.orchestration)
    id: str = field(default_factory=lambda: uuid.uuid4().hex)
    created: str = field(default_factory=_now)
    schema_version: str = SCHEMA_VERSION
    artifact: Any = field(default=None, repr=False, compare=False)  # the Artifact (not serialised)
    # the cell's launch as workbench.export needs it (report/export_launch.py; not serialised)
    launch: Any = field(default=None, repr=False, compare=False)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_artifact(
        cls,
        artifact: Any,
        *,
        kernel: Any = None,
        cell_source: str | None = None,
        cell_filename: str | None = None,
        cell_id: str | None = None,
        execution_count: int | None = None,
        runs: list[dict[str, Any]] | None = None,
        launches: int = 0,
        compile_ms: float | None = None,
        device: dict[str, Any] | None = None,
        stages_first: list[str] | None = None,
        options: dict[str, Any] | None = None,
        diagnostics: list[dict[str, Any]] | None = None,
        launch_values: tuple[dict[str, int], Any] | None = None,
    ) -> Report:
        """Build a Report from a ``workbench.compile`` Artifact and what the cell run recorded. ``launch_values``:
        the launch's scalar values by TTGIR name and its grid (or None), which the orchestration payload's
        simulation follows loops with (default: those of the last run in ``runs``; a cell that only compiled
        has none there)."""
        src_filename, src_text = _anchored_source(artifact.source, kernel)
        in_cell = cell_filename is not None and src_filename == cell_filename
        kind = kind_of(artifact, kernel)
        stages = _stage_entries(artifact)
        names = [s["name"] for s in stages]
        first = [s for s in (stages_first or []) if s in names]
        diags = [_diagnostic(d, "compile") for d in (artifact.diagnostics or [])]
        diags += [_diagnostic(d) for d in (diagnostics or [])]
        if compile_ms is None:
            compile_ms = _compile_ms(artifact)
        kernel_entry = _kernel_entry(artifact, kind, compile_ms, int(launches), (src_filename, src_text, in_cell))
        return cls(
            kernel=kernel_entry,
            cell={
                "source": cell_source if cell_source is not None else (src_text or ""),
                "filename": cell_filename or src_filename,
                "kernel_first_line": kernel_entry["source"]["first_line"] if in_cell else None,
                "magic_line": (cell_source or "").split("\n", 1)[0] if cell_source else "",
                "cell_id": cell_id,
                "execution_count": execution_count,
            },
            stages=stages,
            metadata=jsonable(artifact.metadata.to_dict()),
            layouts=jsonable(artifact.layouts.to_dict()),
            runs=list(runs or []),
            diagnostics=diags,
            device=device or {"available": False, "kind": "none", "name": None, "arch": None, "reason": None},
            view={
                "stages_first": first,
                "selected_stage": first[0] if first else None,  # None: the viewer's default (TTGIR, PTX)
            },
            options=dict(options or {}),
            orchestration=_orchestration(artifact, runs, launch_values) if kind == "tlx" else None,
            artifact=artifact,
        )

    # ------------------------------------------------------------------ access
    @property
    def name(self) -> str:
        return str(self.kernel.get("name", ""))

    @property
    def stage_names(self) -> list[str]:
        return [s["name"] for s in self.stages]

    def stage(self, name: str) -> str:
        """The text of stage ``name`` (e.g. 'ttgir', 'ptx', 'sass')."""
        for s in self.stages:
            if s["name"] == name:
                return s["text"]
        raise KeyError(f"stage {name!r} not in this Report (stages: {', '.join(self.stage_names)})")

    def line_map(self, name: str) -> dict[int, list[int]]:
        for s in self.stages:
            if s["name"] == name:
                return {int(k): list(v) for k, v in s["line_map"].items()}
        raise KeyError(name)

    @property
    def checks(self) -> list[dict[str, Any]]:
        return [c for r in self.runs for c in r.get("checks", [])]

    @property
    def ran(self) -> bool:
        return any(r.get("ran") for r in self.runs)

    @property
    def passed(self) -> bool | None:
        """True when every check passed, False when one failed, None when nothing was checked."""
        done = [c for c in self.checks if c["status"] in ("passed", "failed", "error")]
        if not done:
            return None
        return all(c["status"] == "passed" for c in done)

    # ------------------------------------------------------------------ serialisation
    _FIELDS = (
        "schema_version",
        "id",
        "created",
        "kernel",
        "cell",
        "stages",
        "metadata",
        "layouts",
        "runs",
        "measurements",
        "timeline",
        "diagnostics",
        "findings",
        "device",
        "versions",
        "previous",
        "view",
        "options",
        "kernels",
        "search",
        "orchestration",
    )

    def to_dict(self, max_bytes: int | None = None) -> dict[str, Any]:
        """The JSON form (schema.json): large stage texts and stage diffs gzip+base64 (packing.py).
        ``max_bytes``: the JSON stays within it by storing only the first lines of the largest stages."""
        from workbench.report.orchestration_marks import decorate

        d = jsonable({k: getattr(self, k) for k in self._FIELDS if k != "stages"})
        snapshot = next((r["snapshot"] for r in reversed(d["runs"]) if isinstance(r.get("snapshot"), dict)), None)
        stress = ((d["search"] or {}).get("info") or {}).get("stress")
        d["orchestration"] = decorate(d["orchestration"], d["findings"], d["timeline"], snapshot, stress)
        write_shown(d)  # lines and views the viewer shows as they are
        if isinstance(self.previous, dict) and isinstance(self.previous.get("stages"), list):
            d["previous"] = {**d["previous"], "stages": [pack_stage_diff(s) for s in d["previous"]["stages"]]}
        room = None if max_bytes is None else max_bytes - len(json.dumps(d))
        d["stages"] = jsonable(pack_stages(self.stages, room))
        return {k: d[k] for k in self._FIELDS}

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Report:
        """A Report from its JSON form (this schema version or 1.0, whose texts are plain)."""
        data = copy.deepcopy(data)
        kwargs = {k: data[k] for k in cls._FIELDS if k in data}
        kwargs["stages"] = [unpack_stage(s) for s in kwargs.get("stages", [])]
        for s in kwargs["stages"]:
            s.pop("line_count", None)  # full_line_count stays: this stage is only the head of the compiled one
        prev = kwargs.get("previous")
        if isinstance(prev, dict) and isinstance(prev.get("stages"), list):
            kwargs["previous"] = {**prev, "stages": [unpack_stage_diff(s) for s in prev["stages"]]}
        kwargs["schema_version"] = SCHEMA_VERSION
        return cls(**kwargs)

    @classmethod
    def from_json(cls, text: str) -> Report:
        return cls.from_dict(json.loads(text))

    def save(self, path: str | Path) -> None:
        Path(path).write_text(self.to_json(indent=1))

    def validate(self) -> None:
        """Raise ``jsonschema.ValidationError`` when this Report does not match schema.json."""
        validate(self.to_dict())

    # ------------------------------------------------------------------ comparison
    def diff(self, other: Report) -> st.Diff:
        """How this Report differs from ``other`` (an earlier run); the schema's ``previous`` object."""
        from workbench.report.diff import diff_reports

        return diff_reports(other, self)

    # ------------------------------------------------------------------ display
    def summary(self) -> str:
        from workbench.report.text import summary

        return summary(self)

    def to_html(self) -> str:
        from workbench.report.html import render

        return render(self)

    def __repr__(self) -> str:
        return f"<Report {self.name} {self.kernel.get('target')} {self.id[:8]}>"

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict[str, Any]:
        """The three representations, together within BUDGET_BYTES (the JSON gives way)."""
        wanted = [k for k in (MIME_TYPE, "text/html", "text/plain")
                  if (not include or k in include) and (not exclude or k not in exclude)]
        bundle: dict[str, Any] = {}
        if "text/html" in wanted:
            bundle["text/html"] = self.to_html()
        if "text/plain" in wanted:
            bundle["text/plain"] = self.summary()
        if MIME_TYPE in wanted:
            rest = sum(len(v) for v in bundle.values())
            bundle[MIME_TYPE] = self.to_dict(max_bytes=BUDGET_BYTES - rest - 8 * 1024)
        return {k: bundle[k] for k in wanted}
