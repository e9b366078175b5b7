"""The ``%%tlx`` cell magic and ``%tlx`` line magic.

``%load_ext workbench`` registers them. A ``%%tlx`` cell is ordinary Python run in the
notebook's namespace, with ``triton``, ``tl``, ``gl``, ``gluon``, ``tlx``, ``torch`` and ``DEVICE``
('cuda' with a GPU, else 'cpu') available. Every kernel the cell compiles or launches is
captured and gets a Report displayed under the cell.
"""

from __future__ import annotations

import re
import threading
from typing import Any

from IPython.core.magic import Magics, line_cell_magic, magics_class
from IPython.core.magic_arguments import parse_argstring

from workbench.compile import progress
from workbench.compile.plugin_reach import repair_gluon
from workbench.errors import CheckError, WorkbenchError
from workbench.magic import errors as _errors
from workbench.magic import options, sections, status
from workbench.magic.cell import Cell, CellSyntaxError, prepare
from workbench.magic.status import status_line
from workbench.report.build import capture_report
from workbench.report.report import Report
from workbench.run.capture import Capture, Captured
from workbench.run.device import detect

__all__ = ["CellSyntaxError", "TlxMagics", "load_ipython_extension", "unload_ipython_extension"]

def prepare_namespace(ns: dict[str, Any]) -> None:
    """Bind the names a ``%%tlx`` cell can use, without replacing the user's own."""
    import torch
    import triton
    import triton.language as tl
    import triton.language.extra.tlx as tlx
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl

    values = {
        "triton": triton,
        "tl": tl,
        "tlx": tlx,
        "gl": gl,
        "gluon": gluon,
        "torch": torch,
        "DEVICE": detect().torch_device,
    }
    for k, v in values.items():
        ns.setdefault(k, v)
    repair_gluon()  # importing tlx broke Gluon kernels (see workbench.compile.plugin_reach)


_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|\S+')


def _split_line_magic(line: str, parser: Any) -> tuple[str, str]:
    """``%tlx [options] CODE`` -> (options text, code text)."""
    pos = 0
    while True:
        m = _TOKEN.search(line, pos)
        if m is None or not m.group(0).startswith("-"):
            break
        opt = m.group(0).split("=", 1)[0]
        action = parser._option_string_actions.get(opt)
        pos = m.end()
        if action is None:
            break
        takes = action.nargs not in (0, "?") and "=" not in m.group(0)
        if takes:
            v = _TOKEN.search(line, pos)
            if v is not None:
                pos = v.end()
        if opt in ("-h", "--help"):
            break
    return line[:pos], line[pos:].strip()


IMPORTS_WAIT_S = 300.0  # how long a cell waits for the background imports of %load_ext


@magics_class
class TlxMagics(Magics):
    """Holds the per-session state: the last Report of each cell/kernel (for --diff)."""

    def __init__(self, shell: Any) -> None:
        super().__init__(shell)
        self.history: dict[tuple, Report] = {}
        self.last_reports: list[Report] = []
        self._cell_id: str | None = None
        self.imports: threading.Thread | None = None  # the background imports of %load_ext (see _warm)
        if shell is not None:
            shell.events.register("pre_run_cell", self._pre_run_cell)

    def _pre_run_cell(self, info: Any = None) -> None:
        self._cell_id = getattr(info, "cell_id", None)
        self._wait_for_imports()

    def _wait_for_imports(self) -> None:
        """Every cell waits for the background imports before it runs: two threads importing one package at once
        fail (measured: KeyError 'triton' from Triton's namespace packages in a %%tlx cell run right after
        %load_ext)."""
        if self.imports is not None:
            self.imports.join(IMPORTS_WAIT_S)
            if not self.imports.is_alive():
                self.imports = None

    def close(self) -> None:
        if self.shell is not None:
            try:
                self.shell.events.unregister("pre_run_cell", self._pre_run_cell)
            except ValueError:
                pass

    # ------------------------------------------------------------------ the magic
    @options.tlx_arguments
    @line_cell_magic
    def tlx(self, line: str = "", cell: str | None = None) -> None:
        """Compile, run, check and inspect the GPU kernels of a cell.

        %%tlx [options]  -- the cell is Python; kernels it compiles or launches get a Report.
        %tlx [options] CODE  -- the same for one line, e.g. %tlx --stages ptx k[(1,)](x, n, B=64);
        %tlx with no code shows the last Reports again.

        Without a GPU, kernel launches become compiles from the launch arguments (CPU tensors are
        fine) and the Report says that nothing ran and why; with --check (or --interpret), plain
        @triton.jit kernels run in Triton's CPU interpreter instead. Errors (syntax, compile,
        failed checks) fail the cell with the cell line (the %%tlx line is line 1).
        """
        if cell is None:
            opts, code = _split_line_magic(line, self.tlx.parser)
            args = parse_argstring(self.tlx, opts)
            if not code:
                self._show_again(args)
                return
            magic_line, body = f"%tlx {opts}".rstrip(), code
        else:
            args = parse_argstring(self.tlx, line)
            magic_line, body = f"%%tlx {line}".rstrip(), cell
        self._wait_for_imports()  # also where no cell ran first (run_cell_magic from code)
        self.run_cell(args, magic_line, body)

    # ------------------------------------------------------------------ the pipeline
    def run_cell(self, args: Any, magic_line: str, body: str) -> list[Report]:
        """Compile the cell, run it under launch capture, build one Report per kernel, show them; a status
        line says what it is doing meanwhile."""
        with status_line(self.shell):
            return self._run_cell(args, magic_line, body)

    def _run_cell(self, args: Any, magic_line: str, body: str) -> list[Report]:
        cell, code = prepare(magic_line, body, self._cell_id)
        device = detect()
        specs = options.validate(args, cell)
        ns = self.shell.user_ns
        prepare_namespace(ns)
        if args.search is not None or args.stress is not None:
            return self._search(args, cell, code, ns, device, specs)
        cap = sections.capture_for(args, device, checking=bool(specs))
        try:
            with cap:
                exec(code, ns)  # noqa: S102 - the user's cell
        except BaseException as exc:
            self._report_failed_launch(exc, cap, cell, args, device)
            _errors.raise_cell_error(self.shell, exc, cap.failed_kernel, cell, device)
        if any(r["mode"] == "gpu" for e in cap.entries.values() for r in e.runs):
            _synchronize()
        shown, primary = _select(cap, args, cell)
        if specs:
            progress.note("checking the outputs")
        checks = sections.output_checks(specs, args, list(cap.entries.values()), ns, cap.sequence)
        reports = [self._report(e, e is primary, cap, cell, args, checks, device) for e in shown]
        sections.after_bench(specs, checks, args, ns, reports, list(cap.entries.values()))  # again after --bench
        if args.export:
            from workbench.report.export import export_cell

            export_cell(reports, args.export, primary.artifact if primary is not None else None)
        self._remember(reports, args, primary)
        _display(reports, args, checks)
        bad = [c for c in checks if c["status"] in ("failed", "error")]
        if bad:
            c = bad[0]
            exc = CheckError(f"check {c['expr']} {c['status']}: {c['message']}", hint=sections.check_hint(c))
            _errors.fail_at_magic_line(exc, cell, c["expr"])
        return reports

    def _search(self, args: Any, cell: Cell, code: Any, ns: dict[str, Any], device: Any, specs: list) -> list[Report]:
        from workbench.magic.search_cell import run_search

        report, result = run_search(args, cell, code, ns, device, specs, {
            "shell": self.shell, "cell_id": self._cell_id, "execution_count": getattr(self.shell, "execution_count",
                                                                                      None)})
        reports = [report] if report is not None else []
        if report is not None:
            report.diagnostics.extend(options.line_diagnostics(args, report.stage_names))
            options.show_stages_first(report, args.stages)
        elif not args.quiet and (ignored := options.ignored(args)):
            print("\n".join(f"warning: line 1: {d['message']}" for d in ignored))
        if report is not None and args.diff is not None:
            note = sections.diff(report, args.diff, ns, self.history, self._cell_id)
            if note:
                report.diagnostics.append(note)
        self._remember(reports, _without_output(args), None)
        if not args.quiet:
            for r in reports:
                status.show(r)
            if not reports:
                print(result.summary())
        return reports

    def _report_failed_launch(self, exc: BaseException, cap: Capture, cell: Cell, args: Any, device: Any) -> None:
        """A launch that hung or failed in the isolated worker: its kernel's Report (static checks, the
        Orchestration tab with the live snapshot's waits marked) shown above the error."""
        entry = cap.entries.get(getattr(exc, "captured_key", None) or "")
        if entry is None:
            return
        try:
            found = sections.findings(entry, getattr(exc, "findings", None))  # the error's own, not again
            error = {"severity": "error", "source": "run", "line": None, "col": None,
                     "hint": getattr(exc, "hint", None), "message": getattr(exc, "message", str(exc))}
            r = capture_report(entry, cap, device, args, self.shell.user_ns, findings=found,
                               diagnostics=[*cap.diagnostics, error], cell_source=cell.text,
                               cell_filename=cell.filename, cell_id=self._cell_id,
                               execution_count=getattr(self.shell, "execution_count", None))
        except Exception as e:  # the error itself matters more than its Report
            print(f"%%tlx: no Report of the failed launch ({type(e).__name__}: {e})")
            return
        self._remember([r], args, entry)  # -o NAME holds it
        if not args.quiet:
            status.show(r)

    def _report(self, e: Captured, primary: bool, cap: Capture, cell: Cell, args: Any, checks: list[dict],
                device: Any) -> Report:
        """One captured kernel's Report: built once (the primary kernel with the checks and the sections its options
        ask for), then compared with an earlier one when ``--diff``/``--compare`` asks."""
        stages = list(e.artifact.stages)
        runs = e.runs
        if primary and checks:
            runs = list(runs) or [sections.compile_only_run(e)]
            runs[-1] = {**runs[-1], "checks": checks}  # the same list: --bench's re-check adds to it
        diags = [*cap.diagnostics, *options.line_diagnostics(args, stages), *sections.notes(e, args)]
        ns = self.shell.user_ns
        r = capture_report(e, cap, device, args, ns, findings=sections.findings(e), diagnostics=diags, runs=runs,
                           measure=primary, note=progress.note, cell_source=cell.text, cell_filename=cell.filename,
                           cell_id=self._cell_id, execution_count=getattr(self.shell, "execution_count", None),
                           stages_first=options.stage_list(args.stages, stages) if args.stages else [])
        if args.diff is not None:
            note = sections.diff(r, args.diff, ns, self.history, self._cell_id)
            if note:
                r.diagnostics.append(note)
        return r

    def _remember(self, reports: list[Report], args: Any, primary: Captured | None) -> None:
        for r in reports:
            if self._cell_id:
                self.history[("cell", self._cell_id, r.name)] = r
            self.history[("name", r.name)] = r
        self.last_reports = reports
        if args.output:
            self.shell.user_ns[args.output] = next(
                (r for r in reports if primary is not None and r.artifact is primary.artifact),
                reports[-1] if reports else None,
            )

    def _show_again(self, args: Any) -> None:
        reports = [r for r in self.last_reports if args.kernel is None or r.name == args.kernel]
        if not reports:
            print("%tlx: no Report yet (run a %%tlx cell first)")
            return
        from IPython.display import display

        for r in reports:
            options.show_stages_first(r, args.stages)
            display(r)


def _without_output(args: Any) -> Any:
    """``args`` without ``-o``: with --search, NAME holds the SearchResult, not a Report."""
    import copy

    out = copy.copy(args)
    out.output = None
    return out


def _select(cap: Capture, args: Any, cell: Cell) -> tuple[list[Captured], Captured | None]:
    """The kernels to report (``--kernel`` or all) and the primary one (the last that ran, else the last)."""
    entries = list(cap.entries.values())
    shown = entries
    if args.kernel is not None:
        shown = [e for e in entries if e.name == args.kernel]
        if not shown:
            names = ", ".join(dict.fromkeys(e.name for e in entries)) or "none"
            _errors.fail_at_magic_line(
                WorkbenchError(f"--kernel {args.kernel}: no kernel of that name was compiled or launched in this cell",
                               hint=f"kernels captured: {names}"), cell, args.kernel)
    # the kernel launched last (under an autotuner: the config it chose), else the last compiled
    launched = [e for e in shown if e.last_launch]
    primary = max(launched, key=lambda e: e.last_launch) if launched else (shown[-1] if shown else None)
    return shown, primary


def _display(reports: list[Report], args: Any, checks: list[dict]) -> None:
    """The Reports (the first in the status line's place), or what the cell did when it launched nothing."""
    if args.quiet:
        return
    for r in reports:
        status.show(r)
    if not reports:
        print("%%tlx: no kernel was compiled or launched in this cell" if checks == []
              else "\n".join(f"check {c['expr']}: {c['status']} ({c['message']})" for c in checks))


def _synchronize() -> None:
    try:
        import torch

        torch.cuda.synchronize()
    except Exception:
        pass


# ---------------------------------------------------------------------- extension entry points
_LOADED: dict[int, TlxMagics] = {}


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext workbench``: register ``%%tlx``/``%tlx`` (idempotent)."""
    if id(ipython) in _LOADED:
        return
    magics = TlxMagics(ipython)
    ipython.register_magics(magics)
    _LOADED[id(ipython)] = magics
    # the prompt comes back at once; what a first cell needs is imported and started in the background
    magics.imports = threading.Thread(target=_warm, name="workbench-imports", daemon=True)
    magics.imports.start()


def _warm() -> None:
    """The imports a first cell needs, the isolated GPU worker (``workbench.run.isolate``), and, where a search
    would run candidates, Ray and the search's workers in a thread of their own (``workbench.search.warm``). A
    cell waits for the imports (a pre_run_cell hook), for the worker and Ray where it uses them (the worker's
    start, ``engine.connect``)."""
    try:
        prepare_namespace({})
        import workbench.compile  # noqa: F401
        import workbench.report.html  # noqa: F401
        from workbench.run.isolate import prestart
        from workbench.search import warm

        prestart()
        if warm.should_start(detect().available):
            warm.start()
    except Exception:
        pass  # the cell that needs what failed here meets the error itself, with its message


def unload_ipython_extension(ipython: Any) -> None:
    """``%unload_ext workbench``: remove the magics again."""
    magics = _LOADED.pop(id(ipython), None)
    if magics is None:
        return
    magics.close()
    mm = ipython.magics_manager
    for kind in ("line", "cell"):
        table = mm.magics.get(kind, {})
        fn = table.get("tlx")
        if fn is not None and getattr(fn, "__self__", None) is magics:
            del table["tlx"]
    try:
        mm.registry.pop(type(magics).__name__, None)
    except Exception:
        pass
