"""``workbench.export(report, "trace.ndjson")``: a cell's compile and launch records in TritonParse's format.

TritonParse (``pip install tritonparse``) records Triton's compilations and launches as a structured log:
NDJSON, one event per line. What its parser (``tritonparse.parse.utils.unified_parse``) and web viewer read,
as tritonparse 0.6.0 writes and validates it (its ``validation/schemas``):

- ``{"event_type": "compilation", "pid", "timestamp", "stack", "payload": {"metadata": {"hash", "name",
  "num_warps", "shared", "backend_name", "target", ...}, "file_content": {"<name>.ttir": text, ...},
  "python_source": {"file_path", "start_line", "end_line", "code", ...}}}``: the parser maps every stage's
  locations to the Python source and to each other;
- ``{"event_type": "launch", "pid", "timestamp", "stack", "name", "grid", "compilation_metadata": {"hash", ...},
  "extracted_args": {"<arg>": {"type": "tensor", "shape", "dtype", "stride", ...}}}``, joined to its compilation
  by the hash.

Everything is written from what the Report holds (its stages, metadata, source and run records), so a Report
loaded from JSON exports too; while the cell's Triton objects are at hand (``Report.artifact.compiled``,
``Report.launch``) Triton's own metadata and the descriptors' strides are added. One launch event per recorded
launch (the Report keeps up to 16): a launch that only compiled, with no GPU, says so in ``workbench_run``.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any

from workbench.report.report import jsonable
from workbench.run.launch_record import Value

__all__ = ["LOG_PREFIX", "trace_events", "write_trace"]

LOG_PREFIX = "dedicated_log_triton_trace_"  # tritonparse's parser reads files named so (from a folder or alone)

_EXTENSIONS = {"ttir": ".ttir", "ttgir": ".ttgir", "llir": ".llir", "ptx": ".ptx", "sass": ".sass"}


def _arch(target: str | None) -> int:
    digits = "".join(ch for ch in str(target or "") if ch.isdigit())
    return int(digits) if digits else 90


def _metadata(report: Any) -> dict[str, Any]:
    md, k = report.metadata or {}, report.kernel
    arch = _arch(k.get("target"))
    out = {
        "hash": str(k.get("key") or report.id), "name": md.get("name") or report.name,
        "num_warps": md.get("num_warps"), "num_stages": md.get("num_stages"), "num_ctas": md.get("num_ctas"),
        "shared": md.get("shared_bytes"), "backend_name": "cuda", "arch": f"sm{arch}",
        "target": {"backend": "cuda", "arch": arch, "warp_size": 32},
        "triton_version": (report.versions or {}).get("triton"), "cache_hit": bool(k.get("cache_hit")),
    }
    compiled = getattr(getattr(report, "artifact", None), "compiled", None)
    if compiled is not None:  # Triton's own metadata, as its structured log writes it
        triton_md = compiled.metadata._asdict()
        target = triton_md.get("target")
        if dataclasses.is_dataclass(target):
            triton_md["target"] = dataclasses.asdict(target)
        out.update(jsonable(triton_md))
    if k.get("compile_ms") is not None:
        out["times"] = {"workbench_compile_ms": k["compile_ms"]}
    return {key: v for key, v in out.items() if v is not None}


def _stack(report: Any) -> list[dict[str, Any]]:
    cell = report.cell
    return [{"line": 1, "name": "<cell>", "filename": str(cell.get("filename") or "<cell>"),
             "loc": cell.get("magic_line") or "%%tlx"}]


def _python_source(report: Any) -> dict[str, Any]:
    src = report.kernel.get("source") or {}
    text = src.get("text") or src.get("kernel_text") or ""
    return {"file_path": str(src.get("filename") or "<cell>"), "start_line": 1,
            "end_line": max(text.count("\n") + 1, 1), "code": text,
            "function_start_line": int(src.get("first_line") or 1),
            "function_end_line": int(src.get("last_line") or src.get("first_line") or 1)}


def compilation_event(report: Any, meta: dict[str, Any]) -> dict[str, Any]:
    name = meta["name"]
    files = {f"{name}{_EXTENSIONS[s['name']]}": s["text"] for s in report.stages if s["name"] in _EXTENSIONS}
    files[f"{name}.json"] = json.dumps(meta)
    extra = {key: (report.metadata or {}).get(key) for key in ("registers", "spill_stores", "spill_loads", "tasks")}
    payload = {"metadata": meta, "file_content": files, "file_path": {}, "python_source": _python_source(report),
               "pt_info": {}, "workbench": {"report": report.id, **jsonable(extra)}}
    return {"event_type": "compilation", "pid": os.getpid(), "timestamp": report.created, "stack": _stack(report),
            "payload": payload}


def _tensor_info(dtype: str | None, shape: list[int], strides: list[int] | None, device: str | None,
                 offset: int | None = None) -> dict[str, Any]:
    numel = 1
    for s in shape:
        numel *= int(s)
    item = _element_size(dtype)
    info = {"type": "tensor", "shape": list(shape), "dtype": f"torch.{dtype}", "device": str(device), "numel": numel,
            "element_size": item, "memory_usage": numel * item}
    if strides is not None:
        contiguous, step = [], 1
        for s in reversed(shape):
            contiguous.insert(0, step)
            step *= max(int(s), 1)
        info.update(stride=list(strides), is_contiguous=list(strides) == contiguous)
    if offset is not None:
        info["storage_offset"] = offset
    return info


def _element_size(dtype: str | None) -> int:
    import torch

    dt = getattr(torch, str(dtype), None)
    return torch.empty((), dtype=dt).element_size() if isinstance(dt, torch.dtype) else 1


def _argument(a: dict[str, Any], live: Any) -> dict[str, Any]:
    kind = a.get("kind")
    if kind == "tensor":
        return _tensor_info(a.get("dtype"), a.get("shape") or [], a.get("strides"), a.get("device"),
                            getattr(live, "offset", None))
    if kind == "descriptor":
        fields = {k: v.value for k, v in live.fields.items() if isinstance(v, Value)} if live is not None else {}
        base = getattr(live, "base", None)
        base_info = _tensor_info(a.get("dtype"), list(base.shape) if base else a.get("shape") or [],
                                 list(base.stride) if base else None, a.get("device"), base.offset if base else None)
        return {"type": "TensorDescriptor", "base": base_info, "shape": jsonable(fields.get("shape", a.get("shape"))),
                "strides": jsonable(fields.get("strides")), "block_shape": (a.get("value") or {}).get("block_shape"),
                "padding": str(fields.get("padding") or "zero")}
    value = a.get("value")
    if kind in ("int", "float", "bool") or (kind == "constexpr" and isinstance(value, (int, float, bool))):
        return {"type": type(value).__name__, "value": value}
    if kind == "none":
        return {"type": "NoneType", "repr": "None"}
    return {"type": kind or "other", "repr": str(value)[:200]}


def launch_events(report: Any, meta: dict[str, Any]) -> list[dict[str, Any]]:
    launch = getattr(report, "launch", None)
    live = launch.record.args if launch is not None else {}
    out = []
    for run in report.runs:
        grid = list(run.get("grid") or [1])
        grid += [1] * (3 - len(grid))
        args = {a["name"]: _argument(a, live.get(a["name"])) for a in run.get("arguments") or []}
        out.append({"event_type": "launch", "pid": os.getpid(), "timestamp": report.created, "stack": _stack(report),
                    "name": meta["name"], "function": None, "stream": 0, "grid": grid,
                    "compilation_metadata": meta, "extracted_args": args, "extracted_inductor_args": {},
                    "workbench_run": {k: run.get(k) for k in ("mode", "ran", "reason", "device", "elapsed_ms")}})
    return out


def trace_events(report: Any) -> list[dict[str, Any]]:
    """The compilation event of the Report's kernel, then one launch event per recorded launch."""
    meta = _metadata(report)
    return [compilation_event(report, meta), *launch_events(report, meta)]


def write_trace(report: Any, path: str | Path) -> Path:
    """Write the events as NDJSON (one JSON object per line) to ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(e) + "\n" for e in trace_events(report)))
    return path
