"""Out-of-bounds loads and stores in Triton's interpreter, caught before they touch memory.

The interpreter turns ``tl.load``/``tl.store`` (and atomics) into raw reads and writes at the addresses the
kernel computed: an unmasked access past a tensor's end corrupts the notebook's heap (seen: "malloc(): smallbin
double linked list corrupted", the Jupyter kernel gone). ``checked`` wraps the interpreter builder's memory ops,
for one run, with a check of every address the mask lets through against the tensor it points into (the one
holding the access's lowest address, among the tensors the launch passed; its whole storage, since a view may
reach the rest of it, as on a GPU). The first violation raises ``OutOfBoundsError``
from inside the kernel's own ``tl.load``/``tl.store`` call, so the cell's traceback stops at that line; the
message names the tensor, the element range and the program.

The builder's methods are replaced on the instance for the length of the run and restored exactly after (this
is the one reach into the interpreter besides ``interpreter.py``'s ``create_dot``; ``tests/run/test_interpreter
_bounds.py`` pins the method names against the installed Triton).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from workbench.errors import WorkbenchError

__all__ = ["OutOfBoundsError", "Region", "at_line", "checked", "regions_of"]



class OutOfBoundsError(WorkbenchError):
    """A kernel run by the interpreter read or wrote outside every tensor it was given."""


@dataclass(frozen=True)
class Region:
    name: str
    start: int  # byte address of the storage
    nbytes: int
    itemsize: int
    numel: int  # of the argument tensor itself


def _tensors(name: str, v: Any) -> list[tuple[str, Any]]:
    if hasattr(v, "untyped_storage") and hasattr(v, "data_ptr"):
        return [(name, v)]
    base = getattr(v, "base", None)
    if base is not None and hasattr(v, "block_shape") and hasattr(base, "untyped_storage"):
        return [(f"{name}.base", base)]
    if isinstance(v, tuple | list):
        return [t for i, x in enumerate(v) for t in _tensors(f"{name}[{i}]", x)]
    return []


def regions_of(named: dict[str, Any]) -> list[Region] | None:
    """The memory each tensor argument may be accessed in; None when one is not on the CPU (the interpreter
    works on copies then, at addresses this cannot know)."""
    out = []
    for name, v in named.items():
        for label, t in _tensors(name, v):
            if t.device.type != "cpu":
                return None
            st = t.untyped_storage()
            out.append(Region(label, int(st.data_ptr()), int(st.nbytes()), int(t.element_size()), int(t.numel())))
    return out


def _describe(op: str, addrs: Any, elem: int, regions: list[Region], program: Any) -> str:
    import numpy as np

    first = int(addrs[0])
    below = [r for r in regions if r.start <= first]
    r = max(below, key=lambda r: r.start) if below else min(regions, key=lambda r: r.start) if regions else None
    where = f" of program {tuple(int(x) for x in program)}" if program is not None else ""
    n = int(addrs.size)
    if r is None:
        return f"{op} at {n} address(es){where} outside every tensor argument (the kernel was given none)"
    idx = (addrs.astype(np.int64) - r.start) // max(r.itemsize, 1)
    lo, hi = int(idx.min()), int(idx.max())
    span = f"element {lo}" if lo == hi else f"elements {lo}..{hi}"
    return (f"{op} out of bounds of `{r.name}` ({r.numel} elements, {r.nbytes // max(r.itemsize, 1)} in its "
            f"storage): {n} lane(s){where} reach {span}")


def _check(op: str, ptrs: Any, mask: Any, regions: list[Region], builder: Any) -> None:
    import numpy as np

    addrs = np.asarray(ptrs.data, dtype=np.uint64)
    elem = max(int(ptrs.get_element_ty().primitive_bitwidth) // 8, 1)
    if mask is not None:
        addrs = addrs[np.broadcast_to(np.asarray(mask.data, dtype=bool), addrs.shape)]
    else:
        addrs = addrs.reshape(-1)
    if addrs.size == 0:
        return
    # the lanes of one access point into one tensor (a pointer is its base plus offsets): the one holding the
    # lowest address. Checked against that tensor alone, a lane past its end that lands in the next allocation
    # is caught too.
    low = int(addrs.min())
    home = [r for r in regions if r.start <= low < r.start + r.nbytes]
    if home:
        r = home[0]
        inside = (addrs >= r.start) & (addrs + elem <= r.start + r.nbytes)
        if inside.all():
            return
        bad = addrs[~inside]
        regions = [r]
    else:
        bad = addrs
    raise OutOfBoundsError(
        _describe(op, bad, elem, regions, getattr(builder, "grid_idx", None)),
        hint="mask the access (tl.load(p, mask=offs < n), tl.store(p, v, mask=offs < n)) or launch fewer programs; "
             "on a GPU it would read garbage or fault (--sanitize memcheck finds it there)")


# method -> (what the user wrote, the names of its pointer and mask parameters)
_OPS = {"create_masked_load": ("tl.load", "ptrs", "mask"), "create_masked_store": ("tl.store", "ptrs", "mask"),
        "create_atomic_cas": ("tl.atomic_cas", "ptr", None), "create_atomic_rmw": ("an atomic", "ptr", "mask")}


def _wrap(builder: Any, name: str, regions: list[Region]) -> Any:
    import inspect

    orig = getattr(builder, name)
    sig = inspect.signature(orig)
    op, ptr_name, mask_name = _OPS[name]

    def checked_op(*args, **kwargs):
        given = sig.bind_partial(*args, **kwargs).arguments
        _check(op, given[ptr_name], given.get(mask_name) if mask_name else None, regions, builder)
        return orig(*args, **kwargs)

    return checked_op


@contextlib.contextmanager
def checked(builder: Any, regions: list[Region] | None) -> Iterator[None]:
    """Every memory op of ``builder`` checked against ``regions`` inside the block (nothing when None)."""
    if regions is None:
        yield
        return
    had = {n: n in vars(builder) for n in _OPS}
    saved = {n: vars(builder).get(n) for n in _OPS}
    for n in _OPS:
        setattr(builder, n, _wrap(builder, n, regions))
    try:
        yield
    finally:
        for n in _OPS:
            if had[n]:
                setattr(builder, n, saved[n])
            else:
                delattr(builder, n)


def at_line(err: OutOfBoundsError, filename: str) -> OutOfBoundsError:
    """``err`` located at the innermost line of ``filename`` (the kernel's file or cell) in its traceback."""
    import linecache

    tb, line = err.__traceback__, None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == filename:
            line = tb.tb_lineno
        tb = tb.tb_next
    if line is not None:
        err.filename, err.lineno = filename, line
        err.source_line = linecache.getline(filename, line) or None
        err.args = (err._format(),)
    return err
