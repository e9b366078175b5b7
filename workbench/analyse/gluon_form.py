"""Write a TTGIR layout attribute in the form a Gluon author would write it."""

from __future__ import annotations

from workbench.ir.artifact import DeclaredLayout


def gluon_form(decl: DeclaredLayout, declared: dict[str, DeclaredLayout] | None = None) -> str:
    p = decl.params
    declared = declared or {}

    def parent(ref) -> str:
        d = declared.get(str(ref))
        return gluon_form(d, declared) if d else str(ref)

    if decl.kind == "blocked":
        return (f"gl.BlockedLayout(size_per_thread={p.get('sizePerThread')}, "
                f"threads_per_warp={p.get('threadsPerWarp')}, warps_per_cta={p.get('warpsPerCTA')}, "
                f"order={p.get('order')})")
    if decl.kind == "nvidia_mma":
        return (f"gl.NVMMADistributedLayout(version=[{p.get('versionMajor')}, {p.get('versionMinor')}], "
                f"warps_per_cta={p.get('warpsPerCTA')}, instr_shape={p.get('instrShape')})")
    if decl.kind == "slice":
        return f"gl.SliceLayout({p.get('dim')}, {parent(p.get('parent'))})"
    if decl.kind == "dot_op":
        return (f"gl.DotOperandLayout(operand_index={p.get('opIdx')}, parent={parent(p.get('parent'))}, "
                f"k_width={p.get('kWidth')})")
    if decl.kind == "nvmma_shared":
        return (f"gl.NVMMASharedLayout(swizzle_byte_width={p.get('swizzlingByteWidth')}, "
                f"element_bitwidth={p.get('elementBitWidth')}, transposed={p.get('transposed', False)})")
    if decl.kind == "swizzled_shared":
        return (f"gl.SwizzledSharedLayout(vec={p.get('vec')}, per_phase={p.get('perPhase')}, "
                f"max_phase={p.get('maxPhase')}, order={p.get('order')})")
    if decl.kind == "shared_memory":
        return "shared memory space"
    if decl.kind == "linear" and "register" in p:  # the shape is its values' (the first use's: they share it)
        shape = decl.uses[0].shape if decl.uses else None
        return (f"gl.DistributedLinearLayout(reg_bases={p.get('register')}, lane_bases={p.get('lane')}, "
                f"warp_bases={p.get('warp')}, block_bases={p.get('block')}, shape={shape})")
    return decl.attr
