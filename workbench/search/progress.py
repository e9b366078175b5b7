"""A search's progress while it runs: an ipywidgets bar in a notebook (counts per status and the best so far),
one line rewritten in place on a terminal."""

from __future__ import annotations

import html
import sys
from typing import Any

from workbench.search.engine import Progress
from workbench.search.result import STATUS_COLOURS, STATUSES

__all__ = ["display_progress", "progress_text"]


def progress_text(p: Progress) -> str:
    counts = ", ".join(f"{p.counts[s]} {s}" for s in STATUSES if p.counts.get(s))
    best = ""
    if p.best:
        cfg = " ".join(f"{k}={v}" for k, v in p.best["config"].items())
        vs = f" ({p.best['ratio']:.3f}x ref)" if p.best.get("ratio") else ""
        best = f" | best {p.best['ms']:.4g} ms{vs}: {cfg}"
    done = sum(p.counts.values())
    return (f"{p.phase} {done}/{p.total} [{p.elapsed_s:.0f} s] compiled {p.compiled}, judged {p.judged}"
            f"{': ' + counts if counts else ''}{best}{' - ' + p.message if p.message else ''}")


class _Widget:
    def __init__(self, total: int, name: str) -> None:
        import ipywidgets as w
        from IPython.display import display

        self.bar = w.IntProgress(value=0, min=0, max=max(total, 1), description=f"search {name}"[:24],
                                 layout=w.Layout(width="60%"), style={"description_width": "initial"})
        self.label = w.HTML(value=STARTING)
        self.box = w.VBox([self.bar, self.label])
        display(self.box)

    def __call__(self, p: Progress) -> None:
        self.bar.value = sum(p.counts.values())
        chips = " ".join(f'<span style="color:{STATUS_COLOURS[s]}">&#9679; {p.counts[s]} {s}</span>'
                         for s in STATUSES if p.counts.get(s))
        self.label.value = f"<code>{html.escape(progress_text(p))}</code><br>{chips}"

    def done(self, result: Any) -> None:
        ran = any(r.get("status") in ("ok", "check-failed", "hang", "fault") for r in result.rows.values())
        self.bar.bar_style = "success" if result.best_index is not None else "warning" if ran else "info"
        self.label.value = f"<code>{html.escape(result.summary()).replace(chr(10), '<br>')}</code>"


STARTING = "starting Ray and the compile workers..."  # what shows until the first candidate's news


class _Line:
    def __init__(self, total: int, name: str) -> None:
        self.last = f"search {name}: {STARTING}"
        print(self.last, end="", file=sys.stderr, flush=True)

    def __call__(self, p: Progress) -> None:
        text = progress_text(p)[:160]
        if text != self.last:
            print("\r" + text.ljust(len(self.last)), end="", file=sys.stderr, flush=True)
            self.last = text

    def done(self, result: Any) -> None:
        print(file=sys.stderr)


def _in_notebook() -> bool:
    try:
        from IPython import get_ipython

        shell = get_ipython()
    except ImportError:
        return False
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


def display_progress(total: int, name: str) -> Any:
    """The progress callback for this front end (a widget in a notebook, else a line on stderr)."""
    if _in_notebook():
        try:
            return _Widget(total, name)
        except ImportError:
            pass
    return _Line(total, name)
