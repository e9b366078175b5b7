"""Syntax highlighting for the HTML fallback (nbconvert, GitHub, any front end without the viewer).

The fallback colours only what a well-kept lexer of Pygments covers: the Python source, LLVM IR and PTX.
The project's own lexers for the IR stages (MLIR for TTIR/TTGIR, NVIDIA SASS) live once, in the viewer
(extension/src/highlight.ts): the fallback shows those stages plain rather than keep a second copy of
the same rules. ``highlight_lines`` returns one HTML fragment per source line (spans never cross a line),
so each line can carry its own anchor.
"""

from __future__ import annotations

import functools
import html
import re

from pygments.token import STANDARD_TYPES, Error

__all__ = ["css", "highlight_lines", "language_of_stage"]


def language_of_stage(name: str) -> str:
    """The schema's stage language for a stage name."""
    n = name.lower()
    if n in ("source", "python", "tlx", "gluon", "triton", "py"):
        return "python"
    if n in ("llir", "llvm", "ll"):
        return "llvm"
    if n == "ptx":
        return "ptx"
    if n in ("sass", "cubin_sass"):
        return "sass"
    if n.endswith("ir") or n in ("mlir", "ttir", "ttgir", "ttsharedir"):
        return "mlir"
    return "text"


@functools.cache
def _lexer(language: str):
    if language == "python":
        from pygments.lexers.python import PythonLexer

        return PythonLexer(stripnl=False, ensurenl=False)
    if language == "llvm":
        from pygments.lexers.asm import LlvmLexer

        return LlvmLexer(stripnl=False, ensurenl=False)
    if language == "ptx":
        from pygments.lexers.ptx import PtxLexer

        return PtxLexer(stripnl=False, ensurenl=False)
    return None  # MLIR, SASS and text: shown plain (their lexers are the viewer's)


@functools.lru_cache(maxsize=4096)
def _css_class(ttype) -> str:
    while ttype not in STANDARD_TYPES:
        ttype = ttype.parent
    return STANDARD_TYPES[ttype]


def _no_blank_runs(runs: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """Runs with no whitespace-only text: each is joined to the run after it (or before it, at the end
    of a line). Some HTML pipelines (nbconvert's) collapse a whitespace-only text node between tags
    to one space, which would lose the indentation of code."""
    out: list[tuple[str, str]] = []
    pending = ""
    for cls, text in runs:
        if not text.strip():
            pending += text
            continue
        out.append((cls, pending + text))
        pending = ""
    if pending:
        out[-1:] = [(out[-1][0], out[-1][1] + pending)] if out else [("", pending)]
    return out


@functools.cache
def _styled(style: str = "default") -> frozenset[str]:
    """The short token classes the style colours (a span for any other token would only add bytes)."""
    return frozenset(re.findall(r"^\S+ \S+ \.(\w+) \{", css(style=style), re.M))


def highlight_lines(text: str, language: str) -> list[str]:
    """HTML (escaped, with pygments short class names) for each line of ``text``. What a lexer cannot
    place (an error token) is shown plain, never with the error style's red box."""
    raw_lines = text.split("\n")
    if text.endswith("\n"):
        raw_lines.pop()
    lexer = _lexer(language)
    if lexer is None:
        return [html.escape(ln) for ln in raw_lines]
    styled = _styled()
    out: list[str] = []
    cur: list[tuple[str, str]] = []  # (class, text) runs of the current line, merged by class

    def flush() -> None:
        out.append("".join(html.escape(t, quote=False) if not c else f'<span class="{c}">'
                           f"{html.escape(t, quote=False)}</span>" for c, t in _no_blank_runs(cur)))

    for ttype, value in lexer.get_tokens(text):
        cls = "" if ttype in Error else _css_class(ttype)
        cls = cls if cls in styled else ""
        for i, part in enumerate(value.split("\n")):
            if i:
                flush()
                cur = []
            if part:
                if cur and cur[-1][0] == cls:
                    cur[-1] = (cls, cur[-1][1] + part)
                else:
                    cur.append((cls, part))
    if cur:
        flush()
    # The lexer may add or drop a trailing newline; align with the real lines.
    if len(out) < len(raw_lines):
        out.extend([""] * (len(raw_lines) - len(out)))
    return out[: len(raw_lines)]


@functools.lru_cache(maxsize=8)
def css(scope: str = ".tlxr .hl", style: str = "default") -> str:
    """Pygments token colours, scoped under ``scope``."""
    from pygments.formatters import HtmlFormatter

    rules = HtmlFormatter(style=style).get_style_defs(scope)
    # Drop the background/line-number rules pygments adds for its own <pre>; keep token colours.
    keep = [ln for ln in rules.splitlines() if re.match(rf"{re.escape(scope)} \.\w", ln) and ".hll" not in ln]
    return "\n".join(re.sub(r"\s*/\*.*?\*/", "", ln) for ln in keep)
