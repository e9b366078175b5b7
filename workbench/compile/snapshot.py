"""Builds whose warps say where they wait: a live snapshot of a hung kernel.

``snapshot_build()``: compiles inside the block rewrite the PTX (the stages hook; the user's source is untouched)
so that lane 0 of every warp, around each mbarrier wait loop and each named-barrier sync, writes one record into
a buffer the host reads while the kernel runs: ``[site + 1, barrier, phase, state]`` (four u32; ``state`` 1 while
waiting, 2 once past), one record per warp of the grid (``slot = (cta * warps per CTA + warp) mod SLOTS``).
``barrier`` is the mbarrier's shared-memory address (a named barrier: its id) and ``phase`` the parity awaited
(a named barrier: its thread count). The buffer's address is the module's global ``SYMBOL``: zero (the default)
writes nothing, so the build behaves as the plain one until the worker points it at mapped pinned host memory.
Sites are numbered as ``delays`` numbers them (one listing of the PTX's synchronisation points).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator

from workbench.compile.delays import KINDS, DelayPlan
from workbench.compile.stages_hook import chained

__all__ = ["KEY", "RECORD_WORDS", "SLOTS", "SYMBOL", "insert_snapshot", "snapshot_build", "snapshot_sites"]

SYMBOL = "__wb_snapshot"
SLOTS = 1 << 16
RECORD_WORDS = 4
KEY = f"workbench-snapshot-v1 slots={SLOTS}"
WAITING, PASSED = 1, 2

_WAIT = re.compile(r"mbarrier\.(?:try_wait|test_wait)(?:\.parity)?[\w.:]*\s+(\S+),\s*\[([^\]]+)\],\s*([^,;]+)")
_NAMED = re.compile(r"(?:bar|barrier)(?:\.cta)?\.sync(?:\.aligned)?\s+([^,;]+)(?:,\s*([^;]+))?;")
_LABEL = re.compile(r"^\s*([A-Za-z_$][\w$]*):\s*$")
_LOOP_BACK = re.compile(r"^\s*@!?%?\w+\s+bra(?:\.uni)?\s+([A-Za-z_$][\w$]*)\s*;")
_ADDRESS_SIZE = re.compile(r"^\s*\.address_size\s+\d+")


def _u32(value: str, tmp: str) -> tuple[list[str], str]:
    """``value`` (a register of any width, or an immediate) as a u32 register or immediate."""
    v = value.strip()
    if v.startswith("%rd"):
        return [f"\tcvt.u32.u64 \t{tmp}, {v};"], tmp
    if v.startswith("%"):
        return [], v
    return [f"\tmov.u32 \t{tmp}, {v};"], tmp


def _record(site: int, barrier: str, phase: str, state: int) -> list[str]:
    """Lane 0 of the warp stores ``[site + 1, barrier, phase, state]`` into its slot of the snapshot buffer."""
    out = [f"\t{{ // workbench snapshot: site {site}, state {state}",
           "\t.reg .b32 %wbsn<8>;", "\t.reg .b64 %wbsd<3>;", "\t.reg .pred %wbsp<2>;",
           f"\tld.global.u64 \t%wbsd0, [{SYMBOL}];", "\tsetp.ne.u64 \t%wbsp0, %wbsd0, 0;",
           "\tmov.u32 \t%wbsn0, %laneid;", "\tsetp.eq.and.u32 \t%wbsp1, %wbsn0, 0, %wbsp0;",
           "\tmov.u32 \t%wbsn1, %ctaid.x;", "\tmov.u32 \t%wbsn2, %ctaid.y;", "\tmov.u32 \t%wbsn3, %nctaid.x;",
           "\tmad.lo.u32 \t%wbsn1, %wbsn2, %wbsn3, %wbsn1;", "\tmov.u32 \t%wbsn2, %ntid.x;",
           "\tshr.u32 \t%wbsn2, %wbsn2, 5;", "\tmov.u32 \t%wbsn3, %tid.x;", "\tshr.u32 \t%wbsn3, %wbsn3, 5;",
           "\tmad.lo.u32 \t%wbsn1, %wbsn1, %wbsn2, %wbsn3;", f"\tand.b32 \t%wbsn1, %wbsn1, {SLOTS - 1};",
           f"\tmul.wide.u32 \t%wbsd1, %wbsn1, {4 * RECORD_WORDS};", "\tadd.s64 \t%wbsd0, %wbsd0, %wbsd1;"]
    conv_b, b = _u32(barrier, "%wbsn4")
    conv_p, p = _u32(phase, "%wbsn5")
    out += conv_b + conv_p + [f"\tmov.u32 \t%wbsn6, {site + 1};", f"\tmov.u32 \t%wbsn7, {state};",
                              f"\t@%wbsp1 st.volatile.global.v4.u32 \t[%wbsd0], {{%wbsn6, {b}, {p}, %wbsn7}};", "\t}"]
    return out


def insert_snapshot(ptx: str) -> tuple[str, list[int]]:
    """``ptx`` with the snapshot's global and its records around every wait loop and named-barrier sync; the
    indices of the sites it wrapped."""
    lines = ptx.splitlines()
    before: dict[int, list[str]] = {}
    after: dict[int, list[str]] = {}
    done: list[int] = []
    index = -1
    for i, text in enumerate(lines):
        kind = next((k for k, rx in KINDS if rx.match(text)), None)
        if kind is None:
            continue
        index += 1
        if kind == "wait" and (m := _WAIT.search(text)):
            at, end = _wait_loop(lines, i)
            before.setdefault(at, []).extend(_record(index, m.group(2), m.group(3), WAITING))
            after.setdefault(end, []).extend(_record(index, m.group(2), m.group(3), PASSED))
        elif kind == "named-barrier" and (m := _NAMED.search(text)):
            count = m.group(2) or "0"
            before.setdefault(i, []).extend(_record(index, m.group(1), count, WAITING))
            after.setdefault(i, []).extend(_record(index, m.group(1), count, PASSED))
        else:
            continue
        done.append(index)
    out: list[str] = []
    for i, text in enumerate(lines):
        out.extend(before.get(i, []))
        out.append(text)
        if _ADDRESS_SIZE.match(text):
            out += ["", f".global .align 8 .u64 {SYMBOL};"]
        out.extend(after.get(i, []))
    return "\n".join(out) + ("\n" if ptx.endswith("\n") else ""), done


def _wait_loop(lines: list[str], i: int) -> tuple[int, int]:
    """(line to write "waiting" before, line to write "passed" after) of the wait at ``i``: its loop's label and
    the branch back to it, where the wait spins in one (Triton's ``waitLoop:`` inline asm), else the wait."""
    for j in range(i + 1, min(i + 4, len(lines))):
        m = _LOOP_BACK.match(lines[j])
        if m:
            for k in range(i - 1, max(i - 4, -1), -1):
                lm = _LABEL.match(lines[k])
                if lm and lm.group(1) == m.group(1):
                    return k, j
            return i, j
    return i, i


def snapshot_sites(ptx: str, filename: str | None = None, ttgir: str | None = None) -> DelayPlan:
    """The build's sites (kind and the user's line), numbered as the records name them."""
    return DelayPlan(0, 0, 0.0).read(ptx, filename, ttgir)


@contextlib.contextmanager
def snapshot_build() -> Iterator[None]:
    """Compiles inside the block are snapshot builds (a cache entry of their own)."""

    def rewrite(ptx: str, metadata: object) -> str:
        return insert_snapshot(ptx)[0]

    with chained(KEY, {"ptx": rewrite}):
        yield
