"""``%%tlx --search SPACE``: the cell's launch is recorded (not compiled or run in the notebook), then searched.

The space is ``--search "BM=[64,128] BN=[128,256]"`` (the searched keys replace what the cell's launch passes
for them), or ``--search`` alone for a ``triton.autotune``-wrapped kernel (its own configs, pruned as its
autotuner would). ``--check "ACTUAL: EXPECTED"`` becomes the reference (evaluated on each GPU worker's fresh
inputs) and the timing baseline; ``--flops``/``--bytes`` give rates; ``--timeout`` a run's hang limit;
``--budget`` and ``--cluster`` go to ``workbench.search``. The cell shows a progress bar while it runs, then the
Report of the best candidate (when none ran: the first that compiled) with a Search tab of every candidate.
``-o NAME`` keeps the ``SearchResult`` (``NAME.table``, ``NAME.report(i)``; ``--diff "NAME.report(i)"`` in
another cell); ``_search`` always holds the latest.
"""

from __future__ import annotations

from typing import Any

from workbench.compile.tuners import base_jit
from workbench.errors import ArgumentError, WorkbenchError
from workbench.magic import errors as _errors
from workbench.magic.options import unquote
from workbench.report.export_launch import option_number
from workbench.run.capture import Capture
from workbench.run.verify import CheckSpec

__all__ = ["run_search"]


def _launch(cap: Capture, kernel_name: str | None, cell: Any) -> Any:
    recorded = [r for r in cap.recorded if kernel_name is None or base_jit(r.kernel).__name__ == kernel_name]
    if not recorded:
        what = f"no launch of {kernel_name}" if kernel_name else "no kernel launch"
        _errors.fail_at_magic_line(WorkbenchError(
            f"--search: the cell made {what}: the search starts from the cell's launch (kernel[grid](...))",
            hint="launch the kernel once in the cell with its arguments; the space replaces the searched ones"),
            cell, "--search")
    return recorded[-1]


def _value(expr: str | None, ns: dict[str, Any], cell: Any, option: str) -> float | None:
    try:
        return option_number(option, expr, ns) if expr else None
    except WorkbenchError as e:
        _errors.fail_at_magic_line(e, cell, expr)
        return None


def _reference(specs: list[CheckSpec], ns: dict[str, Any], launch: Any, cell: Any) -> tuple[Any, Any]:
    from workbench.search.reference import reference_from_check

    if not specs:
        return None, None
    spec = specs[0]
    if spec.actual is None:
        _errors.fail_at_magic_line(WorkbenchError(f"--check {spec.expr!r}: with --search, write ACTUAL: EXPECTED",
                                                  hint='e.g. --check "c: a @ b"'), cell, spec.expr)
    try:
        names = list(base_jit(launch.kernel).arg_names)
        return reference_from_check(spec.actual, spec.expected, ns, launch.args, names)
    except WorkbenchError as e:
        _errors.fail_at_magic_line(e, cell, spec.expr)
        return None, None


STRESS_DELAYS = (2000, 0.5)  # --stress: sleeps below 2 us at half the sites of each build (workbench.stress)


def _stress_space(args: Any) -> list[dict[str, Any]]:
    """--stress N: N runs of the cell's launch as it is (each a delayed build of its own seed)."""
    if args.search is not None:
        raise ArgumentError("--stress runs the cell's launch as it is: give --stress or --search, not both")
    if args.stress < 1:
        raise ArgumentError(f"--stress {args.stress}: give the number of runs (e.g. --stress 50)")
    return [{}] * args.stress


def run_search(args: Any, cell: Any, code: Any, ns: dict[str, Any], device: Any, specs: list[CheckSpec],
               context: dict[str, Any]) -> Any:
    """Record the cell's launch, search it, return (the best candidate's Report, the SearchResult)."""
    from workbench.search import parse_space, search

    cap = Capture(device=device, target=args.target, record_only=True)
    try:
        with cap:
            exec(code, ns)  # noqa: S102 - the user's cell
    except BaseException as exc:
        _errors.raise_cell_error(context["shell"], exc, None, cell, device)
    launch = _launch(cap, args.kernel, cell)
    text = unquote(args.search) if args.search else ""
    flag = "--stress" if args.stress is not None else args.search or "--search"  # where an error points
    try:
        space = parse_space(text) if text.strip() else None
        if args.stress is not None:
            space = _stress_space(args)
    except WorkbenchError as e:
        _errors.fail_at_magic_line(e, cell, flag)
    searched = set(space) if isinstance(space, dict) else set()  # --stress: runs, not configs
    kwargs = {k: v for k, v in launch.kwargs.items() if k not in searched}
    reference, outputs = _reference(specs, ns, launch, cell)
    counts = {opt: _value(getattr(args, opt), ns, cell, f"--{opt}") for opt in ("flops", "bytes")}
    try:
        result = search(
            launch.kernel, space, *launch.args, grid=launch.grid, reference=reference, outputs=outputs,
            target=args.target, compile_only=args.compile_only or not device.available, cluster=args.cluster,
            budget_s=args.budget, timeout_s=args.timeout, atol=args.atol, rtol=args.rtol, fresh=args.remeasure,
            progress=not args.quiet, delays=STRESS_DELAYS if args.stress is not None else None, **counts, **kwargs)
    except WorkbenchError as e:
        _errors.fail_at_magic_line(e, cell, flag)
    shown = result.best_index
    if shown is None:
        shown = next((c.index for c in result.candidates if result.has_kernel(c.index)), None)
    ns["_search"] = result
    if args.output:
        ns[args.output] = result
    if shown is None:
        return None, result
    report = result.report(shown, kernel=base_jit(launch.kernel), cell_source=cell.text, cell_filename=cell.filename,
                           cell_id=context.get("cell_id"), execution_count=context.get("execution_count"),
                           device=device.to_dict(), options=dict(vars(args)))
    return report, result
