"""The one simulated run of a compiled TLX kernel that the checks and the Report's orchestration payload share.

A ``%%tlx`` cell checks its kernel (:func:`workbench.check.check_artifact`) and draws its orchestration
(:mod:`workbench.report.orchestration`) from the same model and the same run of program 0 with the same
launch values: :func:`simulation` builds and runs them once per (artifact key, values, grid) and hands both
callers the result. The run's budget is a step count (:data:`STEPS`), never a wall-clock time, so the same
cell gives the same findings and the same graph on any machine, however loaded.

While it runs, the slot each copy writes is recorded with the barrier instance it completes on
(:attr:`Simulation.fills`): that is how the payload pairs a ring's slots with its barriers when the two
sets have different counts (a GEMM's A tiles split in two halves: slots ``i`` and ``S + i`` on barrier ``i``).
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from workbench.analyse.orchestration import Orchestration, build_model
from workbench.analyse.orchestration_sim import Simulator, Trace
from workbench.analyse.orchestration_state import VC, Access, Memory

__all__ = ["DEFAULT_GRID", "STEPS", "Simulation", "full_grid", "simulate_model", "simulation"]

STEPS = 100_000  # the simulation's budget in interpreted ops (about 0.3 s on a loaded 2-core CPU)
DEFAULT_GRID = (132, 1, 1)  # programs assumed for tl.num_programs when no grid is given (H100/H200 SMs)
_KEPT = 16  # runs kept (a cell's kernels, and the ones before it)
_RUNS: OrderedDict[tuple, Simulation] = OrderedDict()


@dataclass
class Simulation:
    model: Orchestration
    trace: Trace | None  # None: the TTGIR has no kernel function
    grid: tuple[int, int, int]
    fills: dict[tuple[int, int], set[tuple[int, int]]] = field(default_factory=dict)  # slot -> barrier instances


class _RecordingMemory(Memory):
    """The simulator's buffer slots, also noting which barrier instance each copy into a slot completes on."""

    def __init__(self) -> None:
        super().__init__()
        self.fills: dict[tuple[int, int], set[tuple[int, int]]] = {}

    def write(self, key: tuple[int, int], acc: Access, vc: VC) -> None:
        if acc.barrier is not None:
            self.fills.setdefault(key, set()).add(acc.barrier)
        super().write(key, acc, vc)


def full_grid(grid: tuple[int, ...] | list[int] | None) -> tuple[int, int, int]:
    """A launch grid as three axes; axes not given are 1, no grid at all is :data:`DEFAULT_GRID`."""
    if not grid:
        return DEFAULT_GRID
    g = tuple(int(x) for x in grid)[:3]
    return g + (1,) * (3 - len(g))  # type: ignore[return-value]


def simulate_model(model: Orchestration, values: dict[str, int] | None, grid: Any = None) -> Simulation:
    """Run ``model``'s tasks for program 0 with the launch's scalar ``values`` within :data:`STEPS` steps."""
    g = full_grid(grid)
    if model.func is None:
        return Simulation(model, None, g)
    sim = Simulator(model, values, grid=g, max_steps=STEPS, max_seconds=math.inf)
    sim.memory = memory = _RecordingMemory()
    return Simulation(model, sim.run(), g, memory.fills)


def simulation(artifact: Any, values: dict[str, int] | None = None, grid: Any = None) -> Simulation:
    """The model of ``artifact`` (a compiled TLX kernel) and its run with ``values`` on ``grid``, built once:
    a second call with the same artifact key, values and grid returns the first call's result."""
    values = dict(values or {})
    key_of = getattr(artifact, "key", None)
    key = (key_of, getattr(artifact, "target", None), tuple(sorted(values.items())), full_grid(grid)) \
        if isinstance(key_of, str) and key_of else None
    if key is not None and key in _RUNS:
        _RUNS.move_to_end(key)
        return _RUNS[key]
    result = simulate_model(build_model(artifact), values, grid)
    if key is not None:
        _RUNS[key] = result
        while len(_RUNS) > _KEPT:
            _RUNS.popitem(last=False)
    return result
