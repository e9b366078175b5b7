"""A Finding: one thing a static check says about a kernel, pointing at the user's line."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SEVERITIES = ("error", "warning", "info")


@dataclass
class Related:
    line: int | None
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {"line": self.line, "message": self.message}


@dataclass
class Finding:
    """``rule`` names the check; ``message`` says what is wrong and what to do; ``hint`` gives the
    idiom that fixes it; ``related`` lists the other lines involved, each with a short note."""

    rule: str
    severity: str  # 'error', 'warning' or 'info'
    line: int | None
    message: str
    related: list[Related] = field(default_factory=list)
    hint: str = ""
    barrier_set: int | None = field(default=None, repr=False, compare=False)  # internal: what a rule was about

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"severity must be one of {SEVERITIES}, got {self.severity!r}")

    def to_dict(self) -> dict[str, Any]:
        return {"rule": self.rule, "severity": self.severity, "line": self.line, "message": self.message,
                "related": [r.to_dict() for r in self.related], "hint": self.hint}

    def __str__(self) -> str:
        where = f"line {self.line}" if self.line else "kernel"
        text = f"{self.severity}: {where}: {self.message} [{self.rule}]"
        for r in self.related:
            text += f"\n    line {r.line}: {r.message}" if r.line else f"\n    {r.message}"
        if self.hint:
            text += f"\n    hint: {self.hint}"
        return text


def related(pairs) -> list[Related]:
    """Related lines from ``(line, message)`` pairs, first mention of each line kept."""
    out: list[Related] = []
    seen: set = set()
    for line, message in pairs:
        if (line, message) in seen or line is None and not message:
            continue
        seen.add((line, message))
        out.append(Related(line, message))
    return out


def ordered(findings: list[Finding]) -> list[Finding]:
    """One finding per (rule, line), errors first, then by line."""
    best: dict[tuple[str, int | None], Finding] = {}
    for f in findings:
        best.setdefault((f.rule, f.line), f)
    rank = {s: i for i, s in enumerate(SEVERITIES)}
    return sorted(best.values(), key=lambda f: (rank[f.severity], f.line or 0, f.rule))


def iteration_text(loops) -> str:
    """' (iteration 3 of the loop at line 20, its variable 2; ...)', innermost loop first."""
    parts = []
    for line, n, value in reversed(loops):
        at = f"line {line}" if line else "a loop"
        var = f", loop variable {value}" if value is not None else ""
        parts.append(f"iteration {n} of the loop at {at}{var}")
    return f" ({'; '.join(parts)})" if parts else " (outside any loop)"
