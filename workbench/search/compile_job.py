"""One candidate's compile and static checks, in whatever process runs it (a Ray task, or this one).

No GPU is needed: the arguments are rebuilt as ``meta`` tensors, and the compile stops at what the checks and
the table need (``workbench.compile(detail="checks")``: no SASS listing, layouts or line maps but TTGIR's). The
outcome carries what the table shows (registers, spills, shared memory, findings, compile time) and the
kernel's binary (its cubin and metadata), which a GPU worker on any node loads and launches without compiling.
A candidate's full Report is compiled again when asked for (``SearchResult.report``: a Triton cache hit).
"""

from __future__ import annotations

import contextlib
import socket
import time
import traceback
from dataclasses import dataclass, field
from typing import Any

from workbench.compile import portable
from workbench.compile.delays import delayed
from workbench.compile.resource_gate import stop_over_total
from workbench.errors import WorkbenchError
from workbench.search.problem import Problem
from workbench.search.space import Candidate

__all__ = ["Binary", "CompileOutcome", "compile_candidate", "node_name"]

_KERNELS: dict[str, Any] = {}  # problem id -> the kernel, loaded once per process


@dataclass
class Binary:
    """A compiled kernel as Triton's cache holds it: enough to launch it anywhere (``workbench.run.worker``)."""

    name: str
    hash: str
    signature: dict[str, str]
    files: dict[str, bytes]


@dataclass
class CompileOutcome:
    index: int
    status: str  # "compiled", "skipped" (an error finding), "compile-error"
    compile_s: float
    node: str
    row: dict[str, Any] = field(default_factory=dict)  # registers, spills, shared memory, findings
    error: str | None = None
    binary: Binary | None = None


def node_name() -> str:
    """This process's node: the Ray node id when under Ray (two nodes can share a host), else the host name."""
    try:
        import ray

        if ray.is_initialized():
            return f"{socket.gethostname()}:{ray.get_runtime_context().get_node_id()[:8]}"
    except Exception:
        pass
    return socket.gethostname()


def _kernel(problem: Problem) -> Any:
    k = _KERNELS.get(problem.id)
    if k is None:
        if problem.utlx:
            import triton.language.extra.tlx  # noqa: F401 (its import installs uTLX's stages hook)
        k = _KERNELS[problem.id] = portable.loads(problem.kernel)
    return k


_LAUNCH_FILES = (".cubin", ".json", ".hsaco")  # what Triton's launcher loads (the IR stays behind)


def _binary(compiled: Any) -> Binary | None:
    group = getattr(compiled, "metadata_group", None) or {}
    files = {}
    for name, path in group.items():
        if not name.endswith(_LAUNCH_FILES) or name.startswith("__grp__"):
            continue
        with open(path, "rb") as f:
            files[name] = f.read()
    if not files:
        return None
    return Binary(str(compiled.name), str(compiled.hash), dict(compiled.src.signature), files)


def _resources(art: Any) -> dict[str, Any]:
    md = art.metadata
    return {"registers": md.registers, "spills": md.spills, "shared_kib": round(md.shared_bytes / 1024, 1),
            "local_bytes": md.local_bytes, "num_warps": md.num_warps,
            "tasks": len(md.tasks) or None}


def _findings(art: Any, kernel: Any, values: dict[str, Any], options: dict[str, Any], grid: Any) -> list[dict]:
    from workbench.check import check_artifact

    kw = {**values, **options}
    return [f.to_dict() for f in check_artifact(art, kernel, grid=tuple(grid) if grid else None, **kw)]


def compile_candidate(problem: Problem, cand: Candidate) -> CompileOutcome:
    """Compile ``cand`` for ``problem.target`` and check it; never raises (a failure is the outcome's status)."""
    t0 = time.perf_counter()
    node = node_name()
    if cand.error:
        return CompileOutcome(cand.index, "compile-error", 0.0, node, error=cand.error)
    try:
        from workbench.compile import compile as compile_kernel

        kernel = _kernel(problem)
        values, _ = problem.record.build("meta", blocks=cand.blocks)
        plan = None
        with stop_over_total(), contextlib.ExitStack() as stack:  # one that cannot fit stops before PTX and ptxas
            if cand.delay is not None:  # a stress run's build: sleeps before its synchronisation points
                plan = stack.enter_context(delayed(*cand.delay))
            art = compile_kernel(kernel, target=problem.target, binary=True, detail="checks", **values,
                                 **cand.options)
    except Exception as e:
        finding = getattr(e, "finding", None)
        if finding is not None:  # the shared-memory gate: as the static checks' error finding would say it
            return CompileOutcome(cand.index, "skipped" if problem.skip_on_error else "compile-error",
                                  time.perf_counter() - t0, node, {"findings": [finding]},
                                  error=f"line {finding['line']}: [smem-limit] {finding['message']}")
        return CompileOutcome(cand.index, "compile-error", time.perf_counter() - t0, node, error=_error_text(e))
    compile_s = time.perf_counter() - t0
    row = _resources(art)
    row["cache_hit"] = bool(art.cache_hit)
    if plan is not None and art.compiled is not None:
        plan.read(art.compiled.asm.get("ptx", ""), art.source.filename, art.stages.get("ttgir"))
        row["delayed"] = [f"{s.kind}@{s.line}" for s in plan.delayed]
    try:
        findings = _findings(art, kernel, values, cand.options, cand.grid)
    except Exception as e:
        findings = [{"rule": "checks-failed", "severity": "info", "line": None,
                     "message": f"the orchestration checks failed: {type(e).__name__}: {e}"}]
    row["findings"] = [f for f in findings if f.get("severity") in ("error", "warning")]
    errors = [f for f in findings if f.get("severity") == "error"]
    status = "skipped" if errors and problem.skip_on_error else "compiled"
    binary = _binary(art.compiled) if art.compiled is not None else None
    return CompileOutcome(cand.index, status, compile_s, node, row,
                          error="; ".join(f"line {f.get('line')}: [{f.get('rule')}] {f.get('message')}"
                                          for f in errors[:3]) or None, binary=binary)


def _error_text(e: BaseException) -> str:
    if isinstance(e, WorkbenchError):
        return str(e)
    tail = traceback.format_exception_only(type(e), e)
    return "".join(tail).strip()[-2000:] or type(e).__name__
