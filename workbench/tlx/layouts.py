"""Layout inference rules of the TLX lowering.

The author writes no layouts; these functions pick one for every tensor and buffer:

- register tensors: a blocked layout for the task's warp count that does not depend on the
  tensor's shape (so ``offs_m[:, None] + offs_n[None, :]`` needs no conversion);
- accumulators of ``async_dot``: the wgmma (NVMMA v3) layout for the task's warps;
- register ``a`` operands of ``async_dot``: the matching dot-operand layout;
- cp.async address tensors: a 16-byte-vectorised copy layout;
- buffers of rank >= 2: the NVMMA shared layout that TMA and wgmma both read; host descriptors
  get theirs from the same function (:func:`nvmma_shared_for`), so the two cannot disagree;
- other buffers (rank 1) and mbarriers: a plain swizzled layout.
"""

from __future__ import annotations

import functools
import math

from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import mbarrier as _mbarrier

WARP_SIZE = 32


def _pow2_floor(x: int) -> int:
    return 1 << (max(int(x), 1).bit_length() - 1)


def default_blocked(rank: int, num_warps: int) -> gl.BlockedLayout:
    """The shape-independent default register layout for a tensor of ``rank`` dims on ``num_warps``."""
    if rank == 1:
        return gl.BlockedLayout([4], [WARP_SIZE], [num_warps], [0])
    spt = [1] * rank
    spt[-1] = 8
    tpw = [1] * rank
    tpw[-1] = 8
    tpw[-2] = WARP_SIZE // 8
    wpc = [1] * rank
    wpc[-2] = num_warps
    order = list(range(rank - 1, -1, -1))
    return gl.BlockedLayout(spt, tpw, wpc, order)


def slice_of_default(dim: int, rank: int, num_warps: int) -> gl.SliceLayout:
    """Layout of a 1-D tensor that ``expand_dims(x, dim)`` turns into the default ``rank``-D layout."""
    return gl.SliceLayout(dim, default_blocked(rank, num_warps))


def copy_layout(shape: list[int], elem_bits: int, num_warps: int) -> gl.BlockedLayout:
    """A layout for cp.async address tensors: 16 bytes per thread along the contiguous dim."""
    rank = len(shape)
    vec = max(1, 128 // max(elem_bits, 8))
    vec = min(vec, _pow2_floor(shape[-1]))
    spt = [1] * rank
    spt[-1] = vec
    tpw = [1] * rank
    left = WARP_SIZE
    for d in range(rank - 1, -1, -1):
        per = max(1, shape[d] // spt[d]) if d == rank - 1 else max(1, shape[d])
        t = min(left, _pow2_floor(per))
        tpw[d] = t
        left //= t
    tpw[0] *= left
    wpc = [1] * rank
    wleft = num_warps
    for d in range(rank):
        cover = spt[d] * tpw[d]
        w = min(wleft, _pow2_floor(max(1, shape[d] // cover)))
        wpc[d] = w
        wleft //= w
    wpc[0] *= wleft
    return gl.BlockedLayout(spt, tpw, wpc, list(range(rank - 1, -1, -1)))


def wgmma_instr_n(n: int) -> int:
    """Largest wgmma N (a multiple of 8, at most 256) that divides ``n``."""
    for cand in range(min(256, n) // 8 * 8, 7, -8):
        if n % cand == 0:
            return cand
    return 8


def wgmma_layout(shape: list[int], num_warps: int, elem_bits: int = 16) -> gl.NVMMADistributedLayout:
    """The wgmma accumulator layout for an ``[M, N]`` accumulator on ``num_warps`` warps."""
    m, n = int(shape[0]), int(shape[1])
    if num_warps % 4:
        raise ValueError(f"async_dot needs a task of whole warpgroups (4, 8, ... warps), got {num_warps}")
    groups = num_warps // 4
    # Split warpgroups along M while M allows 64 rows per warpgroup, then along N.
    wm = 4
    while groups > 1 and m >= 16 * wm * 2:
        wm *= 2
        groups //= 2
    wn = groups
    k = 256 // max(elem_bits, 8)
    return gl.NVMMADistributedLayout(
        version=[3, 0], warps_per_cta=[wm, wn], instr_shape=[16, wgmma_instr_n(n // wn), k]
    )


def dot_operand_a(mma: gl.NVMMADistributedLayout, elem_bits: int) -> gl.DotOperandLayout:
    return gl.DotOperandLayout(operand_index=0, parent=mma, k_width=max(1, 32 // elem_bits))


def nvmma_shared_for(block_shape: list[int], dtype) -> gl.NVMMASharedLayout:
    """The one rule that picks both a buffer's and its host descriptor's NVMMA shared layout."""
    return _nvmma_shared_for(tuple(int(s) for s in block_shape), dtype)


@functools.lru_cache(maxsize=1024)
def _nvmma_shared_for(block_shape: tuple[int, ...], dtype) -> gl.NVMMASharedLayout:
    # memoised: every launch converts its host descriptors, and get_default_for costs ~20 us
    # (the layout is a frozen dataclass, so sharing one instance is safe)
    return gl.NVMMASharedLayout.get_default_for(list(block_shape), dtype)


def buffer_layout(shape: list[int], dtype):
    """Layout of one buffer of ``shape`` (without the leading buffer-count dim)."""
    if len(shape) >= 2 and dtype.primitive_bitwidth in (8, 16, 32):
        return nvmma_shared_for(shape, dtype)
    return gl.SwizzledSharedLayout(1, 1, 1, list(range(len(shape) - 1, -1, -1)))


def barrier_layout():
    return _mbarrier.MBarrierLayout()


# --- priorities for resolving two different layouts meeting in one op -------------------------


def _is_mma_family(layout) -> bool:
    while isinstance(layout, gl.SliceLayout):
        layout = layout.parent
    return isinstance(layout, (gl.NVMMADistributedLayout, gl.DotOperandLayout))


def priority(layout, num_warps: int) -> int:
    """Higher wins when two operands disagree: wgmma family > user/other layouts > defaults."""
    if _is_mma_family(layout):
        return 3
    rank = None
    if isinstance(layout, gl.BlockedLayout):
        rank = len(layout.size_per_thread)
        if layout == default_blocked(rank, num_warps):
            return 1
    if isinstance(layout, gl.SliceLayout) and isinstance(layout.parent, gl.BlockedLayout):
        prank = len(layout.parent.size_per_thread)
        if layout.parent == default_blocked(prank, num_warps):
            return 1
    return 2


def describe(layout) -> str:
    """Gluon form of a layout, as a user would write it."""
    if isinstance(layout, gl.BlockedLayout):
        return (
            f"gl.BlockedLayout(size_per_thread={list(layout.size_per_thread)}, "
            f"threads_per_warp={list(layout.threads_per_warp)}, "
            f"warps_per_cta={list(layout.warps_per_cta)}, order={list(layout.order)})"
        )
    if isinstance(layout, gl.SliceLayout):
        return f"gl.SliceLayout(dim={layout.dim}, parent={describe(layout.parent)})"
    if isinstance(layout, gl.NVMMADistributedLayout):
        return (
            f"gl.NVMMADistributedLayout(version={list(layout.version)}, "
            f"warps_per_cta={list(layout.warps_per_cta)}, instr_shape={list(layout.instr_shape)})"
        )
    if isinstance(layout, gl.DotOperandLayout):
        return (
            f"gl.DotOperandLayout(operand_index={layout.operand_index}, "
            f"parent={describe(layout.parent)}, k_width={layout.k_width})"
        )
    if isinstance(layout, gl.NVMMASharedLayout):
        return (
            f"gl.NVMMASharedLayout(swizzle_byte_width={layout.swizzle_byte_width}, "
            f"element_bitwidth={layout.element_bitwidth}, rank={layout.rank}, "
            f"transposed={layout.transposed})"
        )
    if isinstance(layout, gl.SwizzledSharedLayout):
        name = "MBarrierLayout" if type(layout).__name__ == "MBarrierLayout" else "gl.SwizzledSharedLayout"
        if name == "MBarrierLayout":
            return "mbarrier.MBarrierLayout()"
        return (
            f"{name}(vec={layout.vec}, per_phase={layout.per_phase}, max_phase={layout.max_phase}, "
            f"order={list(layout.order)})"
        )
    return repr(layout)


def nbytes(shape: list[int], dtype) -> int:
    return math.prod(int(s) for s in shape) * dtype.primitive_bitwidth // 8
