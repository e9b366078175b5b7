"""Which TTGIR ops orchestrate, and what each one names: the SyncOp of an op.

A SyncOp is one orchestration op of a task as written: a wait, arrive or expect on a barrier set; a
copy into a buffer set completing on a barrier set (with its bytes, from the destination type); an
MMA reading buffer sets; a local load or store; a TMA store from a buffer; the waits that retire
asynchronous groups; named barriers. An op the model does not know that takes a buffer or barrier
is ``opaque``: the checks then say nothing about that set.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from workbench.ir.mlir import Op, element_bytes, memdesc_type

VIEW_OPS = {"ttg.memdesc_index", "ttg.memdesc_subslice", "ttg.memdesc_trans", "ttg.memdesc_reinterpret",
            "ttg.memdesc_subview", "ttg.memdesc_reshape"}
_COUNT = re.compile(r"^%[\w.$#-]+\s*,\s*(-?\d+)")
_VALUE = re.compile(r"%[\w.$-]+(?:#\d+)?")

# op -> kind, for ops whose first operand is the barrier (and whose count, if any, follows it)
_ON_BARRIER = {"ttng.wait_barrier": "wait", "ttng.arrive_barrier": "arrive", "tlx.warp_barrier_arrive": "warp_arrive",
               "ttng.barrier_expect": "expect", "ttng.tc_gen5_commit": "tc_commit"}
# op -> (kind, which operand is the buffer)
_ON_BUFFER = {"ttg.async_copy_global_to_local": ("cp_async", 1), "ttg.local_load": ("local_load", 0),
              "ttg.local_store": ("local_store", 1)}
# op -> (kind, the attribute that counts groups left in flight)
_RETIRE = {"ttg.async_commit_group": ("cp_commit", None), "ttg.async_wait": ("cp_wait", "num"),
           "ttng.warp_group_dot_wait": ("mma_wait", "pendings"),
           "ttng.async_tma_store_wait": ("store_wait", "pendings"),
           "ttng.async_tma_store_token_wait": ("store_wait", "pendings"),
           "tlx.named_barrier_wait": ("named_wait", None), "tlx.named_barrier_arrive": ("named_arrive", None)}
_IGNORED = {"ttng.init_barrier", "ttng.inval_barrier", "ttg.local_alloc", "ttg.local_dealloc",
            "ttng.fence_async_shared", "ttg.warp_specialize"}


@dataclass
class SyncOp:
    """One orchestration op of a task, as written (not per execution).

    kind: wait, arrive, warp_arrive, expect, tma_load, cp_async, cp_commit, cp_wait, mma, mma_wait,
    local_load, local_store, tma_store, store_wait, named_wait, named_arrive, tc_mma, tc_commit,
    opaque (an op the model does not know that touches a buffer or barrier)."""

    kind: str
    line: int | None
    barrier: int | None = None  # barrier set id
    buffers: list[int] = field(default_factory=list)  # buffer set ids read or written
    bytes: int | None = None  # expect-bytes, or the bytes a copy moves
    count: int | None = None  # arrive count / pendings / named-barrier thread count
    text: str = ""  # the user's source line
    in_loop: bool = False  # inside an scf.for / scf.while of its task
    op: Op | None = field(default=None, repr=False, compare=False)


def tma_operands(op: Op) -> list[str]:
    """Operands after a ``%desc[...]`` coordinate list (TMA ops): buffer, barrier, predicate."""
    head = op.body.split(" : ", 1)[0]
    tail = head.split("]", 1)[1] if "]" in head else head
    return _VALUE.findall(tail)


def _set_of(refs, name: str | None, kind: str) -> int | None:
    ref = refs.get(name) if name else None
    return ref[1] if ref and ref[0] == kind else None


def _nbytes(md) -> int | None:
    if md is None:
        return None
    n = 1
    for d in md[0]:
        n *= d
    return n * element_bytes(md[1])


def also_completes(op: Op, refs: dict[str, tuple[str, int]], sync: SyncOp) -> list[SyncOp]:
    """The other barriers a ``tc_gen5_mma`` completes on when it is done (``tlx.async_dot(..., mBarriers=[a, b])``
    arrives on each): one ``tc_commit`` each, as a ``tcgen05.commit`` on that barrier would (the op's SyncOp holds the
    first). Meta's ``blackwell_fa_ws`` releases its K/V slots that way; without them every wait on the slots' barrier
    read as one nothing completes."""
    if sync.kind != "tc_mma":
        return []
    bars = [s for v in op.operands if (s := _set_of(refs, v, "bar")) is not None]
    return [SyncOp("tc_commit", None, barrier=b, op=op) for b in bars[1:]]


def classify(op: Op, refs: dict[str, tuple[str, int]]) -> SyncOp | None:
    """The SyncOp for an orchestration op (None for arithmetic, tensor and control-flow ops);
    ``refs`` maps the SSA names visible there to ('buf' | 'bar', set id)."""
    name, ops = op.name, op.operands
    first = ops[0] if ops else None
    m = _COUNT.match(op.body)
    count = int(m.group(1)) if m else None
    if name in _ON_BARRIER:
        kind = _ON_BARRIER[name]
        return SyncOp(kind, None, barrier=_set_of(refs, first, "bar"), op=op,
                      bytes=count if kind == "expect" else None,
                      count=(count or 1) if kind in ("arrive", "warp_arrive") else None)
    if name in _ON_BUFFER:
        kind, i = _ON_BUFFER[name]
        b = _set_of(refs, ops[i] if len(ops) > i else None, "buf")
        return SyncOp(kind, None, buffers=[] if b is None else [b], op=op)
    if name in _RETIRE:
        kind, attr = _RETIRE[name]
        return SyncOp(kind, None, count=(op.attr_int(attr) or 0) if attr else None, op=op)
    if name in ("ttng.async_tma_copy_global_to_local", "ttng.async_tma_copy_local_to_global"):
        tail = tma_operands(op)
        b = _set_of(refs, tail[0] if tail else None, "buf")
        if name.endswith("local_to_global"):
            return SyncOp("tma_store", None, buffers=[] if b is None else [b], op=op)
        return SyncOp("tma_load", None, barrier=_set_of(refs, tail[1] if len(tail) > 1 else None, "bar"),
                      buffers=[] if b is None else [b], bytes=_nbytes(memdesc_type(op.result_type())), op=op)
    reads = [b for v in ops[:2] if (b := _set_of(refs, v, "buf")) is not None]
    if name == "ttng.warp_group_dot":
        return SyncOp("mma", None, buffers=reads, op=op)
    bars = [s for v in ops if (s := _set_of(refs, v, "bar")) is not None]
    if name.startswith("ttng.tc_gen5_mma"):
        return SyncOp("tc_mma", None, barrier=bars[0] if bars else None, buffers=reads, op=op)
    if name in _IGNORED:
        return None
    bufs = [s for v in ops if (s := _set_of(refs, v, "buf")) is not None]
    if bars or bufs:
        return SyncOp("opaque", None, barrier=bars[0] if bars else None, buffers=bufs, op=op)
    return None
