"""The hardware named barriers of a TLX kernel (``tlx.named_barrier_wait`` / ``named_barrier_arrive``: PTX
``bar.sync`` / ``bar.arrive``), for the orchestration payload's graph: which barrier id and thread count each
named-barrier op uses. The model keeps these ops without their operands' values (the simulator learns them as
it runs); where they are constants (the usual case: ping-pong consumers hand each other the tensor cores through
two ids), their values are read from the op tree's ``arith.constant`` definitions with the model's evaluator."""

from __future__ import annotations

from workbench.analyse.orchestration import Orchestration
from workbench.analyse.orchestration_arith import evaluate

__all__ = ["NAMED_KINDS", "named_barriers"]

NAMED_KINDS = ("named_wait", "named_arrive")


def named_barriers(model: Orchestration) -> dict[int, tuple[int, int | None]]:
    """``id(op)`` of each named-barrier op whose barrier id is a constant -> (barrier id, thread count or None)."""
    out: dict[int, tuple[int, int | None]] = {}
    if model.func is not None:
        _visit(model.func.regions[0], [], out)
    return out


def _visit(region, scopes: list[dict], out: dict[int, tuple[int, int | None]]) -> None:
    """Definitions are scoped by region (MLIR reuses SSA names in sibling regions): the nearest one wins."""
    defs: dict = {}
    chain = [defs, *scopes]
    for op in region.ops:
        sync = op.sync
        if sync is not None and sync.kind in NAMED_KINDS and op.operands:
            ident = _constant(chain, op.operands[0])
            if ident is not None:
                threads = _constant(chain, op.operands[1]) if len(op.operands) > 1 else None
                out[id(op)] = (ident, threads)
        for r in op.results:
            defs[r] = op
        for inner in op.regions:
            _visit(inner, chain, out)


def _constant(chain: list[dict], name: str) -> int | None:
    op = next((d[name] for d in chain if name in d), None)
    return evaluate(op, lambda _: None) if op is not None and op.name == "arith.constant" else None
