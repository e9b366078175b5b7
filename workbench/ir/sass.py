"""The one reader of SASS as ``nvdisasm -c -g -gi`` prints it: instructions, branch labels and source lines.

What the text gives: one instruction a line (``/*0a30*/  @!P0 BRA `(.L_x_12) ;``: address, optional predicate,
opcode with modifiers, operands), labels (``.L_x_12:``) before the instruction they name, and line info as
``//## File "path", line N [inlined at "path", line M ...]`` comments before the instructions it covers.
Consecutive ``//##`` lines describe the same instructions (an inlined callee's line, then its caller's line);
a new function section (``//---``, ``.section``) starts without one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from workbench.ir.loc import Loc

_INSTR = re.compile(r"^\s*/\*([0-9a-f]{4,})\*/\s+(@!?U?P[T0-9]+\s+)?([A-Z][A-Za-z0-9_.]*)\s*([^;]*);")
_LABEL = re.compile(r"^(\.L_x_\d+):")
_FILE_LINE = re.compile(r'//##\s*File\s+"([^"]*)",\s*line\s+(\d+)(.*)$')
_INLINED = re.compile(r'inlined at\s+"([^"]*)",\s*line\s+(\d+)')
_BRANCH = re.compile(r"`\((\.L_x_\d+)\)")


@dataclass
class Instr:
    line: int  # 1-based line in the SASS text
    address: int
    pred: str  # '@P0', '@!UP1', '' when unpredicated
    op: str  # opcode with modifiers, e.g. HGMMA.64x128x16.F32.BF16
    args: str
    locs: list[Loc] = field(default_factory=list)  # of its //## lines: each line's own, then its call sites

    @property
    def target(self) -> str | None:
        """The label a ``BRA`` jumps to."""
        m = _BRANCH.search(self.args) if self.op == "BRA" else None
        return m.group(1) if m else None

    @property
    def src(self) -> list[Loc]:
        """The source lines of its ``//##`` comments, innermost first, without the call sites they name."""
        return [loc for loc in self.locs if not loc.inlined]


@dataclass
class Sass:
    instrs: list[Instr]  # in address order
    labels: dict[str, int]  # label -> index in ``instrs`` of the instruction after it

    def count(self, opcode: str) -> int:
        """Instructions of ``opcode`` with any modifiers (``SYNCS`` counts ``SYNCS.ARRIVE.TRANS64.A1T0``;
        ``BAR.SYNC`` counts ``BAR.SYNC.DEFER_BLOCKING``)."""
        return sum(1 for x in self.instrs if x.op == opcode or x.op.startswith(opcode + "."))

    def loops(self) -> list[tuple[int, int]]:
        """(head, backedge) of every backward branch, as indices into ``instrs``: the label it jumps to lies at or
        before it."""
        return [(self.labels[x.target], i) for i, x in enumerate(self.instrs)
                if x.target in self.labels and self.labels[x.target] <= i]


def _file_line(m: re.Match) -> list[Loc]:
    return [Loc(m.group(1), int(m.group(2)))] + [Loc(f, int(n), inlined=True) for f, n in _INLINED.findall(m.group(3))]


def read_sass(text: str) -> Sass:
    """Every instruction of ``text`` with its source lines, and the branch labels."""
    instrs: list[Instr] = []
    labels: dict[str, int] = {}
    current: list[Loc] = []
    after_file_line = False
    for n, line in enumerate(text.splitlines(), start=1):
        if m := _FILE_LINE.search(line):
            current = (current if after_file_line else []) + _file_line(m)
            after_file_line = True
            continue
        after_file_line = False
        if line.startswith("//---") or line.lstrip().startswith(".section"):
            current = []
        elif m := _LABEL.match(line):
            labels[m.group(1)] = len(instrs)
        elif m := _INSTR.match(line):
            instrs.append(Instr(n, int(m.group(1), 16), (m.group(2) or "").strip(), m.group(3), m.group(4).strip(),
                                current))
    return Sass(instrs, labels)


def sass_line_locations(text: str) -> dict[int, list[Loc]]:
    """1-based line of an instruction -> the source locations of its ``//##`` lines (call sites marked inlined)."""
    return {x.line: x.locs for x in read_sass(text).instrs if x.locs}


_COMMENT = re.compile(r"\s*//.*$")


def is_line_info(line: str) -> bool:
    """Whether ``line`` is a ``//##`` line-info comment."""
    return line.lstrip().startswith("//##")


def code_text(text: str) -> str:
    """The SASS without its ``//`` comments (line info, headers) and blank lines: what the instructions are,
    not where they came from."""
    lines = (_COMMENT.sub("", ln).rstrip() for ln in text.splitlines())
    return "\n".join(ln for ln in lines if ln)
