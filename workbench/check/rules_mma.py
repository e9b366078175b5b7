"""A rule on the tensor-core ops as the compiler left them: an asynchronous dot that the compiler waits for as soon
as it is issued.

``tlx.async_dot`` issues a wgmma and returns; ``tlx.async_dot_wait(N, ...)`` waits until at most N are in flight.
In a loop Triton handles itself (on Triton 3.8 + uTLX: a plain ``range`` loop), Triton puts a
``warp_group_dot_wait {pendings = 0}`` right after the dot, with the dot's own location: the warpgroup waits for
the dot there, and the kernel's own ``async_dot_wait(1, ...)`` keeps nothing in flight. Seen on Meta's Hopper
tutorials (every dot of their FA kernels and of ``hopper_gemm_ws``) and on a small ring (tests/check): a
``tl.range(..., num_stages=0)`` loop keeps the dot asynchronous. Reported where the kernel meant to keep the dot in
flight (its own wait for it has pendings >= 1); a kernel that waits for it at once loses nothing.
"""

from __future__ import annotations

from workbench.check.context import Context
from workbench.check.findings import Finding, related
from workbench.check.rules_static import same_loc
from workbench.ir.mlir import Op, walk

DOT, WAIT = "ttng.warp_group_dot", "ttng.warp_group_dot_wait"


def _next_in_block(op: Op) -> list[Op]:
    ops = op.parent.ops if op.parent is not None else []
    i = next((k for k, o in enumerate(ops) if o is op), None)
    return [] if i is None else ops[i + 1:]


def dot_waited_at_issue(ctx: Context) -> None:
    model = ctx.model
    if model.func is None or model.to_line is None:
        return
    seen: set[int] = set()
    for op in walk(model.func.regions[0]):
        if op.name != DOT or "isAsync = true" not in op.body:
            continue
        after = _next_in_block(op)
        if not after or after[0].name != WAIT or after[0].attr_int("pendings") != 0 or not same_loc(op, after[0]):
            continue
        own = next((o for o in after[1:] if o.name == WAIT and not same_loc(op, o)), None)
        keeps = own.attr_int("pendings") if own is not None else None
        line, own_line = model.to_line(op), model.to_line(own) if own is not None else None
        if not keeps or line is None or line in seen:
            continue  # the kernel waits for it at once anyway (async_dot_wait(0, ...)): nothing is lost
        seen.add(line)
        meant = f"; the async_dot_wait({keeps}, ...) at line {own_line} then keeps nothing in flight"
        ctx.add(Finding(
            "dot-waited-at-issue", "warning", line,
            f"The compiler waits for this async_dot as soon as it is issued (a wgmma.wait_group 0 at this line in "
            f"the compiled code){meant}: nothing in this warpgroup overlaps the tensor cores' work. Triton does this "
            f"to an asynchronous dot in a loop it schedules itself.",
            related([(own_line, f"the kernel's own wait (pendings={keeps})")] if own_line else []),
            "for k in tl.range(lo, hi, num_stages=0):  # the loop's waits are the kernel's own: the dot stays "
            "asynchronous"))
