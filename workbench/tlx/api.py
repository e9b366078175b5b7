"""The names a TLX kernel calls (TLX_API.md), as Gluon builtins that pick layouts while Triton traces.

Each builtin receives ``_semantic`` (the lowering's :class:`TLXSemantic`) and ``_generator`` (Triton's
code generator, for the user's line). ``async_tasks``/``async_task`` are handled by the code
generator's ``with`` lowering (``workbench.tlx.lower.codegen``); calling them anywhere else is an error.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Sequence
from typing import Any

import triton
import triton.language as tl
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language import _core as glc
from triton.experimental.gluon.language.nvidia import hopper as _hopper
from triton.experimental.gluon.language.nvidia.ampere import async_copy as _async_copy
from triton.experimental.gluon.language.nvidia.hopper import mbarrier as _mbarrier
from triton.experimental.gluon.language.nvidia.hopper import tma as _tma

from workbench.tlx import layouts as L
from workbench.tlx.diagnostics import error
from workbench.tlx.lower import state as S
from workbench.tlx.lower import timeline as T

builtin = glc.builtin
_unwrap = glc._unwrap_if_constexpr

SMEM_LIMIT_SM90 = 232448  # bytes of shared memory a CTA may use on Hopper

__all__ = [
    "alloc_barriers",
    "async_descriptor_load",
    "async_descriptor_store",
    "async_descriptor_store_wait",
    "async_dot",
    "async_dot_wait",
    "async_load",
    "async_load_commit_group",
    "async_load_wait_group",
    "async_task",
    "async_task_replica_id",
    "async_tasks",
    "barrier_arrive",
    "barrier_expect_bytes",
    "barrier_wait",
    "clock64",
    "dtype_of",
    "fence_async_shared",
    "get_bufidx_phase",
    "local_alloc",
    "local_load",
    "local_slice",
    "local_store",
    "local_trans",
    "local_view",
    "named_barrier_arrive",
    "named_barrier_wait",
    "size_of",
    "thread_id",
]


# ----------------------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------------------


def _line(gen) -> int | None:
    node = getattr(gen, "cur_node", None)
    if gen is None or node is None or not hasattr(node, "lineno"):
        return None
    return gen.begin_line + node.lineno


def _ints(x, gen, what: str) -> list[int]:
    x = _unwrap(x)
    if isinstance(x, (tl.tuple, tuple, list)):
        vals = [_unwrap(v) for v in (x.values if isinstance(x, tl.tuple) else x)]
    else:
        vals = [x]
    if not all(isinstance(v, int) for v in vals):
        raise error(
            gen,
            f"{what} must be known at compile time (constexpr ints), got {vals}",
            "build shapes from tl.constexpr parameters or literals",
            rule="constexpr",
        )
    return [int(v) for v in vals]


def _is_smem(x) -> bool:
    return isinstance(x, glc.shared_memory_descriptor)


def _buf(x) -> S.BufferRecord | None:
    return getattr(x, "_tlx_buf", None)


def _tag(view, src, key: Any = None):
    rec = _buf(src)
    if rec is not None:
        view._tlx_buf = rec
    view._tlx_key = key if key is not None else getattr(src, "_tlx_key", None)
    return view


def _dtype_name(dt) -> str:
    return str(dt)


def _use(buf, text: str) -> None:
    rec = _buf(buf)
    if rec is not None:
        rec.add_use(text)


def _task_warps(sem) -> int:
    return sem.cur_warps()


def _require_smem(gen, x, what: str, call: str) -> None:
    if not _is_smem(x):
        raise error(
            gen,
            f"{call}: {what} must be a shared-memory buffer (from tlx.local_alloc), got {type(x).__name__}",
            "allocate it with tlx.local_alloc(...) and pass bufs[i]",
            rule="operand",
        )


def _call_index_text(gen, pos: int) -> str | None:
    node = getattr(gen, "cur_node", None)
    if isinstance(node, ast.Call) and len(node.args) > pos:
        return ast.unparse(node.args[pos])
    if isinstance(node, ast.Subscript):
        return ast.unparse(node.slice)
    return None


# ----------------------------------------------------------------------------------------------
# roles
# ----------------------------------------------------------------------------------------------


@builtin
def async_tasks(_semantic=None, _generator=None):
    """``with tlx.async_tasks():`` opens a warp-specialized region (lowered by the code generator)."""
    raise error(
        _generator,
        "tlx.async_tasks() must be used as `with tlx.async_tasks():`",
        "write `with tlx.async_tasks():` and put `with tlx.async_task(...)` blocks inside",
        rule="task",
    )


@builtin
def async_task(
    *args,
    num_warps=None,
    num_regs=None,
    registers=None,
    replicate=None,
    warp_group_start_id=None,
    name=None,
    _semantic=None,
    _generator=None,
):
    """``with tlx.async_task("default")`` / ``with tlx.async_task(num_warps=N, num_regs=R, replicate=K)``.

    ``name="producer"`` (a workbench extension) names the task's role in timelines.
    """
    raise error(
        _generator,
        "tlx.async_task(...) is only allowed directly inside `with tlx.async_tasks():`",
        "wrap the task blocks in `with tlx.async_tasks():`",
        rule="task-outside",
    )


@builtin
def async_task_replica_id(_semantic=None, _generator=None):
    """The replica id (a constexpr) of the replicated task this runs in."""
    st = S.current()
    task = st.tasks[-1] if st and st.tasks else None
    if task is None or task.replica is None:
        raise error(
            _generator,
            "tlx.async_task_replica_id() is only meaningful inside a replicated task",
            "call it inside `with tlx.async_task(num_warps=..., replicate=K):`",
            rule="replica-id",
        )
    return gl.constexpr(task.replica)


# ----------------------------------------------------------------------------------------------
# buffers
# ----------------------------------------------------------------------------------------------


@builtin
def local_alloc(shape, dtype, num, storage=None, reuse=None, layout=None, _semantic=None, _generator=None):
    """``num`` shared-memory buffers of ``shape`` and ``dtype``; ``layout=`` overrides the inferred layout."""
    gen = _generator
    shape = _ints(shape, gen, "local_alloc shape")
    num = _ints(num, gen, "local_alloc num")[0]
    dtype = _unwrap(dtype)
    storage = _unwrap(storage)
    if storage is not None and "tmem" in str(storage).lower():
        raise error(
            gen,
            "tlx.local_alloc(storage=tmem): tensor memory is Blackwell-only; sm_90 has no TMEM",
            "drop storage= to allocate shared memory",
            rule="unsupported",
        )
    if reuse is not None:
        raise error(
            gen,
            "tlx.local_alloc(reuse=...) is not supported by the TLX lowering yet",
            "allocate a separate buffer",
            rule="unsupported",
        )
    layout = _unwrap(layout)
    explicit = layout is not None
    if layout is None:
        layout = L.buffer_layout(shape, dtype)
    smem = _semantic.allocate_shared(dtype, [num] + shape, layout, None)
    st = S.current()
    rec = S.BufferRecord(
        name=None,
        line=_line(gen),
        shape=shape,
        num=num,
        dtype=_dtype_name(dtype),
        layout=layout,
        kind="buffer",
        nbytes=num * L.nbytes(shape, dtype),
        explicit=explicit,
    )
    if st is not None:
        st.record_buffer(rec)
    smem._tlx_buf = rec
    smem._tlx_count = num
    return smem


def _index(gen, sem, bufs, idx, call: str):
    if not _is_smem(bufs):
        raise error(
            gen,
            f"{call}: expected buffers from tlx.local_alloc or tlx.alloc_barriers, got {type(bufs).__name__}",
            rule="operand",
        )
    count = getattr(bufs, "_tlx_count", None)
    i = _unwrap(idx)
    if isinstance(i, int) and count is not None and not 0 <= i < count:
        raise error(
            gen,
            f"{call}: buffer index {i} is out of range: the allocation holds {count} buffers "
            f"(valid indices 0..{count - 1})",
            "use an index below the `num` given to local_alloc (or the count given to alloc_barriers)",
            rule="index-range",
        )
    view = sem.memdesc_index(bufs, idx)
    key = None
    rec = _buf(bufs)
    if rec is not None:
        key = (id(rec), repr(i) if isinstance(i, int) else _call_index_text(gen, 1))
    return _tag(view, bufs, key)


@builtin
def local_view(local_allocated_buffers, buffer_idx, _semantic=None, _generator=None):
    """One buffer (or barrier) of a set: ``bufs[i]``."""
    return _index(_generator, _semantic, local_allocated_buffers, buffer_idx, "tlx.local_view")


def _smem_getitem(self, idx, _semantic=None, _generator=None):
    return _index(_generator, _semantic, self, idx, "buffer[...]")


_smem_getitem.__triton_builtin__ = True
glc.shared_memory_descriptor.__getitem__ = _smem_getitem


@builtin
def local_load(src, token=None, layout=None, _semantic=None, _generator=None):
    """Load a shared buffer into registers (default blocked layout of the task, or ``layout=``)."""
    gen = _generator
    _require_smem(gen, src, "the source", "tlx.local_load")
    layout = _unwrap(layout)
    reason = f"layout= given at line {_line(gen)}"
    if layout is None:
        layout = L.default_blocked(len(src.shape), _task_warps(_semantic))
        reason = f"default blocked layout for {_task_warps(_semantic)} warps (local_load at line {_line(gen)})"
    t = _semantic.shared_load(src, layout)
    t._tlx_reason = reason
    _use(src, f"read by local_load at line {_line(gen)}")
    return t


@builtin
def local_store(dst, src, _semantic=None, _generator=None):
    """Store a register tensor into a shared buffer."""
    gen = _generator
    _require_smem(gen, dst, "the destination", "tlx.local_store")
    if list(dst.shape) != list(src.shape):
        raise error(
            gen,
            f"tlx.local_store: tensor shape {list(src.shape)} does not match buffer shape {list(dst.shape)}",
            "store a tensor of the buffer's shape (index the set with bufs[i])",
            rule="shape",
        )
    if dst.dtype != src.dtype:
        src = _semantic.cast(src, dst.dtype)
    _semantic.shared_store(dst, src)
    _use(dst, f"written by local_store at line {_line(gen)}")


@builtin
def local_trans(input, dims=(1, 0), _semantic=None, _generator=None):
    """A transposed view of a shared buffer."""
    _require_smem(_generator, input, "the input", "tlx.local_trans")
    dims = _ints(dims, _generator, "local_trans dims")
    return _tag(_semantic.memdesc_trans(input, dims), input)


@builtin
def local_slice(buffer, offsets, shapes, _semantic=None, _generator=None):
    """A sub-view of a shared buffer at constant ``offsets`` with ``shapes``."""
    gen = _generator
    _require_smem(gen, buffer, "the buffer", "tlx.local_slice")
    offsets = _ints(offsets, gen, "local_slice offsets")
    shapes = _ints(shapes, gen, "local_slice shapes")
    view = buffer
    for dim, (off, size) in enumerate(zip(offsets, shapes, strict=True)):
        if off != 0 or size != view.shape[dim]:
            view = _semantic.memdesc_slice(view, off, size, dim)
    return _tag(view, buffer)


# ----------------------------------------------------------------------------------------------
# barriers
# ----------------------------------------------------------------------------------------------


@builtin
def alloc_barriers(num_barriers, arrive_count=1, _semantic=None, _generator=None):
    """``num_barriers`` mbarriers, each completing a phase after ``arrive_count`` arrivals."""
    gen = _generator
    n = _ints(num_barriers, gen, "alloc_barriers num_barriers")[0]
    count = _ints(arrive_count, gen, "alloc_barriers arrive_count")[0]
    layout = L.barrier_layout()
    bars = _semantic.allocate_shared(gl.int64, [n, 1], layout, None)
    for i in range(n):
        one = _semantic.memdesc_index(bars, _semantic.to_tensor(i))
        _semantic.builder.create_mbarrier_init(one.handle, count)
    _hopper.fence_async_shared(_semantic=_semantic)
    _semantic.builder.create_barrier()
    rec = S.BufferRecord(
        name=None,
        line=_line(gen),
        shape=[1],
        num=n,
        dtype="mbarrier",
        layout=layout,
        kind="barrier",
        nbytes=8 * n,
    )
    rec.add_use(f"{n} mbarriers, arrive count {count}")
    st = S.current()
    if st is not None:
        st.record_buffer(rec)
    bars._tlx_buf = rec
    bars._tlx_count = n
    return bars


def _check_bar(gen, bar, call: str) -> None:
    if not _is_smem(bar) or _buf(bar) is None or _buf(bar).kind != "barrier":
        if _is_smem(bar) and (_buf(bar) is None or _buf(bar).kind == "barrier"):
            return
        raise error(
            gen,
            f"{call}: expected one mbarrier (bars[i] of tlx.alloc_barriers), got {type(bar).__name__}",
            "index the barrier set: bars[i]",
            rule="operand",
        )


def _settle_expect(gen, key) -> None:
    st = S.current()
    if st is None or key is None:
        return
    p = st.pending_expect.pop(key, None)
    if p is not None and p.copies and p.got != p.expected:
        raise error(
            gen,
            f"barrier_expect_bytes at line {p.line} expects {p.expected} bytes but the copies that "
            f"complete on this barrier bring {p.got} bytes ({' + '.join(map(str, p.copies))})",
            f"expect {p.got} bytes, i.e. the sum of the tiles' sizes (elements x element size)",
            rule="expect-bytes",
        )


def settle_all(gen) -> None:
    st = S.current()
    if st is None:
        return
    for key in list(st.pending_expect):
        p = st.pending_expect[key]
        if p.copies and p.got != p.expected:
            from workbench.tlx.diagnostics import TLXError

            raise TLXError(
                f"barrier_expect_bytes expects {p.expected} bytes but the copies that complete on "
                f"this barrier bring {p.got} bytes ({' + '.join(map(str, p.copies))})",
                f"expect {p.got} bytes, i.e. the sum of the tiles' sizes (elements x element size)",
                rule="expect-bytes",
                filename=getattr(gen, "file_name", None),
                lineno=p.line,
            )
        del st.pending_expect[key]


def _barrier_label(gen, bar) -> str | None:
    """The barrier set's name for timeline scopes: ``empty`` in ``barrier_wait(empty[slot], ...)``."""
    node = getattr(gen, "cur_node", None)
    arg = node.args[0] if isinstance(node, ast.Call) and node.args else None
    while isinstance(arg, (ast.Subscript, ast.Call)):
        arg = arg.value if isinstance(arg, ast.Subscript) else (arg.args[0] if arg.args else None)
    if isinstance(arg, ast.Name):
        return arg.id
    rec = _buf(bar)
    return rec.name if rec is not None else None


@builtin
def barrier_wait(bar, phase, pred=None, _semantic=None, _generator=None):
    """Wait until the barrier's phase with parity ``phase`` has completed."""
    _check_bar(_generator, bar, "tlx.barrier_wait")
    with T.scope(_semantic, "wait", _barrier_label(_generator, bar)):
        _mbarrier.wait(bar, phase, pred=True if pred is None else pred, _semantic=_semantic)


@builtin
def barrier_arrive(bar, arrive_count=1, remote_cta_rank=None, _semantic=None, _generator=None):
    """Arrive on a barrier (once per task)."""
    gen = _generator
    _check_bar(gen, bar, "tlx.barrier_arrive")
    if remote_cta_rank is not None:
        raise error(
            gen,
            "tlx.barrier_arrive(remote_cta_rank=...): remote mbarrier arrives need clusters, which "
            "Gluon 3.6 cannot express",
            "arrive on a barrier of this CTA",
            rule="unsupported",
        )
    count = _ints(arrive_count, gen, "barrier_arrive arrive_count")[0]
    # All threads of the task must be done with the shared memory the arrive publishes.
    if _task_warps(_semantic) > 1:
        _semantic.builder.create_barrier()
    _mbarrier.arrive(bar, count=count, _semantic=_semantic)


@builtin
def barrier_expect_bytes(bar, size, pred=None, _semantic=None, _generator=None):
    """The barrier's next phase also waits for ``size`` bytes of asynchronous copies."""
    gen = _generator
    _check_bar(gen, bar, "tlx.barrier_expect_bytes")
    size_v = _unwrap(size)
    if not isinstance(size_v, int):
        raise error(gen, "tlx.barrier_expect_bytes: size must be a compile-time int", rule="constexpr")
    key = getattr(bar, "_tlx_key", None)
    _settle_expect(gen, key)
    st = S.current()
    if st is not None and key is not None:
        st.pending_expect[key] = S.Pending(expected=size_v, line=_line(gen))
    _mbarrier.expect(bar, size_v, pred=True if pred is None else pred, _semantic=_semantic)


def _named_barrier(sem, gen, op: str, bar_id, num_threads):
    bid = _unwrap(bar_id)
    n = _unwrap(num_threads)
    if isinstance(bid, int) and bid < 3 + 8:
        pass
    if isinstance(n, int) and n % 32:
        raise error(gen, f"tlx.named_barrier_{op}: num_threads must be a multiple of 32, got {n}", rule="operand")
    bid_t = sem.to_tensor(bid) if not isinstance(bid, glc.tensor) else bid
    n_t = sem.to_tensor(n) if not isinstance(n, glc.tensor) else n
    asm = f"bar.{'sync' if op == 'wait' else 'arrive'} $1, $2;"
    # inline asm needs a result: a dummy i32 the barrier never writes
    sem.builder.create_inline_asm(asm, "=r,r,r", [bid_t.handle, n_t.handle], [gl.int32.to_ir(sem.builder)], False, 1)


@builtin
def named_barrier_wait(bar_id, num_threads, _semantic=None, _generator=None):
    """``bar.sync bar_id, num_threads`` (ids 9 and 10 are safe next to Triton's own barriers)."""
    _named_barrier(_semantic, _generator, "wait", bar_id, num_threads)


@builtin
def named_barrier_arrive(bar_id, num_threads, _semantic=None, _generator=None):
    """``bar.arrive bar_id, num_threads``."""
    _named_barrier(_semantic, _generator, "arrive", bar_id, num_threads)


# ----------------------------------------------------------------------------------------------
# asynchronous copies
# ----------------------------------------------------------------------------------------------


def _check_desc(gen, desc, buf, call: str) -> None:
    if not isinstance(desc, _tma.tensor_descriptor):
        raise error(
            gen,
            f"{call}: the first argument must be a tensor descriptor (a host "
            f"triton.tools.tensor_descriptor.TensorDescriptor kernel argument), got {type(desc).__name__}",
            rule="operand",
        )
    _require_smem(gen, buf, "the buffer", call)
    if list(desc.block_shape) != list(buf.shape):
        raise error(
            gen,
            f"{call}: the descriptor's block shape {list(desc.block_shape)} differs from the "
            f"buffer's shape {list(buf.shape)}",
            "make the host TensorDescriptor's block_shape equal to the local_alloc shape",
            rule="shape",
        )
    if desc.layout != buf.layout:
        raise error(
            gen,
            f"{call}: the buffer's layout {L.describe(buf.layout)} differs from the descriptor's "
            f"{L.describe(desc.layout)}; the copy would scramble the tile",
            "drop layout= on this buffer's local_alloc so both get the inferred NVMMA layout",
            rule="layout",
        )


@builtin
def async_descriptor_load(
    desc,
    result,
    offsets,
    barrier=None,
    pred=None,
    cache_modifier="",
    eviction_policy="",
    multicast_targets=None,
    _semantic=None,
    _generator=None,
):
    """TMA copy of one tile ``desc[offsets]`` into ``result``, completing on ``barrier``."""
    gen = _generator
    _check_desc(gen, desc, result, "tlx.async_descriptor_load")
    if multicast_targets is not None:
        raise error(
            gen,
            "tlx.async_descriptor_load(multicast_targets=...): multicast TMA needs clusters, which "
            "Gluon 3.6 cannot express",
            "load the tile in each CTA",
            rule="unsupported",
        )
    if barrier is None:
        raise error(gen, "tlx.async_descriptor_load needs a barrier to complete on", rule="operand")
    _check_bar(gen, barrier, "tlx.async_descriptor_load")
    with T.scope(_semantic, "tma_load"):
        _tma.async_copy_global_to_shared(
            desc, offsets, barrier, result, pred=True if pred is None else pred, _semantic=_semantic
        )
    ln = _line(gen)
    _use(result, f"filled by async_descriptor_load (TMA) at line {ln}")
    st = S.current()
    key = getattr(barrier, "_tlx_key", None)
    if st is not None and key in st.pending_expect:
        p = st.pending_expect[key]
        n = L.nbytes(list(result.shape), result.dtype)
        p.got += n
        p.copies.append(n)


@builtin
def async_descriptor_store(desc, source, offsets, _semantic=None, _generator=None):
    """TMA copy of ``source`` to ``desc[offsets]`` (out-of-bounds parts are clipped)."""
    gen = _generator
    _check_desc(gen, desc, source, "tlx.async_descriptor_store")
    with T.scope(_semantic, "tma_store"):
        _tma.async_copy_shared_to_global(desc, offsets, source, _semantic=_semantic)
    _use(source, f"stored by async_descriptor_store (TMA) at line {_line(gen)}")


@builtin
def async_descriptor_store_wait(pendings=0, _semantic=None, _generator=None):
    """Wait until at most ``pendings`` TMA stores are in flight."""
    with T.scope(_semantic, "store_wait"):
        _tma.store_wait(_unwrap(pendings), _semantic=_semantic)


@builtin
def async_load(
    src,
    result,
    mask=None,
    other=None,
    cache_modifier="",
    eviction_policy="",
    is_volatile=False,
    _semantic=None,
    _generator=None,
):
    """cp.async copy of the tensor of pointers ``src`` into ``result``; returns a token."""
    gen = _generator
    _require_smem(gen, result, "the destination", "tlx.async_load")
    if not isinstance(src, glc.tensor) or not src.type.is_block() or not src.dtype.is_ptr():
        raise error(gen, "tlx.async_load: src must be a tensor of pointers", rule="operand")
    other_v = _unwrap(other)
    if other is not None and not (isinstance(other_v, (int, float)) and other_v == 0):
        raise error(
            gen,
            "tlx.async_load: cp.async fills masked-off elements with zeros; other= must be 0 or None",
            "drop other= (or apply tl.where after local_load)",
            rule="unsupported",
        )
    if list(src.shape) != list(result.shape):
        raise error(
            gen,
            f"tlx.async_load: pointer shape {list(src.shape)} differs from buffer shape {list(result.shape)}",
            rule="shape",
        )
    elem_bits = result.dtype.primitive_bitwidth
    layout = L.copy_layout(list(src.shape), elem_bits, _task_warps(_semantic))
    src = _semantic.convert_to(src, layout)
    if mask is not None:
        if not isinstance(mask, glc.tensor):
            mask = _semantic.to_tensor(mask)
        if mask.type.is_block():
            mask = _semantic.convert_to(
                _semantic.broadcast_impl_shape(mask, list(src.shape)) if list(mask.shape) != list(src.shape) else mask,
                layout,
            )
    _async_copy.async_copy_global_to_shared(
        result,
        src,
        mask=mask,
        cache_modifier=cache_modifier,
        eviction_policy=eviction_policy,
        volatile=is_volatile,
        _semantic=_semantic,
    )
    _use(result, f"filled by async_load (cp.async) at line {_line(gen)}")
    return _semantic.to_tensor(0)  # a token: cp.async completion is tracked by commit/wait groups


@builtin
def async_load_commit_group(tokens=(), _semantic=None, _generator=None):
    """Close the current cp.async commit group."""
    _async_copy.commit_group(_semantic=_semantic)
    return _semantic.to_tensor(0)


@builtin
def async_load_wait_group(pendings, tokens=(), _semantic=None, _generator=None):
    """Wait until at most ``pendings`` cp.async groups are in flight."""
    _async_copy.wait_group(_unwrap(pendings), _semantic=_semantic)
    # Make every thread's completed copies visible to the whole task.
    _semantic.builder.create_barrier()
    return _semantic.to_tensor(0)


# ----------------------------------------------------------------------------------------------
# tensor cores
# ----------------------------------------------------------------------------------------------


@builtin
def async_dot(
    A,
    B,
    acc=None,
    use_acc=None,
    pred=None,
    mBarriers=(),
    two_ctas=False,
    force_async=False,
    input_precision=None,
    out_dtype=tl.float32,
    _semantic=None,
    _generator=None,
):
    """An asynchronous wgmma ``A @ B (+ acc)``; wait for it with :func:`async_dot_wait`."""
    gen = _generator
    sem = _semantic
    ln = _line(gen)
    if not _is_smem(B):
        raise error(
            gen,
            f"tlx.async_dot: operand b must be a shared-memory buffer, got a "
            f"{'register tensor' if isinstance(B, glc.tensor) else type(B).__name__}",
            "local_store it into a tlx.local_alloc buffer (or load it there by TMA) and pass the buffer",
            rule="dot-operand",
        )
    if not (_is_smem(A) or isinstance(A, glc.tensor)):
        raise error(
            gen,
            f"tlx.async_dot: operand a must be a shared buffer or a register tensor, got {type(A).__name__}",
            rule="dot-operand",
        )
    if _unwrap(two_ctas) or (
        mBarriers and len(_unwrap(mBarriers)) if not isinstance(mBarriers, tuple) else len(mBarriers)
    ):
        raise error(
            gen,
            "tlx.async_dot: mBarriers= and two_ctas= are Blackwell (tcgen05) features; wgmma on "
            "sm_90 completes through tlx.async_dot_wait",
            rule="unsupported",
        )
    if pred is not None:
        raise error(gen, "tlx.async_dot(pred=...) is not supported on sm_90", rule="unsupported")
    a_shape, b_shape = list(A.shape), list(B.shape)
    if len(a_shape) != 2 or len(b_shape) != 2 or a_shape[1] != b_shape[0]:
        raise error(
            gen,
            f"tlx.async_dot: shapes do not chain: a is {a_shape}, b is {b_shape} (need a [M, K] and b [K, N])",
            "pass b as [K, N] (tlx.local_trans(b) if it is stored [N, K])",
            rule="dot-shape",
        )
    if A.dtype != B.dtype:
        raise error(
            gen,
            f"tlx.async_dot: a is {A.dtype} but b is {B.dtype}; wgmma needs both of one dtype",
            "cast one operand with .to(...) before storing it",
            rule="dot-dtype",
        )
    M, N = a_shape[0], b_shape[1]
    nw = _task_warps(sem)
    if nw % 4:
        raise error(
            gen,
            f"tlx.async_dot runs on whole warpgroups; this task has {nw} warps",
            "give the task num_warps=4 (or 8)",
            rule="dot-warps",
        )
    out_dtype = _unwrap(out_dtype)
    mma = L.wgmma_layout([M, N], nw, A.dtype.primitive_bitwidth)
    if acc is None:
        acc_t = sem.full([M, N], 0, out_dtype, mma)
        use = False if use_acc is None else use_acc
    else:
        use = True if use_acc is None else use_acc
        acc_t = acc
        if isinstance(acc, glc.tensor):
            if list(acc.shape) != [M, N]:
                raise error(
                    gen,
                    f"tlx.async_dot: accumulator shape {list(acc.shape)} is not [M, N] = {[M, N]}",
                    rule="dot-shape",
                )
            if acc.type.layout != mma:
                acc_t = sem.convert_layout(acc, mma)
    if isinstance(A, glc.tensor):
        dot_a = L.dot_operand_a(mma, A.dtype.primitive_bitwidth)
        if A.type.layout != dot_a:
            A = sem.convert_layout(A, dot_a)
    else:
        _use(A, f"operand a of async_dot at line {ln}")
    _use(B, f"operand b of async_dot at line {ln}")
    with T.scope(sem, "mma"):
        res = _hopper.warpgroup_mma(A, B, acc_t, use_acc=use, precision=input_precision, is_async=True, _semantic=sem)
    res._tlx_reason = f"accumulator of async_dot at line {ln}: wgmma layout for {nw} warps"
    return res


@builtin
def async_dot_wait(pendings, inp, _semantic=None, _generator=None):
    """Wait until at most ``pendings`` async_dots are in flight; returns ``inp`` ready to use."""
    deps = list(inp.values) if isinstance(inp, tl.tuple) else [inp]
    with T.scope(_semantic, "mma_wait"):
        out = _hopper.warpgroup_mma_wait(_unwrap(pendings), deps=deps, _semantic=_semantic)
    outs = out if isinstance(out, tuple) else (out,)
    for d, o in zip(deps, outs, strict=True):
        if hasattr(d, "_tlx_reason"):
            o._tlx_reason = d._tlx_reason
    return out


# ----------------------------------------------------------------------------------------------
# small helpers
# ----------------------------------------------------------------------------------------------


@builtin
def dtype_of(v, _semantic=None, _generator=None):
    """Element type of a tensor, buffer or descriptor."""
    if isinstance(v, _tma.tensor_descriptor):
        return v.dtype
    dt = v.dtype if hasattr(v, "dtype") else v.type.scalar
    if dt.is_ptr():
        dt = dt.element_ty
    return dt


@builtin
def size_of(dtype, _semantic=None, _generator=None):
    """Bytes of one element of ``dtype``."""
    return gl.constexpr(_unwrap(dtype).primitive_bitwidth // 8)


@builtin
def thread_id(axis, _semantic=None, _generator=None):
    """The thread index along ``axis`` (0, 1 or 2)."""
    axis = _unwrap(axis)
    if axis not in (0, 1, 2):
        raise error(_generator, f"tlx.thread_id: axis must be 0, 1 or 2, got {axis}", rule="operand")
    reg = "%tid." + "xyz"[axis]
    h = _semantic.builder.create_inline_asm(
        f"mov.u32 $0, {reg};", "=r", [], [gl.int32.to_ir(_semantic.builder)], True, 1
    )
    return glc.tensor(h.get_result(0), gl.int32)


@builtin
def clock64(_semantic=None, _generator=None):
    """The SM's 64-bit cycle counter."""
    h = _semantic.builder.create_inline_asm(
        "mov.u64 $0, %clock64;", "=l", [], [gl.int64.to_ir(_semantic.builder)], False, 1
    )
    return glc.tensor(h.get_result(0), gl.int64)


@builtin
def fence_async_shared(_semantic=None, _generator=None):
    """Order this thread's shared-memory writes before later asynchronous-proxy reads (TMA, wgmma)."""
    _hopper.fence_async_shared(_semantic=_semantic)


@triton.jit
def get_bufidx_phase(counter, num_buffers: tl.constexpr):
    """(slot index, phase bit) of a running ``counter`` over a ring of ``num_buffers`` slots."""
    return counter % num_buffers, (counter // num_buffers) & 1


def total_smem(records: Sequence[S.BufferRecord]) -> int:
    return int(math.fsum(r.nbytes for r in records))
