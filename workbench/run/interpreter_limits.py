"""Kernels Triton's interpreter (3.8) would compute wrongly, found in their TTIR before they run there.

The interpreter holds bf16 values as their ``uint16`` bit patterns and applies numpy's arithmetic to
those: ``x + y``, ``x * y``, ``-x``, ``x > y``, ``tl.sum(x)`` on bf16 give integers' results (checked
against torch on small kernels). Moving bf16 data (loads, stores, TMA descriptors, views, select,
layout conversions) and converting it to or from fp32 are right; ``tl.dot`` on bf16 is upcast to fp32 by
``workbench.run.interpreter``. Any other operation on bf16 values keeps the kernel out of the interpreter.
"""

from __future__ import annotations

import functools
import re

__all__ = ["interpreter_blocker"]

# operations whose bf16 results the interpreter gets right (data movement, conversions through fp32)
_SAFE = frozenset({
    "tt.func", "tt.return", "tt.call", "tt.load", "tt.store", "tt.descriptor_load", "tt.descriptor_store",
    "tt.descriptor_gather", "tt.descriptor_scatter", "tt.make_tensor_descriptor", "tt.splat", "tt.unsplat",
    "tt.broadcast", "tt.expand_dims", "tt.reshape", "tt.trans", "tt.join", "tt.split", "tt.cat", "tt.addptr",
    "tt.bitcast", "tt.fp_to_fp", "tt.reduce.return", "tt.scan.return", "arith.select", "arith.bitcast",
    "scf.for", "scf.if", "scf.while", "scf.condition", "scf.yield", "math.absf",
    "tt.dot",  # upcast to fp32 by workbench.run.interpreter
})
# layouts, shared memory, async copies and MMA: the TTIR of a process that imported TLX has them
# (uTLX converts to TritonGPU early); none of them computes on values but the MMA, a dot
_LAYOUT_DIALECTS = ("ttg.", "ttng.")
_VIA_F32 = frozenset({"arith.extf", "arith.truncf"})  # right between bf16 and f32 only

_OP = re.compile(r'^\s*(?:%[^=]*=\s*)?"?([a-z_]+(?:\.[a-z_]+)+)\b')
_POINTERS = re.compile(r"!tt\.(?:ptr|tensordesc)<[^<>]*>")  # innermost first, repeated
_NOISE = re.compile(r'loc\((?:[^()]|\([^()]*\))*\)|%[\w#.$-]+|@[\w$.-]+|"[^"]*"')
_FLOAT = re.compile(r"(?<![A-Za-z0-9_])(?:\d+x)*(bf16|f16|f32|f64)(?![A-Za-z0-9_])")
_ZERO = re.compile(r"dense<0\.0+e\+00>|\b0\.0+e\+00\s*:")


def _value_floats(line: str) -> set[str]:
    """Float types of the values on a TTIR line (pointer and descriptor element types, names and locs dropped)."""
    text = _NOISE.sub("", line)
    while True:
        stripped = _POINTERS.sub("", text)
        if stripped == text:
            break
        text = stripped
    return set(_FLOAT.findall(text))


@functools.lru_cache(maxsize=64)  # once per compiled kernel (its TTIR string)
def interpreter_blocker(ttir: str) -> str | None:
    """Why Triton's interpreter would compute this kernel wrongly (None: it computes it right)."""
    for n, line in enumerate(ttir.splitlines(), 1):
        m = _OP.match(line)
        if m is None or m.group(1) in _SAFE or m.group(1).startswith(_LAYOUT_DIALECTS):
            continue
        op = m.group(1)
        floats = _value_floats(line)
        if "bf16" not in floats:
            continue
        if op in _VIA_F32 and floats <= {"bf16", "f32"}:
            continue
        if op == "arith.constant" and _ZERO.search(line):
            continue
        return f"Triton's interpreter computes bf16 {op} wrongly (TTIR line {n})"
    return None
