"""Compile failures as ``CompileError``s at the user's line, with a hint.

Two ways a compile fails: the front end raises a ``CompilationError`` naming an AST node (Triton's
and TLX's Python-level checks, e.g. a TLX op given a wrong type), or an MLIR pass fails and the
reason is a diagnostic that MLIR printed to stderr, located by ``loc("file":line:col)`` (TLX's verifier
and lowering errors). Either way the error names the user's file (or cell) and line, never a frame
inside Triton.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any

from workbench.analyse.srcmap import same_file
from workbench.errors import CompileError

__all__ = ["first_mlir_error", "from_backend_error", "from_compilation_error"]

_DIAG = re.compile(r'loc\("([^"]+)":(\d+):(\d+)\):\s*error:\s*(.*)')
_DIAG2 = re.compile(r'^([^\s:]+):(\d+):(\d+):\s*error:\s*(.*)$', re.M)


def first_mlir_error(text: str) -> str | None:
    """The first MLIR ``error:`` diagnostic in captured stderr, as ``file:line:col: message``."""
    for pattern in (_DIAG, _DIAG2):
        m = pattern.search(text)
        if m:
            return f"{os.path.basename(m.group(1))}:{m.group(2)}:{m.group(3)}: {m.group(4).strip()}"
    return None


def _chain(e: BaseException) -> Iterator[BaseException]:
    """``e``, then what it was raised from (or while handling), and so on (each once)."""
    seen, cur = set(), e
    while cur is not None and id(cur) not in seen:
        seen.add(id(cur))
        yield cur
        cur = cur.__cause__ or cur.__context__


def _innermost(e: BaseException) -> Any:
    """The innermost ``CompilationError`` in the chain: it names the callee where the error really is."""
    from triton.compiler.errors import CompilationError

    return next((x for x in reversed(list(_chain(e))) if isinstance(x, CompilationError)), e)


def _line_of(text: str, lineno: int | None) -> str | None:
    lines = text.splitlines()
    return lines[lineno - 1] if lineno and 0 < lineno <= len(lines) else None


def from_compilation_error(e: BaseException, source: Any) -> CompileError:
    """A front-end ``CompilationError`` -> CompileError at the user's line.

    ``source`` is the kernel's ``SourceInfo`` (file text, first line). Triton's node line numbers
    count from the start of the failing function's source (``inner.src``), which may be a helper
    ``@jit`` function defined elsewhere in the same file or cell.
    """
    inner = _innermost(e)
    node = getattr(inner, "node", None)
    rel = getattr(node, "lineno", None)
    col = getattr(node, "col_offset", None)
    lineno = None
    if rel is not None and getattr(inner, "src", None):
        first_def = inner.src.splitlines()[0] if inner.src.strip() else ""
        begin = _find_def_line(source.text, first_def) or source.first_line
        lineno = begin + rel - 1
    msg = (getattr(inner, "error_message", None) or str(e) or "compilation failed").strip()
    msg = re.sub(r"^\w+Error\('(.*)'\)$", r"\1", msg, flags=re.S)
    hint = _not_implemented_hint() if _caused_by(inner, NotImplementedError) else hint_for(msg)
    err = CompileError(msg, filename=source.filename, lineno=lineno, col=col,
                       source_line=_line_of(source.text, lineno), hint=hint)
    from triton.compiler.errors import CompileTimeAssertionFailure

    err.config_rejected = any(isinstance(x, CompileTimeAssertionFailure) for x in _chain(e))
    return err


def from_abort(stderr: str, signal: str | None, name: str, source: Any) -> CompileError:
    """A compile child killed by ``signal`` (Triton's or uTLX's C++ aborted) -> CompileError at the kernel's def
    line, with the last line of what the C++ printed that names an error."""
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    said = next((ln for ln in reversed(lines) if "error" in ln.lower() or "assert" in ln.lower()),
                lines[-1] if lines else "")
    where = f": {said}" if said else " without a message"
    first_def = source.kernel_text.splitlines()[0] if source.kernel_text.strip() else ""
    lineno = _find_def_line(source.text, first_def) or source.first_line
    return CompileError(
        f"Triton's compiler aborted ({signal}) on {name} (compiling it or reading its layouts){where}",
        filename=source.filename, lineno=lineno, source_line=_line_of(source.text, lineno),
        hint="the compile ran in a child process, so the notebook lives on; this is a crash inside Triton (or its "
             "TLX plugin), not an error it reports: another config (num_warps, num_stages, block sizes) may compile")


def _caused_by(e: BaseException, kind: type[BaseException]) -> bool:
    """Whether ``e`` was raised from (or while handling) an exception of type ``kind``."""
    return any(isinstance(x, kind) for x in list(_chain(e))[1:])


def _not_implemented_hint() -> str:
    """The hint of an op that the installed TLX plugin does not implement: no change to the kernel's sizes helps."""
    from importlib import metadata

    try:
        where = f"triton-utlx {metadata.version('triton-utlx')}"
    except metadata.PackageNotFoundError:
        where = "the installed Triton"
    return (f"{where} does not implement this op (NotImplementedError): no change of sizes or stages makes it "
            "compile; write the kernel without it")


def _find_def_line(text: str, def_line: str) -> int | None:
    want = def_line.strip()
    if not want:
        return None
    for i, line in enumerate(text.splitlines(), start=1):
        if line.strip() == want:
            return i
    return None


def from_backend_error(e: Exception, captured: str, source: Any) -> CompileError:
    """A failed MLIR pass (or any other backend error) -> CompileError at the first diagnostic that
    names the user's file."""
    text = captured + "\n" + str(e)
    lineno = col = None
    message = None
    for m in list(_DIAG.finditer(text)) + list(_DIAG2.finditer(text)):
        if same_file(m.group(1), source.filename):
            lineno, col, message = int(m.group(2)), int(m.group(3)) - 1, m.group(4).strip()
            break
    if message is None or message.startswith(_GENERIC_PIPELINE_FAILURE):
        message = _assertion(text) or message
    if message is None:
        message = first_mlir_error(text)
    if message is None:
        first = next((ln for ln in text.splitlines() if "error" in ln.lower()), str(e))
        message = first.strip() or type(e).__name__
    stage = _failed_stage(text)
    where = f" ({stage})" if stage else ""
    err = CompileError(f"{type(e).__name__} in Triton's backend{where}: {message}", filename=source.filename,
                       lineno=lineno, col=col, source_line=_line_of(source.text, lineno), hint=hint_for(message))
    from triton.runtime.errors import OutOfResources, PTXASError

    err.config_rejected = isinstance(e, (OutOfResources, PTXASError))
    return err


_GENERIC_PIPELINE_FAILURE = "Failures have been detected while processing an MLIR pass pipeline"
_ASSERTION = re.compile(r"Assertion `(.+?)' failed")


def _assertion(text: str) -> str | None:
    """What a failed C++ assertion in a pass says (its quoted reason when it has one), e.g. "WGMMA type or shape is
    not supported": MLIR then only reports that the pipeline failed, at the kernel's ``def``."""
    m = _ASSERTION.search(text)
    if m is None:
        return None
    quoted = re.search(r'"([^"]+)"', m.group(1))
    return f"{quoted.group(1) if quoted else m.group(1)} (an assertion in Triton's backend failed)"


def _failed_stage(text: str) -> str | None:
    m = re.search(r"PassManager::run failed|pass_manager.*?failed|(\w+) pipeline failed", text)
    if m and "PassManager" in m.group(0):
        return "an MLIR pass failed"
    return None


_SHAPE_WORDS = ("compatible", "broadcast", "mismatch", "same shape", "must be equal", "incompatible")


def hint_for(msg: str) -> str | None:
    low = msg.lower()
    if "is not defined" in low:
        return "inside a kernel only arguments, constexpr globals and jit functions are visible"
    if "shape/strides/offsets" in low and "float" in low:
        return "a Python float stands where Triton wants an integer (an index, an offset, a phase): make it an int"
    if "descriptor block and tensor" in low:
        return ("a TMA copy's buffer must have its descriptor's block shape: compare the tlx.local_alloc shape with "
                "the block_shape of the TensorDescriptor (or tl.make_tensor_descriptor) it is copied with")
    if "wgmma type or shape is not supported" in low:
        return ("no wgmma exists for these tlx.async_dot operands: bf16, fp16 or fp8 tiles in shared memory are the "
                "usual case (fp32 ones run as tf32 and must be K-major), with M a multiple of 64")
    if "'_aggregate_type' object has no attribute 'element_ty'" in low:  # FlagGems 5.0.2's block-pointer kernels
        return ("a block pointer from tl.make_block_ptr (deprecated in Triton 3.8) has no .type.element_ty: read the "
                "element type of the base pointer it was made from (x_ptr.dtype.element_ty), or use a tensor "
                "descriptor (tl.make_tensor_descriptor)")
    if "shape" in low and any(w in low for w in _SHAPE_WORDS):
        return "check the shapes of the operands on this line"
    if "out of resource" in low or "shared memory" in low:
        return "reduce block sizes, the number of buffers (stages) or the epilogue buffer"
    if "power of 2" in low:
        return "block sizes passed to tl.arange must be powers of two"
    if "must be a descriptor of nxi64" in low:  # given the whole array of barriers
        return "a wait, arrive or expect takes one barrier: index the array tlx.alloc_barriers made (bars[i])"
    if "barrier" in low:
        return "check the barrier's type (tlx.alloc_barriers(...) then bars[i]) and its phase"
    if "registers" in low or "setmaxnreg" in low:
        return "register budgets (async_task(registers=...)) must be multiples of 8 between 24 and 256"
    return None
