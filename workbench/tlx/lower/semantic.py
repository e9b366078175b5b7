"""``TLXSemantic``: Gluon's semantic with Triton-like implicit layouts (no layout written by the author)."""

from __future__ import annotations

from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language import _core as glc
from triton.experimental.gluon.language._semantic import GluonSemantic

from workbench.tlx import layouts as L


def _is_dist(x) -> bool:
    return isinstance(x, glc.tensor) and isinstance(x.type, glc.distributed_type)


class TLXSemantic(GluonSemantic):
    """Picks default layouts where Gluon would demand one and converts where two layouts meet."""

    _gen = None  # the CodeGenerator this semantic serves
    _acc_hint: int | None = None  # set while tracing `acc = tl.zeros(...)` for an async_dot accumulator

    # -- context -----------------------------------------------------------------------------
    def cur_warps(self) -> int:
        gen = self._gen
        ctx = getattr(gen, "caller_context", None) if gen is not None else None
        if ctx is not None and hasattr(ctx, "num_warps"):
            return int(ctx.num_warps)
        return int(self.builder.options.num_warps)

    def _line(self) -> int | None:
        gen = self._gen
        node = getattr(gen, "cur_node", None)
        if gen is None or node is None or not hasattr(node, "lineno"):
            return None
        return gen.begin_line + node.lineno

    def convert_to(self, value, layout):
        if not _is_dist(value) or value.type.layout == layout:
            return value
        out = self.convert_layout(value, layout)
        return out

    # -- tensor creation -----------------------------------------------------------------------
    def arange(self, start, end, layout=None):
        if layout is None:
            layout = L.default_blocked(1, self.cur_warps())
        return super().arange(start, end, layout)

    def full(self, shape, value, dtype, layout=None):
        shape = [glc._unwrap_if_constexpr(s) for s in shape]
        if layout is None and self._acc_hint is not None and len(shape) == 2:
            layout = L.wgmma_layout(shape, self.cur_warps(), 16)
            t = super().full(shape, value, dtype, layout)
            t._tlx_reason = (
                f"accumulator of async_dot at line {self._acc_hint}: wgmma layout for {self.cur_warps()} warps"
            )
            return t
        if layout is None:
            layout = L.default_blocked(len(shape), self.cur_warps())
        return super().full(shape, value, dtype, layout)

    def splat(self, value, shape, layout=None):
        if layout is None and len(shape) > 0:
            layout = L.default_blocked(len(shape), self.cur_warps())
        return super().splat(value, shape, layout)

    # -- where layouts meet ----------------------------------------------------------------------
    def _unify(self, lhs, rhs):
        """Convert the lower-priority side so both operands share one layout."""
        ll, rl = lhs.type.layout, rhs.type.layout
        if ll == rl or isinstance(ll, gl.AutoLayout) or isinstance(rl, gl.AutoLayout):
            return lhs, rhs
        nw = self.cur_warps()
        if L.priority(rl, nw) > L.priority(ll, nw):
            return self.convert_layout(lhs, rl), rhs
        return lhs, self.convert_layout(rhs, ll)

    def broadcast_impl_value(self, lhs, rhs):
        if _is_dist(lhs) and _is_dist(rhs) and len(lhs.shape) == len(rhs.shape):
            lhs, rhs = self._unify(lhs, rhs)
        return super().broadcast_impl_value(lhs, rhs)

    def expand_dims(self, input, axis):
        if _is_dist(input):
            rank = len(input.shape)
            ax = axis + rank + 1 if axis < 0 else axis
            lay = input.type.layout
            if not (isinstance(lay, gl.SliceLayout) and lay.dim == ax) and not isinstance(lay, gl.AutoLayout):
                input = self.convert_layout(input, L.slice_of_default(ax, rank + 1, self.cur_warps()))
        return super().expand_dims(input, axis)

    def store(self, ptr, val, mask, boundary_check, cache_modifier, eviction_policy):
        if _is_dist(ptr):
            if _is_dist(val) and len(val.shape) == len(ptr.shape):
                val = self.convert_to(val, ptr.type.layout)
            if _is_dist(mask) and len(mask.shape) == len(ptr.shape):
                mask = self.convert_to(mask, ptr.type.layout)
        return super().store(ptr, val, mask, boundary_check, cache_modifier, eviction_policy)

    def reduction(self, inputs, axis, region_builder_fn):
        inputs = list(inputs)
        if len(inputs) > 1 and all(_is_dist(x) for x in inputs):
            first = inputs[0].type.layout
            inputs = [self.convert_to(x, first) for x in inputs]
        return super().reduction(inputs, axis, region_builder_fn)

    def associative_scan(self, inputs, axis, region_builder_fn, reverse):
        inputs = list(inputs)
        if len(inputs) > 1 and all(_is_dist(x) for x in inputs):
            first = inputs[0].type.layout
            inputs = [self.convert_to(x, first) for x in inputs]
        return super().associative_scan(inputs, axis, region_builder_fn, reverse)
