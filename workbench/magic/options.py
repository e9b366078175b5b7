"""What ``%%tlx`` accepts: its options (IPython magic_arguments), the checks of their values before the cell runs,
and the warnings for options the cell will not act on."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from IPython.core.magic_arguments import argument, magic_arguments

from workbench.errors import CheckError, WorkbenchError
from workbench.magic.cell import Cell
from workbench.magic.errors import fail_at_magic_line
from workbench.report.export_launch import unquote
from workbench.run.verify import CheckSpec, parse_check

__all__ = ["ARGUMENTS", "ignored", "line_diagnostics", "magic_diagnostic", "show_stages_first", "stage_list",
           "tlx_arguments", "unknown_stages", "unquote", "validate"]

#: The options, in the order ``%%tlx?`` lists them.
ARGUMENTS = [
    argument("--target", default="sm_90", help="compile target (default sm_90)"),
    argument(
        "--stages",
        default=None,
        metavar="LIST",
        help="stages shown first, comma-separated (e.g. ttgir,ptx); the first is selected",
    ),
    argument(
        "--kernel",
        default=None,
        metavar="NAME",
        help="show the Report of this kernel only (default: every kernel the cell captured)",
    ),
    argument(
        "--compile-only",
        action="store_true",
        help="never run: every launch is compiled from its arguments (even with a GPU)",
    ),
    argument(
        "--interpret",
        action="store_true",
        help="run plain Triton kernels in Triton's CPU interpreter (even with a GPU)",
    ),
    argument(
        "--check",
        action="append",
        default=None,
        metavar="EXPR",
        help='compare outputs after the cell: "ACTUAL: EXPECTED" (or ACTUAL == EXPECTED), with '
        "tolerances; or a boolean expression. Repeatable. Without a GPU, plain Triton kernels "
        "then run in Triton's interpreter so the check is real",
    ),
    argument("--atol", type=float, default=None, help="absolute tolerance (default: by dtype)"),
    argument("--rtol", type=float, default=None, help="relative tolerance (default: by dtype)"),
    argument("--bench", action="store_true", help="time the kernel (workbench.measure; needs a GPU)"),
    argument(
        "--bench-ref",
        default=None,
        metavar="EXPR",
        help="with --bench: an expression timed as the reference (e.g. 'x + y')",
    ),
    argument("--flops", default=None, metavar="EXPR", help="with --bench: FLOPs per launch (roofline)"),
    argument("--bytes", default=None, metavar="EXPR", help="with --bench: bytes moved per launch (roofline)"),
    argument(
        "--timeline",
        nargs="?",
        const="fine",
        default=None,
        choices=["fine", "waits", "task"],
        metavar="LEVEL",
        help="per-role timeline (workbench.measure.timeline; needs a GPU). LEVEL: fine (default: barrier waits, "
        "TMA and MMA issue, MMA waits, epilogue stores), waits (barrier waits only: less overhead), task (whole "
        "roles)",
    ),
    argument(
        "--timeout",
        type=float,
        default=None,
        metavar="S",
        help="a GPU launch that has not finished after S seconds is stopped and becomes an error on the cell "
        "(default: 5 s beyond 4x the kernel's last time)",
    ),
    argument(
        "--snapshot",
        action="store_true",
        help="run a build whose warps record where they wait (a few stores around each barrier wait): if the "
        "launch hangs, the error says per role which barrier and phase its warps wait on, at which line",
    ),
    argument(
        "--no-isolate",
        action="store_true",
        help="launch in the notebook's own process instead of the worker (a hang or a fault then takes the "
        "notebook's kernel with it)",
    ),
    argument(
        "--sanitize",
        default=None,
        choices=["racecheck", "synccheck", "memcheck", "initcheck", "consan"],
        help="also run each kernel once under compute-sanitizer's tool (or Triton's ConSan), in a worker on "
        "copies of its arguments; findings on your lines",
    ),
    argument(
        "--stalls",
        action="store_true",
        help="also profile the kernel's launch once under Nsight Compute (ncu, in a worker on copies of its "
        "arguments): warp-stall samples per role, per line and per SASS instruction (a Stalls tab)",
    ),
    argument(
        "--no-fresh",
        action="store_true",
        help="--check only what the cell produced (no re-run on fresh random inputs with NaN-poisoned "
        "outputs: for kernels that read their own outputs)",
    ),
    argument(
        "--diff",
        "--compare",
        nargs="?",
        const=True,
        default=None,
        metavar="REPORT",
        help="diff against this cell's previous run (or a Report variable): the stages, resources and, where both "
        "runs have them (--bench, --stalls), time and stall reasons ranked by the time they explain",
    ),
    argument(
        "-o",
        "--output",
        default=None,
        metavar="NAME",
        help="store the Report (of --kernel, else the last kernel) in variable NAME",
    ),
    argument(
        "--search",
        nargs="?",
        const="",
        default=None,
        metavar="SPACE",
        help='search configs of the cell\'s launch: --search "BM=[64,128] BN=[128,256]" (or --search alone for a '
        "triton.autotune-wrapped kernel): compiled in parallel, checked, run in isolated GPU workers against --check "
        "and timed (workbench.search, on Ray); shows the best candidate's Report with a Search tab. -o NAME keeps "
        "the SearchResult",
    ),
    argument(
        "--stress",
        type=int,
        default=None,
        metavar="N",
        help="run the cell's launch N times, each a build with pseudo-random sleeps before its mbarrier waits and "
        "arrives (and after its arrives), TMA copies, wgmma waits and named barriers (seed 1..N), on one draw of "
        "fresh inputs in isolated GPU workers, "
        "judged by --check: how many runs differ, the seed that reproduces it, the delays that go with the failures "
        "(workbench.stress; needs a GPU)",
    ),
    argument("--budget", type=float, default=None, metavar="S", help="with --search: stop starting work after S s"),
    argument("--remeasure", action="store_true",
             help="with --search: compile, check and time every candidate again (workbench.search's fresh=True; by "
                  "default a candidate searched before on this device, same kernel, arguments and versions, shows "
                  "its kept row)"),
    argument("--cluster", default=None, metavar="ADDRESS",
              help="with --search: a Ray cluster (ray://host:port or host:port; default RAY_ADDRESS, else local)"),
    argument(
        "--export",
        action="append",
        default=None,
        metavar="PATH",
        help="write the Report's kernel (--kernel, else the last launched) to PATH: a .py file is a standalone "
        "reproducer script (plain python with triton-utlx, no workbench: inputs, launch, check, timing; compile-only "
        "without a GPU), a .ndjson file its compile and launch records for TritonParse. Repeatable",
    ),
    argument("--quiet", action="store_true", help="display nothing (errors and failed checks still fail)"),
]


def tlx_arguments(func: Callable) -> Callable:
    """``func`` with the options' parser (``func.parser``), as stacked ``@magic_arguments() @argument(...)`` give."""
    for deco in reversed(ARGUMENTS):
        func = deco(func)
    func = magic_arguments(name="%tlx")(func)  # its usage line reads %%tlx (a cell magic first; %tlx CODE works too)
    func.__doc__ = func.__doc__.replace("::\n\n", "Usage:\n\n", 1)  # IPython's reST marker, shown as text by %%tlx?
    return func


def validate(args: Any, cell: Cell) -> list[CheckSpec]:
    """Options that can be wrong before anything runs, checked then; their errors point at the magic line. Returns
    the parsed ``--check`` expressions."""
    from workbench.compile.targets import parse_target

    try:
        parse_target(args.target)
    except WorkbenchError as e:
        fail_at_magic_line(e, cell, args.target)
    for opt, least in (("timeout", 0.0), ("budget", 0.0), ("atol", None), ("rtol", None)):
        value = getattr(args, opt)
        if value is not None and (value < 0 or (least is not None and value <= least)):
            need = "a number of seconds above 0" if least is not None else "a tolerance of 0 or more"
            fail_at_magic_line(WorkbenchError(f"--{opt} {value:g}: needs {need}"), cell, f"--{opt}")
    for opt in ("flops", "bytes", "bench_ref"):
        expr = getattr(args, opt)
        if expr:
            try:
                compile(unquote(expr), f"<--{opt}>", "eval")
            except SyntaxError as e:
                err = WorkbenchError(f"--{opt.replace('_', '-')} {unquote(expr)!r} is not a valid expression: "
                                     f"{e.msg}", hint="a Python expression over the notebook's names, evaluated after "
                                     "the cell ran, e.g. --flops 2*M*N*K")
                fail_at_magic_line(err, cell, expr)
    specs: list[CheckSpec] = []
    for expr in args.check or []:
        expr = unquote(expr)
        try:
            specs.append(parse_check(expr))
        except SyntaxError as e:
            err = CheckError(f"--check {expr!r} is not a valid expression: {e.msg}",
                             hint='write --check "ACTUAL: EXPECTED", e.g. --check "out: x + y"')
            fail_at_magic_line(err, cell, expr)
    return specs


def line_diagnostics(args: Any, stages: list[str]) -> list[dict[str, Any]]:
    """What the magic line says about a Report with ``stages``: a ``--stages`` name it lacks, options not acted on."""
    return [d for d in [unknown_stages(args.stages, stages)] if d] + ignored(args)


def unknown_stages(spec: str | None, available: list[str]) -> dict[str, Any] | None:
    if not spec:
        return None
    unknown = [s for s in stage_list(spec, None) if s not in available]
    if not unknown:
        return None
    return magic_diagnostic("warning", f"--stages: no stage {', '.join(unknown)} (stages: {', '.join(available)})")


#: Options that only act together with another: option -> the options that use it.
_USED_WITH = {"flops": ("bench", "search"), "bytes": ("bench", "search"), "bench_ref": ("bench",),
              "budget": ("search", "stress"), "cluster": ("search", "stress"), "remeasure": ("search",),
              "atol": ("check",),
              "rtol": ("check",),
              "no_fresh": ("check",)}
#: What a --search cell does not do (it compiles, checks, runs and times every candidate itself).
_NOT_WITH_SEARCH = ("bench", "bench_ref", "timeline", "stalls", "snapshot", "sanitize", "export", "interpret",
                    "no_isolate")


def ignored(args: Any) -> list[dict[str, Any]]:
    """Warnings for the options given that this cell will not act on: one that needs another option that is
    absent (``--flops`` without ``--bench``), or one that a ``--search`` cell does not do."""

    def flag(name: str) -> str:
        return "--" + name.replace("_", "-")

    given = {k for k, v in vars(args).items() if v not in (None, False)}
    by_search = [opt for opt in _NOT_WITH_SEARCH if opt in given] if given & {"search", "stress"} else []
    out = [magic_diagnostic("warning", f"{flag(opt)} is ignored: it is used with {' or '.join(map(flag, users))}")
           for opt, users in _USED_WITH.items() if opt in given and not given & set(users) and opt not in by_search]
    mode = "--stress" if "stress" in given and "search" not in given else "--search"
    what = ("runs every delayed build itself" if mode == "--stress"
            else "compiles, checks, runs and times every candidate itself")
    return out + [magic_diagnostic("warning", f"{flag(opt)} is ignored with {mode} (the {mode[2:]} {what})")
                  for opt in by_search]


def magic_diagnostic(severity: str, message: str) -> dict[str, Any]:
    """A diagnostic about the magic's own line (line 1 of the cell)."""
    return {"severity": severity, "source": "magic", "line": 1, "col": None, "hint": None, "message": message}


def show_stages_first(report: Any, spec: str | None) -> None:
    """``--stages LIST`` on a Report made without it (a search's, or one shown again): its viewer opens on them."""
    if spec:
        first = stage_list(spec, report.stage_names)
        report.view.update(stages_first=first, selected_stage=first[0] if first else None)


def stage_list(spec: str | None, available: list[str] | None) -> list[str]:
    if not spec:
        return []
    want = [s.strip().lower() for s in re.split(r"[,\s]+", unquote(spec)) if s.strip()]
    if available is None:
        return want
    by_lower = {a.lower(): a for a in available}
    return [by_lower[w] for w in want if w in by_lower]


