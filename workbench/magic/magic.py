"""The ``%%tlx`` cell magic and ``%tlx`` line magic.

``%load_ext workbench`` registers them. A ``%%tlx`` cell is ordinary Python run in the
notebook's namespace, with ``triton``, ``tl``, ``gl``, ``gluon``, ``tlx``, ``torch`` and ``DEVICE``
('cuda' with a GPU, else 'cpu') available. Every kernel the cell compiles or launches is
captured and gets a Report displayed under the cell.
"""

from __future__ import annotations

import hashlib
import importlib
import linecache
import re
import time
from typing import Any

from IPython.core.magic import Magics, line_cell_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from workbench.compile.plugin_reach import repair_gluon
from workbench.errors import CheckError, CompileError, WorkbenchError
from workbench.magic import errors as _errors
from workbench.report.diff import diff_reports
from workbench.report.report import Report, _now
from workbench.run.capture import Capture, Captured, describe_arguments
from workbench.run.device import detect
from workbench.run.verify import CheckSpec, evaluate, parse_check, skipped

__all__ = ["CellSyntaxError", "TlxMagics", "load_ipython_extension", "unload_ipython_extension"]

_INJECTED = ("triton", "tl", "gl", "gluon", "tlx", "torch", "DEVICE")


class CellSyntaxError(CompileError):
    """The cell is not valid Python (line numbers are cell lines, the %%tlx line being line 1)."""


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


def _cell_filename(cell: str) -> str:
    return f"<tlx-cell-{hashlib.sha1(cell.encode()).hexdigest()[:12]}>"


def _register_source(filename: str, text: str) -> None:
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    # mtime None: linecache.checkcache leaves the entry alone, so inspect.getsource keeps working
    linecache.cache[filename] = (len(text), None, lines, filename)


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


@magics_class
class TlxMagics(Magics):
    """Holds the per-session state: the last Report of each cell/kernel (for --diff)."""

    def __init__(self, shell: Any) -> None:
        super().__init__(shell)
        self.history: dict[tuple, Report] = {}
        self.last_reports: list[Report] = []
        self._cell_id: str | None = None
        if shell is not None:
            shell.events.register("pre_run_cell", self._pre_run_cell)

    def _pre_run_cell(self, info: Any = None) -> None:
        self._cell_id = getattr(info, "cell_id", None)

    def close(self) -> None:
        if self.shell is not None:
            try:
                self.shell.events.unregister("pre_run_cell", self._pre_run_cell)
            except ValueError:
                pass

    # ------------------------------------------------------------------ the magic
    @magic_arguments()
    @argument("--target", default="sm_90", help="compile target (default sm_90)")
    @argument(
        "--stages",
        default=None,
        metavar="LIST",
        help="stages shown first, comma-separated (e.g. ttgir,ptx); the first is selected",
    )
    @argument(
        "--kernel",
        default=None,
        metavar="NAME",
        help="show the Report of this kernel only (default: every kernel the cell captured)",
    )
    @argument(
        "--compile-only",
        action="store_true",
        help="never run: every launch is compiled from its arguments (even with a GPU)",
    )
    @argument(
        "--interpret",
        action="store_true",
        help="run plain Triton kernels in Triton's CPU interpreter (even with a GPU)",
    )
    @argument(
        "--check",
        action="append",
        default=None,
        metavar="EXPR",
        help='compare outputs after the cell: "ACTUAL: EXPECTED" (or ACTUAL == EXPECTED), with '
        "tolerances; or a boolean expression. Repeatable. Without a GPU, plain Triton kernels "
        "then run in Triton's interpreter so the check is real",
    )
    @argument("--atol", type=float, default=None, help="absolute tolerance (default: by dtype)")
    @argument("--rtol", type=float, default=None, help="relative tolerance (default: by dtype)")
    @argument("--bench", action="store_true", help="time the kernel (workbench.measure; needs a GPU)")
    @argument(
        "--bench-ref",
        default=None,
        metavar="EXPR",
        help="with --bench: an expression timed as the reference (e.g. 'x + y')",
    )
    @argument("--flops", default=None, metavar="EXPR", help="with --bench: FLOPs per launch (roofline)")
    @argument("--bytes", default=None, metavar="EXPR", help="with --bench: bytes moved per launch (roofline)")
    @argument("--timeline", action="store_true", help="per-role timeline (workbench.measure.timeline; needs a GPU)")
    @argument(
        "--diff",
        nargs="?",
        const=True,
        default=None,
        metavar="REPORT",
        help="diff against this cell's previous run (or a Report variable)",
    )
    @argument(
        "-o",
        "--output",
        default=None,
        metavar="NAME",
        help="store the Report (of --kernel, else the last kernel) in variable NAME",
    )
    @argument("--quiet", action="store_true", help="display nothing (errors and failed checks still fail)")
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
        self.run_cell(args, magic_line, body)

    # ------------------------------------------------------------------ implementation
    def _show_again(self, args: Any) -> None:
        reports = [r for r in self.last_reports if args.kernel is None or r.name == args.kernel]
        if not reports:
            print("%tlx: no Report yet (run a %%tlx cell first)")
            return
        from IPython.display import display

        for r in reports:
            if args.stages:
                r.view["stages_first"] = _stage_list(args.stages, r.stage_names)
                r.view["selected_stage"] = r.view["stages_first"][0] if r.view["stages_first"] else None
            display(r)

    def _fail_line1(self, exc: WorkbenchError, magic_line: str, filename: str, needle: str | None = None) -> None:
        col = magic_line.find(needle) if needle else None
        lines = _errors.short_traceback(
            type(exc).__name__,
            exc.message,
            filename=filename,
            lineno=1,
            col=col if col and col >= 0 else None,
            source_line=magic_line,
            cell_filename=filename,
            hint=exc.hint,
        )
        raise _errors.attach(exc, lines) from None

    def run_cell(self, args: Any, magic_line: str, body: str) -> list[Report]:
        shell = self.shell
        ns = shell.user_ns
        text = magic_line + "\n" + body
        filename = _cell_filename(body)
        _register_source(filename, text)
        device = detect()

        # --- options that can be wrong before anything runs (errors point at line 1)
        from workbench.compile.targets import parse_target

        try:
            parse_target(args.target)
        except WorkbenchError as e:
            self._fail_line1(e, magic_line, filename, args.target)
        specs: list[CheckSpec] = []
        for expr in args.check or []:
            expr = _unquote(expr)
            try:
                specs.append(parse_check(expr))
            except SyntaxError as e:
                self._fail_line1(
                    CheckError(
                        f"--check {expr!r} is not a valid expression: {e.msg}",
                        hint='write --check "ACTUAL: EXPECTED", e.g. --check "out: x + y"',
                    ),
                    magic_line,
                    filename,
                    expr,
                )

        # --- compile the cell's Python (line 1 is the magic line)
        try:
            code = compile("\n" + body, filename, "exec", dont_inherit=True)
        except SyntaxError as e:
            # IPython shows SyntaxErrors its own way (ignoring _render_traceback_), so re-raise as ours
            err = CellSyntaxError(
                e.msg or "invalid syntax",
                filename=filename,
                lineno=e.lineno,
                col=(e.offset - 1) if e.offset else None,
                source_line=_errors.line_of(text, e.lineno),
            )
            lines = _errors.short_traceback(
                type(e).__name__,
                err.message,
                filename=filename,
                lineno=e.lineno,
                col=err.col,
                source_line=err.source_line,
                cell_filename=filename,
            )
            raise _errors.attach(err, lines) from None

        prepare_namespace(ns)
        cap = Capture(
            device=device,
            target=args.target,
            compile_only=args.compile_only,
            interpret=args.interpret,
            auto_interpret=bool(specs),
        )
        t0 = time.perf_counter()
        try:
            with cap:
                exec(code, ns)  # noqa: S102 - the user's cell
        except BaseException as exc:
            self._raise_cell_error(exc, cap, filename, text, device)
        cell_ms = (time.perf_counter() - t0) * 1e3
        if any(r["mode"] == "gpu" for e in cap.entries.values() for r in e.runs):
            _synchronize()

        entries = list(cap.entries.values())
        names = list(dict.fromkeys(e.name for e in entries))
        shown = entries
        if args.kernel is not None:
            shown = [e for e in entries if e.name == args.kernel]
            if not shown:
                self._fail_line1(
                    WorkbenchError(
                        f"--kernel {args.kernel}: no kernel of that name was compiled or launched in this cell",
                        hint=f"kernels captured: {', '.join(names) or 'none'}",
                    ),
                    magic_line,
                    filename,
                    args.kernel,
                )
        primary = next((e for e in reversed(shown) if e.runs), shown[-1] if shown else None)

        # --- checks
        checks = self._checks(specs, args, cap, entries, ns)

        # --- Reports
        options = {k: v for k, v in vars(args).items()}
        reports: list[Report] = []
        cell_id = self._cell_id
        for e in shown:
            stages_first = _stage_list(args.stages, list(e.artifact.stages)) if args.stages else []
            diags = list(cap.diagnostics)
            if args.stages:
                unknown = [s for s in _stage_list(args.stages, None) if s not in e.artifact.stages]
                if unknown:
                    diags.append(
                        {
                            "severity": "warning",
                            "source": "magic",
                            "line": 1,
                            "hint": None,
                            "message": f"--stages: no stage {', '.join(unknown)} (stages: "
                            f"{', '.join(e.artifact.stages)})",
                        }
                    )
            r = Report.from_artifact(
                e.artifact,
                kernel=e.kernel,
                cell_source=text,
                cell_filename=filename,
                cell_id=cell_id,
                execution_count=getattr(shell, "execution_count", None),
                runs=e.runs,
                launches=e.launches,
                compile_ms=e.compile_ms,
                device=device.to_dict(),
                stages_first=stages_first,
                options=options,
                diagnostics=diags,
            )
            r.kernels = names
            if e is primary and checks:
                if not r.runs:
                    r.runs.append(
                        {
                            "mode": "compile",
                            "ran": False,
                            "grid": None,
                            "elapsed_ms": None,
                            "reason": "compiled with workbench.compile; nothing was launched",
                            "device": None,
                            "arguments": describe_arguments(e.kernel, e.bound),
                            "checks": [],
                        }
                    )
                r.runs[-1]["checks"] = checks
            if e is primary and args.bench:
                r.measurements.append(self._bench(e, args, ns, device))
            if e is primary and args.timeline:
                r.timeline = self._timeline(e, device)
            if not e.ran and e.runs:
                kind = r.kernel["kind"]
                hint = (
                    "--check or --interpret runs plain Triton kernels in Triton's CPU interpreter"
                    if kind == "triton"
                    else f"{kind} kernels need a GPU to run; Triton's interpreter runs only plain tl.* kernels"
                )
                r.diagnostics.append(
                    {
                        "severity": "info",
                        "source": "run",
                        "line": None,
                        "col": None,
                        "message": f"nothing ran: {e.runs[-1]['reason']}",
                        "hint": None if args.compile_only else hint,
                    }
                )
            if args.diff is not None:
                self._diff(r, args.diff, ns, cell_id)
            reports.append(r)

        for r in reports:
            if cell_id:
                self.history[("cell", cell_id, r.name)] = r
            self.history[("name", r.name)] = r
        self.last_reports = reports
        if args.output:
            ns[args.output] = next(
                (r for r in reports if primary is not None and r.artifact is primary.artifact),
                reports[-1] if reports else None,
            )

        if not args.quiet:
            from IPython.display import display

            for r in reports:
                display(r)
            if not reports:
                print(
                    "%%tlx: no kernel was compiled or launched in this cell"
                    if checks == []
                    else "\n".join(f"check {c['expr']}: {c['status']} ({c['message']})" for c in checks)
                )
        self._last_cell_ms = cell_ms
        bad = [c for c in checks if c["status"] in ("failed", "error")]
        if bad:
            c = bad[0]
            exc = CheckError(f"check {c['expr']} {c['status']}: {c['message']}", hint=_check_hint(c, args))
            self._fail_line1(exc, magic_line, filename, c["expr"])
        return reports

    def _checks(
        self, specs: list[CheckSpec], args: Any, cap: Capture, entries: list[Captured], ns: dict[str, Any]
    ) -> list[dict[str, Any]]:
        if not specs:
            return []
        ran = [e for e in entries if e.ran]
        if entries and not ran:
            last = next((e.runs[-1] for e in reversed(entries) if e.runs), None)
            why = "nothing ran: " + (last["reason"] if last else "the cell only compiled (workbench.compile)")
            return [skipped(s, why) for s in specs]
        return [evaluate(s, ns, args.atol, args.rtol) for s in specs]

    def _bench(self, e: Captured, args: Any, ns: dict[str, Any], device: Any) -> dict[str, Any]:
        base = {"kind": "bench", "measured_by": "workbench.measure", "device": device.name, "when": _now()}
        try:
            prof = importlib.import_module("workbench.measure")
            section_fn = prof.bench_section
        except Exception as ex:
            return {**base, "status": "skipped", "reason": f"workbench.measure is not available ({ex})"}

        def nothing() -> None:
            raise WorkbenchError("nothing to time: the kernel did not run on a GPU")

        fn = e.relaunch or nothing
        ref = None
        if args.bench_ref:
            ref_code = compile(_unquote(args.bench_ref), "<--bench-ref>", "eval")

            def ref() -> Any:
                return eval(ref_code, ns)  # noqa: S307 - the user's own expression

        kw: dict[str, Any] = {}
        try:
            for opt in ("flops", "bytes"):
                if getattr(args, opt):
                    kw[opt] = float(eval(_unquote(getattr(args, opt)), ns))  # noqa: S307
            section = section_fn(
                fn, reference=ref, kernel=e.kernel, grid=e.grid or (1, 1, 1), args=e.bound, name=e.name, **kw
            )
        except Exception as ex:
            return {**base, "status": "error", "reason": f"{type(ex).__name__}: {ex}"}
        status = (
            "ok"
            if section.get("timed")
            else ("error" if section.get("errors") and not section.get("message") else "skipped")
        )
        reason = section.get("message")
        if status == "skipped" and not reason:
            reason = f"no GPU ({device.reason})" if not device.available else "the kernel did not run on the GPU"
        return {**base, **section, "kind": "bench", "status": status, "reason": reason}

    def _timeline(self, e: Captured, device: Any) -> dict[str, Any]:
        base = {
            "kind": "timeline",
            "measured_by": "workbench.measure.timeline",
            "device": device.name,
            "when": _now(),
        }
        try:
            tl_mod = importlib.import_module("workbench.measure.timeline")
            section_fn = tl_mod.timeline_section
        except Exception as ex:
            return {**base, "status": "skipped", "reason": f"workbench.measure.timeline is not available ({ex})"}
        if e.relaunch is None:
            why = f"no GPU ({device.reason})" if not device.available else "the kernel did not run on the GPU"
            return {**base, "status": "skipped", "reason": why}
        try:
            section = section_fn(e.relaunch, kernel=e.kernel, grid=e.grid, args=e.bound, artifact=e.artifact)
        except Exception as ex:
            return {**base, "status": "error", "reason": f"{type(ex).__name__}: {ex}"}
        return {
            **base,
            "status": "ok",
            "reason": None,
            **(section if isinstance(section, dict) else {"data": section}),
        }

    def _diff(self, r: Report, how: Any, ns: dict[str, Any], cell_id: str | None) -> None:
        prev: Any = None
        if how is True:
            if cell_id:
                prev = self.history.get(("cell", cell_id, r.name))
            prev = prev or self.history.get(("name", r.name))
            what = "no previous run of this cell to diff against"
        else:
            name = _unquote(str(how))
            prev = ns.get(name)
            what = f"--diff {name}: no Report in variable {name!r}"
            if isinstance(prev, list):
                prev = next((p for p in prev if getattr(p, "name", None) == r.name), None)
        if isinstance(prev, dict) or isinstance(prev, Report):
            r.previous = diff_reports(prev, r)
        else:
            r.diagnostics.append(
                {"severity": "info", "source": "magic", "line": 1, "hint": None, "col": None, "message": what}
            )

    def _raise_cell_error(self, exc: BaseException, cap: Capture, filename: str, text: str, device: Any) -> None:
        if isinstance(exc, KeyboardInterrupt | SystemExit):
            raise exc
        err = exc
        try:
            from triton.compiler.errors import CompilationError
        except ImportError:  # pragma: no cover
            CompilationError = ()  # type: ignore[assignment]  # noqa: N806
        if isinstance(exc, CompilationError) and not isinstance(exc, WorkbenchError):
            err = _from_triton_error(exc, cap.failed_kernel)
        if isinstance(err, WorkbenchError):
            fn_name = getattr(cap.failed_kernel, "__name__", None)
            src_line = err.source_line
            if src_line is None and err.filename == filename:
                src_line = _errors.line_of(text, err.lineno)
            lines = _errors.short_traceback(
                type(err).__name__,
                err.message,
                filename=err.filename or filename,
                lineno=err.lineno,
                col=err.col,
                source_line=src_line,
                cell_filename=filename,
                hint=err.hint,
                func=fn_name,
            )
            if err.lineno is None or err.filename != filename:
                # say where in the cell the failing launch or compile was
                tb = exc.__traceback__
                where = None
                while tb is not None:
                    if tb.tb_frame.f_code.co_filename == filename:
                        where = tb.tb_lineno
                    tb = tb.tb_next
                if where:
                    lines[0] += f"\n  (raised by cell line {where}: {(_errors.line_of(text, where) or '').strip()})"
            raise _errors.attach(err, lines) from None
        lines = _errors.trimmed_traceback(self.shell, exc, filename)
        if lines is not None:
            if not device.available and "CUDA" in str(exc):
                lines = list(lines) + [
                    f"{_errors.CYAN}hint{_errors.RESET}: there is no GPU here "
                    f"({device.reason}); create tensors with device=DEVICE (it is 'cpu' "
                    "without a GPU) and the launches become compiles"
                ]
            _errors.attach(exc, lines)
        raise exc.with_traceback(exc.__traceback__)


def _from_triton_error(exc: Any, kernel: Any) -> WorkbenchError:
    from workbench.errors import CompileError

    node = getattr(exc, "node", None)
    rel = getattr(node, "lineno", None)
    filename = lineno = None
    try:
        from triton.runtime.jit import get_jit_fn_file_line

        base = kernel
        while base is not None and not hasattr(base, "starting_line_number") and hasattr(base, "fn"):
            base = base.fn
        filename, first = get_jit_fn_file_line(base)
        lineno = first + rel - 1 if rel else None
    except Exception:
        pass
    msg = (getattr(exc, "error_message", None) or str(exc)).strip()
    return CompileError(
        msg,
        filename=filename,
        lineno=lineno,
        col=getattr(node, "col_offset", None),
        source_line=_errors.line_of("".join(linecache.getlines(filename or "")), lineno),
    )


def _synchronize() -> None:
    try:
        import torch

        torch.cuda.synchronize()
    except Exception:
        pass


def _unquote(s: str) -> str:
    s = s.strip()
    if len(s) >= 2 and s[0] == s[-1] and s[0] in "\"'":
        return s[1:-1]
    return s


def _stage_list(spec: str | None, available: list[str] | None) -> list[str]:
    if not spec:
        return []
    want = [s.strip().lower() for s in re.split(r"[,\s]+", _unquote(spec)) if s.strip()]
    if available is None:
        return want
    by_lower = {a.lower(): a for a in available}
    return [by_lower[w] for w in want if w in by_lower]


def _check_hint(c: dict[str, Any], args: Any) -> str | None:
    if c["status"] == "error":
        return "the expression is evaluated in the notebook's namespace after the cell ran"
    if c.get("max_abs_err") is not None and c.get("mismatched"):
        return (
            f"max abs error {c['max_abs_err']:.3g}, max rel error {c.get('max_rel_err') or 0:.3g}; "
            f"loosen with --atol/--rtol if that is expected"
        )
    return None


# ---------------------------------------------------------------------- extension entry points
_LOADED: dict[int, TlxMagics] = {}


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext workbench``: register ``%%tlx``/``%tlx`` (idempotent)."""
    if id(ipython) in _LOADED:
        return
    magics = TlxMagics(ipython)
    ipython.register_magics(magics)
    _LOADED[id(ipython)] = magics
    try:  # warm the imports a first cell needs
        prepare_namespace({})
        import workbench.compile  # noqa: F401
        import workbench.report.html  # noqa: F401
    except Exception:
        pass


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
