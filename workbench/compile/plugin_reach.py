"""The one place the workbench reaches inside triton-utlx (uTLX), pinned by ``tests/compile/test_plugin_reach.py``.

Once ``triton.language.extra.tlx`` is imported (as it always is in a ``%%tlx`` cell), uTLX
3.8.0.post16 on Triton 3.8 breaks every Gluon kernel in the process, twice:

1. With no ``TritonSemantic.make_tensor`` hook in Triton 3.8, uTLX patches ``tl.tensor.__init__`` to
   re-type every tensor whose IR type carries an encoding as its own layout-carrying block type. It
   means that for plain Triton tensors, but Gluon's tensors carry an encoding too and are typed
   ``distributed_type``: ``gl.arange(...) + 1`` then fails with "expected broadcast left input to be
   a distributed_type". The guard puts the Gluon type back after uTLX's ``__init__`` ran.
2. Its stages hook (``knobs.runtime.add_stages_inspection_hook``) adds a ``ttir`` stage whatever the
   language; a Gluon kernel has none (it starts at ``ttgir``), so the new stage lands after ``cubin``
   and is called with the binary. The chained hook calls uTLX's, then takes out a ``ttir`` stage that
   was not there before for Gluon kernels. It returns uTLX's cache key unchanged, so Triton's cache
   keys (and a JIT launch after a workbench compile being a cache hit) are as without it.
"""

from __future__ import annotations

from typing import Any


def repair_gluon() -> bool:
    """Install both repairs if uTLX installed what they repair (idempotent). True when they are on."""
    import triton.language.core as tl

    if not getattr(tl.tensor, "_utlx_encoding_shim", False):
        return False
    _guard_gluon_tensor_types(tl)
    _chain_stages_hook()
    return True


def _guard_gluon_tensor_types(tl: Any) -> None:
    if getattr(tl.tensor, "_workbench_gluon_guard", False):
        return
    from triton.experimental.gluon.language._core import distributed_type

    shimmed = tl.tensor.__init__

    def __init__(self, handle, type):  # noqa: A002 - Triton's own parameter name
        shimmed(self, handle, type)
        if isinstance(type, distributed_type):
            self.type = type

    tl.tensor.__init__ = __init__
    tl.tensor._workbench_gluon_guard = True


def _chain_stages_hook() -> None:
    from triton import knobs

    inner = knobs.runtime.add_stages_inspection_hook
    if inner is None or getattr(inner, "_workbench_chained", False):
        return

    def hook(self=None, stages=None, options=None, language=None, capability=None):
        if stages is None:  # the cache-key call: exactly uTLX's
            return inner()
        had_ttir = "ttir" in stages
        out = inner(self, stages, options, language, capability)
        if not had_ttir and getattr(language, "name", str(language)).upper().endswith("GLUON"):
            stages.pop("ttir", None)
        return out

    hook._workbench_chained = True
    hook.__wrapped__ = inner
    knobs.runtime.add_stages_inspection_hook = hook



def guard_local_alloc() -> bool:
    """``tlx.local_alloc`` of a shared-memory buffer with a dimension that is not a power of two: uTLX's C++
    (``utlx_local_alloc``) asserts while Triton generates TTIR and the process aborts (issue 25: the notebook's
    kernel died; seen with a 64x48 fp16 ring slot). The guard checks the shape first and raises, so Triton
    reports it at the kernel's line. Buffers with an explicit layout, aliases and tensor memory are passed on
    as they are. Installed once on the language module the kernels call (idempotent); True when installed."""
    import sys

    tlx = sys.modules.get("triton.language.extra.tlx")
    orig = getattr(tlx, "local_alloc", None) if tlx is not None else None
    if orig is None:
        return False
    if getattr(orig, "_workbench_shape_guard", False):
        return True
    import triton.language.core as tl

    @tl.builtin
    def local_alloc(shape, dtype, num, storage=None, layout=None, reuse=None, _semantic=None):
        items = tl._unwrap_if_constexpr(shape)
        dims = [tl._unwrap_if_constexpr(d) for d in (items if hasattr(items, "__iter__") else [items])]
        plain = layout is None and reuse is None and (storage is None or storage == tlx.storage_kind.smem)
        bad = [d for d in dims if isinstance(d, int) and (d <= 0 or d & (d - 1))]
        if plain and bad:
            raise ValueError(f"local_alloc{tuple(dims)}: every dimension of a shared-memory buffer must be a power "
                             f"of two (not {', '.join(map(str, bad))}); pick block sizes that are")
        kw = {k: v for k, v in (("storage", storage), ("layout", layout), ("reuse", reuse)) if v is not None}
        return orig(shape, dtype, num, **kw, _semantic=_semantic)

    local_alloc._workbench_shape_guard = True
    local_alloc.__doc__ = orig.__doc__
    tlx.local_alloc = local_alloc
    return True


def guard_clc() -> bool:
    """``tlx.clc_consumer`` (Blackwell cluster launch control) on stock Triton 3.8: the MLIR ops it lowers to
    (``ttng.async_clc_try_cancel``, ``ttng.clc_query_cancel``) exist only in Meta's TLX fork, so uTLX's builder
    prints "uTLX: ... is not registered in this Triton build" and hands back a null value; uTLX 3.8.0.post16 does not
    check it there (``utlx_plugin.dynamic_launch._clc_query``) and the next builder call that reads it takes the
    process down (a segmentation fault: Meta's ``blackwell_gemm_clc`` tutorial killed the notebook's kernel). The
    guard checks the handle as uTLX's own ``checked_handle`` does and raises, so the compile fails at the kernel's
    line. Idempotent; True when installed."""
    import sys

    mod = sys.modules.get("utlx_plugin.dynamic_launch")
    orig = getattr(mod, "_clc_query", None) if mod is not None else None
    if orig is None:
        return False
    if getattr(orig, "_workbench_null_guard", False):
        return True
    import triton.language.core as tl

    @tl.builtin
    def _clc_query(clc_response_addr, _semantic=None):
        out = orig(clc_response_addr, _semantic=_semantic)
        if out.handle.id() == 0:
            raise NotImplementedError(
                "tlx.clc_consumer: cluster launch control lowers to MLIR ops (ttng.clc_query_cancel, "
                "ttng.async_clc_try_cancel) that this Triton build does not register: they exist only in Meta's "
                "TLX fork (compiling on would crash the process)")
        return out

    _clc_query._workbench_null_guard = True
    _clc_query.__doc__ = orig.__doc__
    mod._clc_query = _clc_query
    return True
