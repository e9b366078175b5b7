"""Static checks on a TLX kernel's orchestration, before anything runs (issue 19).

``check(kernel, *args, **options)`` compiles the kernel (through ``workbench.compile``, cached) and
returns a list of :class:`Finding`; ``check_artifact(artifact, kernel, *args, **options)`` does the
same for an artifact already compiled (the ``%%tlx`` magic's path). The checks read the
orchestration model (:mod:`workbench.analyse.orchestration`) and a simulated run of program 0
(:mod:`workbench.analyse.orchestration_sim`) with the launch's scalar arguments.

Rules (``Finding.rule``):

* ``wait-never-completes``: a wait on a barrier set that no task arrives on, expects bytes on or
  completes a copy on (model).
* ``first-wait-passes``: a task's first wait on a 'data ready' barrier (one that copies complete
  on, or whose arriving task writes what the waiter reads) uses phase 1, which a fresh barrier
  reports as complete, and nothing orders it after a completed phase of that barrier (run: the first
  parity each task used on each barrier, and the phases it knew had completed through the
  happens-before edges the run tracks: mbarrier waits, named barriers; a second consumer handed the
  turn after the first one consumed phase 0 rightly waits for phase 1).
* ``phase-flip``: the same wait passes twice with the same phase on the same completed phase of a
  barrier that is re-armed in a loop (run).
* ``arrive-count``: the arrivals that reach a barrier per round differ from its arrive_count, and
  the run shows it: a wait blocked before its phase completes, or passing phases it did not wait for.
* ``expect-bytes``: a phase's expected bytes differ from the bytes of the copies completing on it; or a task
  announces bytes on one barrier while its copy of the same loop iteration completes, unannounced, on another (run).
* ``hang``: tasks blocked on each other with no rule above explaining it.
* ``slot-reuse`` / ``read-before-write``: happens-before races on buffer slots (run).
* ``unwritten-buffer``: a buffer set that is read and never written (model).
* ``index-out-of-range``: a ``tlx.local_view(bufs_or_bars, i)`` whose index, as the run computed it,
  is outside ``[0, count)`` of its allocation, used by a wait, arrive, copy, load, store or MMA: it
  touches another allocation's memory (run; an index the run does not know says nothing).
* ``narrowing-store``: an fp32 value stored into fp16/bf16/fp8 memory through Triton's implicit
  cast (TTGIR: the cast carries the store's own location), a warning.
* ``smem-limit``: shared memory over what a block may use on the target (metadata + allocations).
* ``register-budget`` (warning): an ``async_task(registers=R)`` Triton does not give as asked: R over
  256, under 24 or not a multiple of 8 (setmaxnreg's range; Triton gave another budget), requests
  that do not fit the CTA's 64K registers with at least 24 per thread left for the default task
  (Triton drops them all: no setmaxnreg), ``registers=`` on the default task (not passed on).
* ``task-outside-tasks`` (warning): ``tlx.async_task`` in the kernel's source with no ``tlx.async_tasks()``
  block, so no warp specialization (source + TTGIR).
* ``dot-waited-at-issue`` (warning): an asynchronous dot the compiler waits for as soon as it is issued (TTGIR: a
  ``warp_group_dot_wait`` with pendings 0 right after the dot, at the dot's own location), so the kernel's own
  ``async_dot_wait(N, ...)`` keeps nothing in flight (TTGIR).
* ``not-followed`` (info): a task the simulation could not follow past a line.
* ``checks-failed`` (info): the model could not be read; nothing was checked.
"""

from __future__ import annotations

import time

from workbench.check.findings import Finding, Related, ordered

__all__ = ["Finding", "Related", "check", "check_artifact", "run_checks"]

def check(kernel, *args, target: str = "sm_90", grid: tuple[int, ...] | None = None, strict: bool = False,
          **options) -> list[Finding]:
    """Compile ``kernel`` for ``target`` with launch-style ``args`` (as ``workbench.compile``) and
    check its orchestration. ``grid`` sets ``tl.num_programs`` (default 132 programs on axis 0)."""
    from workbench.compile import compile as wb_compile

    artifact = wb_compile(kernel, *args, target=target, **options)
    return check_artifact(artifact, kernel, *args, grid=grid, strict=strict, **options)


def check_artifact(artifact, kernel=None, *args, grid: tuple[int, ...] | None = None, strict: bool = False,
                   **options) -> list[Finding]:
    """Check an Artifact already compiled from ``kernel`` with ``args``/``options`` (the launch's
    scalars drive the simulation; without them the tasks whose loops depend on them are not followed).
    An internal failure becomes one ``checks-failed`` info finding (``strict=True``: raised)."""
    from workbench.check.simulation import simulation
    from workbench.check.values import launch_values

    t0 = time.perf_counter()
    try:
        values = launch_values(kernel, args, options) if kernel is not None else {}
        run = simulation(artifact, values, grid)  # shared with the Report's orchestration payload
        findings = run_checks(run.model, values, grid, trace=run.trace)
    except Exception as e:  # a TTGIR the model cannot read must not break the cell that compiled it
        if strict:
            raise
        findings = [Finding("checks-failed", "info", None,
                            f"The orchestration checks could not read this kernel ({type(e).__name__}: {e}); "
                            f"nothing was checked.", [], "")]
    artifact.extra["check_seconds"] = time.perf_counter() - t0
    return findings


def run_checks(model, values: dict[str, int] | None = None, grid: tuple[int, ...] | None = None,
               trace=None) -> list[Finding]:
    """Every rule over ``model`` and its simulated run with ``values`` (``trace``: that run, made already by
    :func:`workbench.check.simulation.simulation`; else run here, within the same step budget)."""
    from workbench.check import (
        rules_bounds,
        rules_global,
        rules_hangs,
        rules_mma,
        rules_phases,
        rules_races,
        rules_registers,
        rules_static,
    )
    from workbench.check.context import Context
    from workbench.check.simulation import simulate_model

    if trace is None:
        trace = simulate_model(model, values, grid).trace
    ctx = Context(model, trace)
    rules_static.shared_memory(ctx)
    rules_registers.register_budget(ctx)
    rules_static.narrowing_store(ctx)
    rules_static.wait_never_completes(ctx)
    rules_static.unwritten_buffer(ctx)
    rules_static.task_outside_tasks(ctx)
    rules_mma.dot_waited_at_issue(ctx)
    rules_bounds.index_out_of_range(ctx)
    rules_global.global_out_of_bounds(ctx, values, tuple(grid) if grid else None)
    rules_phases.first_wait_passes(ctx)
    rules_phases.phase_flip(ctx)
    rules_hangs.expect_bytes(ctx)
    rules_hangs.expect_elsewhere(ctx)
    rules_hangs.arrive_counts(ctx)
    rules_races.races(ctx)
    rules_hangs.hangs(ctx)
    _not_followed(ctx)
    return ordered(ctx.findings)


def _not_followed(ctx) -> None:
    from workbench.check import rules_bounds

    tr = ctx.trace
    if tr is None:
        return
    stopped = rules_bounds.bad_lines(ctx)  # said by index-out-of-range
    for task, line, why in tr.lost:
        if (task, line) in stopped:
            continue
        ctx.add(Finding(
            "not-followed", "info", line,
            f"The checks could not follow {ctx.task(task)} past this line ({why}); what it does after it is not "
            f"checked, and hangs that would involve it are not reported.", [],
            "pass the launch's arguments (M, N, K, ...) to workbench.check so loops can be followed"))
    # a run cut short by the step budget (check.simulation.STEPS; large problem sizes) says nothing: the prefix
    # it covered is a real execution, and the rules only report what that prefix shows

