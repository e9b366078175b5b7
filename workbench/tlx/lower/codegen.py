"""TLX constructs handled inside Triton's code generator while it traces (active only during a TLX lowering).

- ``with tlx.async_tasks():`` becomes one ``ttg.warp_specialize`` op: the default task is emitted inline
  into its default region, every worker task (and each replica) into a partition region whose block
  arguments are the values the task reads (found by free-variable analysis);
- loop-carried values whose layout the loop body changes are converted before the loop;
- ``acc = tl.zeros(...)`` where ``acc`` feeds ``tlx.async_dot`` gets the wgmma layout directly;
- every assignment of a tensor or buffer is recorded for the layout report;
- ``tl.*`` calls the lowering cannot do are reported by name.
"""

from __future__ import annotations

import ast
import functools
import threading

import triton.language as tl
from triton import knobs
from triton.compiler import code_generator as cg
from triton.compiler.errors import CompilationError
from triton.experimental.gluon.language import _core as glc
from triton.experimental.gluon.language._semantic import GluonCallerContext
from triton.experimental.gluon.language.nvidia.hopper import warpgroup_mma_accumulator

from workbench.tlx import api
from workbench.tlx import layouts as L
from workbench.tlx.diagnostics import TLXError, error, where
from workbench.tlx.lower import state as S
from workbench.tlx.lower import timeline as T
from workbench.tlx.lower.semantic import TLXSemantic

CG = cg.CodeGenerator
_ORIG: dict[str, object] = {}
_lock = threading.Lock()
MAX_WARPS = 32  # 1024 threads per CTA


def _active() -> bool:
    return S.current() is not None


_TTGIR_CACHE: dict[str, str] = {}


def _layout_ttgir(handle, layout) -> str:
    key = repr(layout)
    got = _TTGIR_CACHE.get(key)
    if got is None:
        got = _TTGIR_CACHE[key] = _tensor_ttgir(handle)
    return got


def _tensor_ttgir(handle) -> str:
    """The layout attribute of a value's type, as TTGIR prints it (``#ttg.blocked<{...}>``)."""
    try:
        text = str(handle.get_type())
    except Exception:  # pragma: no cover - binding without __str__
        return ""
    start = text.find("#ttg.")
    if start < 0:
        return text
    depth = 0
    for i in range(start, len(text)):
        c = text[i]
        if c in "<{[(":
            depth += 1
        elif c in ">}])":
            depth -= 1
            if depth == 0:
                return text[start : i + 1]
    return text[start:]


# ----------------------------------------------------------------------------------------------
# analysis helpers (cached per function AST)
# ----------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=256)
def _acc_names_cached(src: str) -> dict[str, int]:
    """Names passed as the accumulator of ``*.async_dot`` -> the (relative) line of that call."""
    out: dict[str, int] = {}
    try:
        tree = ast.parse(src)
    except SyntaxError:
        return out
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "async_dot":
            acc = (
                node.args[2]
                if len(node.args) > 2
                else next((k.value for k in node.keywords if k.arg in ("acc", "C")), None)
            )
            if isinstance(acc, ast.Name):
                out.setdefault(acc.id, node.lineno)
    return out


def _loaded_names(stmts) -> list[str]:
    seen: dict[str, None] = {}
    for st in stmts:
        for node in ast.walk(st):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                seen.setdefault(node.id, None)
    return list(seen)


def _first_load(stmts, name: str):
    for st in stmts:
        for node in ast.walk(st):
            if isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Load):
                return node
    return None


def _stored_names(stmts) -> set[str]:
    out: set[str] = set()
    for st in stmts:
        for node in ast.walk(st):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                out.add(node.id)
    return out


_WORKER_NAMES: dict[tuple, tuple[list[str], set[str]]] = {}


def _worker_names(src: str, bodies: list) -> tuple[list[str], set[str]]:
    """(names the worker tasks read, names they assign), memoised per kernel source and task position
    (Triton parses the source afresh for every trace, so the AST nodes themselves are new each time)."""
    key = (src, tuple((b.lineno, b.col_offset) for b in bodies))
    got = _WORKER_NAMES.get(key)
    if got is None:
        if len(_WORKER_NAMES) > 256:
            _WORKER_NAMES.clear()
        got = _WORKER_NAMES[key] = (_loaded_names(bodies), _stored_names(bodies))
    return got


# ----------------------------------------------------------------------------------------------
# patched CodeGenerator methods
# ----------------------------------------------------------------------------------------------


def _init(self, *args, **kwargs):
    _ORIG["__init__"](self, *args, **kwargs)
    if _active() and self.is_gluon:
        sem = TLXSemantic(self.builder)
        sem._gen = self
        self.semantic = sem
        st = S.current()
        if st.root_generator is None:
            st.root_generator = self


def _lean_visit(self, node):
    """Triton's CodeGenerator.visit without its per-node warnings.catch_warnings() (the TLX trace is hot)."""
    if node is None:
        return None
    last_node = self.cur_node
    last_loc = self.builder.get_loc()
    self.cur_node = node
    if hasattr(node, "lineno") and hasattr(node, "col_offset"):
        here_loc = self.builder.create_loc(self.file_name, self.begin_line + node.lineno, node.col_offset)
        if self.name_loc_as_prefix is not None:
            self.builder.set_loc(self.builder.create_name_loc(self.name_loc_as_prefix, here_loc))
        else:
            self.builder.set_loc(here_loc)
        last_loc = self.builder.get_loc()
    try:
        ret = ast.NodeVisitor.visit(self, node)
    except CompilationError:
        raise
    except Exception as e:
        if knobs.compilation.front_end_debugging:
            raise
        raise CompilationError(self.jit_fn.src, self.cur_node, repr(e)) from None
    if last_loc:
        self.cur_node = last_node
        self.builder.set_loc(last_loc)
    return ret


def _visit(self, node):
    try:
        if _active():
            return _lean_visit(self, node)
        return _ORIG["visit"](self, node)
    except TLXError:
        raise
    except CompilationError as e:
        if _active() and getattr(e, "_tlx_where", None) is None:
            inner = e.__cause__
            if isinstance(inner, TLXError):
                # Unlink the wrapper first: raising ``inner`` here makes it the wrapper's context, and a
                # wrapper that still pointed back at it would close a cycle in the exception chain (Triton's
                # filter_traceback, which walks the chain of a failed compile, would recurse forever).
                e.__cause__ = e.__context__ = None
                raise inner from None
            e._tlx_where = where(self, self.cur_node)
        raise


def _get_attribute(self, lhs, attr):
    if _active():
        if getattr(lhs, "__name__", None) == "triton.language" and attr in _TL_OVERRIDES:
            return _TL_OVERRIDES[attr]
    return _ORIG["get_Attribute"](self, lhs, attr)


def _set_value(self, name, value):
    _ORIG["set_value"](self, name, value)
    st = S.current()
    if st is None or not isinstance(self.cur_node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        return
    if not hasattr(self.cur_node, "lineno"):
        return
    line = self.begin_line + self.cur_node.lineno
    if isinstance(value, glc.shared_memory_descriptor):
        rec = getattr(value, "_tlx_buf", None)
        if rec is not None and rec.name is None and getattr(value, "_tlx_count", None) is not None:
            rec.name = name
            rec.ttgir = _tensor_ttgir(value.handle)
        return
    if isinstance(value, warpgroup_mma_accumulator):
        ty = value.type.tensor_type
    elif isinstance(value, glc.tensor) and isinstance(value.type, glc.distributed_type):
        ty = value.type
    else:
        return
    reason = getattr(value, "_tlx_reason", None) or _default_reason(ty.layout, self.semantic)
    st.record_value(
        S.ValueRecord(
            name=name,
            line=line,
            shape=[int(s) for s in ty.shape],
            dtype=str(ty.element_ty),
            layout=ty.layout,
            ttgir=_layout_ttgir(value.handle, ty.layout),
            reason=reason,
        )
    )


def _default_reason(layout, sem) -> str:
    import triton.experimental.gluon.language as gl

    nw = sem.cur_warps() if isinstance(sem, TLXSemantic) else None
    if isinstance(layout, gl.NVMMADistributedLayout):
        return "wgmma layout, inherited from an async_dot accumulator"
    if isinstance(layout, gl.DotOperandLayout):
        return "wgmma register operand layout"
    if isinstance(layout, gl.SliceLayout):
        parent = layout.parent  # a linear parent (from reshape/permute/split) has no warps_per_cta
        blocked = isinstance(parent, gl.BlockedLayout)
        if nw is not None and blocked and parent == L.default_blocked(len(parent.warps_per_cta), nw):
            return (
                f"slice {layout.dim} of the default {len(layout.parent.warps_per_cta)}-D layout, so that "
                "expand_dims gives the default layout without a conversion"
            )
        return f"slice {layout.dim} of its parent's layout (from a reduction or expand_dims)"
    if isinstance(layout, gl.BlockedLayout):
        rank = len(layout.warps_per_cta)
        if nw is not None and layout == L.default_blocked(rank, nw):
            return f"default coalesced blocked layout for a {rank}-D tensor on {nw} warps"
        return "blocked layout inherited from its operands (cp.async copy layout or layout=)"
    return "inherited from its operands"


def _visit_assign(self, node):
    sem = self.semantic
    if _active() and isinstance(sem, TLXSemantic):
        targets = [node.target] if isinstance(node, ast.AnnAssign) else node.targets
        if len(targets) == 1 and isinstance(targets[0], ast.Name):
            accs = _acc_names_cached(self.jit_fn.src)
            if targets[0].id in accs:
                prev = sem._acc_hint
                sem._acc_hint = self.begin_line + accs[targets[0].id]
                try:
                    return _ORIG["visit_Assign"](self, node)
                finally:
                    sem._acc_hint = prev
    return _ORIG["visit_Assign"](self, node)


def _verify_loop_carried(self, name, loop_val, live_val):
    if (
        _active()
        and isinstance(loop_val, glc.tensor)
        and isinstance(live_val, glc.tensor)
        and isinstance(loop_val.type, glc.distributed_type)
        and isinstance(live_val.type, glc.distributed_type)
        and loop_val.type != live_val.type
        and list(loop_val.shape) == list(live_val.shape)
        and loop_val.dtype == live_val.dtype
    ):
        mism = getattr(self, "_tlx_carry_mismatch", None)
        if mism is not None:
            mism[name] = loop_val.type.layout
            return
    return _ORIG["_verify_loop_carried_variable"](self, name, loop_val, live_val)


def _find_carries(self, node, liveins, ignore=frozenset()):
    if not _active():
        return _ORIG["_find_carries"](self, node, liveins, ignore)
    ip, loc = self._get_insertion_point_and_loc()
    for _attempt in range(4):
        self._tlx_carry_mismatch = {}
        try:
            res = _ORIG["_find_carries"](self, node, liveins, set(ignore))
        finally:
            mism, self._tlx_carry_mismatch = self._tlx_carry_mismatch, None
        if not mism:
            return res
        # Convert the initial values to the layout the loop body gives them, then trace again.
        self._set_insertion_point_and_loc(ip, loc)
        for name, layout in mism.items():
            conv = self.semantic.convert_layout(liveins[name], layout)
            conv._tlx_reason = (
                f"converted before the loop at line {self.begin_line + node.lineno} to the layout "
                "the loop body gives it"
            )
            liveins[name] = conv
        self.lscope = liveins.copy()
        self.local_defs = {}
    raise error(self, "a loop-carried value keeps changing layout inside the loop", rule="unsupported", node=node)


# ----------------------------------------------------------------------------------------------
# with tlx.async_tasks()
# ----------------------------------------------------------------------------------------------


def _context_fn(self, item):
    call = item.context_expr
    if not isinstance(call, ast.Call):
        return None
    try:
        fn = self.visit(call.func)
    except Exception:
        return None
    return glc._unwrap_if_constexpr(fn)


def _visit_with(self, node):
    if not _active():
        return _ORIG["visit_With"](self, node)
    if len(node.items) == 1:
        fn = _context_fn(self, node.items[0])
        if fn is api.async_tasks:
            return _lower_async_tasks(self, node)
        if fn is api.async_task:
            raise error(
                self,
                "tlx.async_task(...) is only allowed directly inside `with tlx.async_tasks():`",
                "wrap the task blocks in `with tlx.async_tasks():`",
                rule="task-outside",
                node=node,
            )
    return _ORIG["visit_With"](self, node)


class _Task:
    def __init__(self, stmt, default, num_warps, num_regs, replicate, line, name=None):
        self.name = name
        self.stmt = stmt
        self.default = default
        self.num_warps = num_warps
        self.num_regs = num_regs
        self.replicate = replicate
        self.line = line


def _parse_task(self, stmt) -> _Task:
    call = stmt.items[0].context_expr
    args = [glc._unwrap_if_constexpr(self.visit(a)) for a in call.args]
    kws = {k.arg: glc._unwrap_if_constexpr(self.visit(k.value)) for k in call.keywords}
    line = self.begin_line + stmt.lineno
    default = False
    if args:
        if args == ["default"]:
            default = True
        else:
            raise error(
                self,
                f'tlx.async_task{tuple(args)}: only the form async_task("default") or '
                "async_task(num_warps=N, num_regs=R, replicate=K) is supported",
                'name the trunk task "default" and give other tasks num_warps=',
                rule="unsupported",
                node=stmt,
            )
    unknown = set(kws) - {"num_warps", "num_regs", "registers", "replicate", "warp_group_start_id", "name"}
    if unknown:
        raise error(self, f"tlx.async_task: unknown keyword(s) {sorted(unknown)}", rule="unsupported", node=stmt)
    regs = kws.get("num_regs", kws.get("registers"))
    nw = kws.get("num_warps")
    rep = kws.get("replicate")
    if default:
        nw = self.builder.options.num_warps
    elif nw is None:
        raise error(self, "tlx.async_task: a non-default task needs num_warps=N", rule="task", node=stmt)
    for what, v in (("num_warps", nw), ("replicate", rep), ("num_regs", regs)):
        if v is not None and (not isinstance(v, int) or v < 1):
            raise error(
                self,
                f"tlx.async_task: {what} must be a positive compile-time int, got {v!r}",
                rule="task",
                node=stmt,
            )
    if regs is not None and (regs % 8 or not 24 <= regs <= 256):
        raise error(
            self,
            f"tlx.async_task: num_regs={regs} is not a valid register budget",
            "use a multiple of 8 between 24 and 256 (setmaxnreg's range)",
            rule="task",
            node=stmt,
        )
    if rep is not None and default and rep != 1:
        raise error(self, 'tlx.async_task("default") cannot be replicated', rule="task", node=stmt)
    name = kws.get("name")
    if name is not None and (not isinstance(name, str) or not name.isidentifier()):
        raise error(
            self,
            f"tlx.async_task: name= must be a Python identifier string (a role name), got {name!r}",
            'use a name such as name="producer"',
            rule="task",
            node=stmt,
        )
    return _Task(stmt, default, int(nw), regs, rep, line, name)


def _lower_async_tasks(self, node):
    st = S.current()
    if st.tasks:
        raise error(self, "tlx.async_tasks() regions cannot be nested", rule="task", node=node)
    tasks: list[_Task] = []
    for stmt in node.body:
        if isinstance(stmt, ast.Pass) or (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant)):
            continue
        fn = _context_fn(self, stmt.items[0]) if isinstance(stmt, ast.With) and len(stmt.items) == 1 else None
        if fn is not api.async_task:
            raise error(
                self,
                "only `with tlx.async_task(...)` blocks may appear directly inside `with tlx.async_tasks():`",
                "move this statement into one of the tasks (or before the region)",
                rule="task",
                node=stmt,
            )
        tasks.append(_parse_task(self, stmt))
    defaults = [t for t in tasks if t.default]
    if len(defaults) > 1:
        raise error(
            self,
            'more than one async_task("default") in one async_tasks region',
            rule="task",
            node=defaults[1].stmt,
        )
    default = defaults[0] if defaults else None
    index = {id(t): i + 1 for i, t in enumerate(t for t in tasks if not t.default)}
    workers = [
        (t, (r if t.replicate is not None else None)) for t in tasks if not t.default for r in range(t.replicate or 1)
    ]
    base = int(self.builder.options.num_warps)
    total = base + sum(t.num_warps for t, _ in workers)
    rounded = -(-total // 4) * 4
    if rounded > MAX_WARPS:
        parts = ", ".join(f"{t.num_warps} x{t.replicate or 1} (line {t.line})" for t in tasks if not t.default)
        raise error(
            self,
            f"the tasks need {total} warps ({base} default + {parts}), rounded up to {rounded}; a "
            f"CTA holds at most {MAX_WARPS} warps (1024 threads)",
            "lower num_warps of the kernel or of the tasks, or replicate less",
            rule="warps",
            node=node,
        )
    regs = [t.num_regs for t, _ in workers]
    if any(r is not None for r in regs) and any(r is None for r in regs):
        missing = next(t for t, _ in workers if t.num_regs is None)
        raise error(
            self,
            "give num_regs= to every non-default task or to none of them",
            "add num_regs= to this task",
            rule="task",
            node=missing.stmt,
        )

    # Values the workers read: kernel arguments and values computed before the region.
    names: list[str] = []
    worker_stmts = [t.stmt for t in tasks if not t.default]
    loaded, stored = _worker_names(self.jit_fn.src, [s for w in worker_stmts for s in w.body])
    hidden: set[str] = set()
    for n in loaded:
        v = self.lscope.get(n)
        if v is None or not cg._is_triton_value(v) or isinstance(v, glc.constexpr):
            continue
        if isinstance(v, glc.tensor) and v.type.is_block():
            if n in stored:
                hidden.add(n)
                continue
            raise error(
                self,
                f"a task reads the register tensor `{n}` computed before the async_tasks region; "
                "Gluon 3.6 cannot pass register tensors into a task",
                f"recompute `{n}` inside the task (or pass it through a shared buffer)",
                rule="capture",
                node=_first_load([b for w in worker_stmts for b in w.body], n) or node,
            )
        names.append(n)
    cap_vals = [self.lscope[n] for n in names]
    mlir_args = cg.flatten_values_to_ir(cap_vals)

    b = self.builder
    saved_scope, saved_defs, saved_ctx = self.lscope.copy(), self.local_defs.copy(), self.caller_context
    ws_op = b.create_warp_specialize([], mlir_args, [t.num_warps for t, _ in workers])
    if regs and all(r is not None for r in regs):
        ws_op.set_requested_registers([int(r) for r in regs])
    try:
        # Default task: inline in the default region.
        b.create_block_with_parent(ws_op.get_default_region(), [])
        if default is not None:
            role = T.role_name(default.name, True, 0, None)
            st.tasks.append(S.TaskCtx(num_warps=base, default=True, line=default.line, role=role))
            try:
                with T.scope(self.semantic, "task"):
                    self.visit_compound_statement(default.stmt.body)
            finally:
                st.tasks.pop()
            api.settle_all(self)
        b.create_warp_yield([])
        self.lscope, self.local_defs = saved_scope.copy(), saved_defs.copy()

        # Worker tasks: one partition per replica, reading the captured values as block arguments.
        b.create_block_with_parent(ws_op.get_partition_op_holder(), [])
        parts = b.create_warp_specialize_partitions(len(workers))
        arg_types = [a.get_type() for a in mlir_args]
        for i, (task, rid) in enumerate(workers):
            block = b.create_block_with_parent(parts.get_region(i), arg_types)
            block_args = [block.get_argument(j) for j in range(len(mlir_args))]
            vals = list(cg.unflatten_ir_values(block_args, [v.type for v in cap_vals]))
            scope = {k: v for k, v in saved_scope.items() if k not in hidden}
            for n, v, outer in zip(names, vals, cap_vals, strict=True):
                for attr in ("_tlx_buf", "_tlx_count", "_tlx_key"):
                    if hasattr(outer, attr):
                        setattr(v, attr, getattr(outer, attr))
                scope[n] = v
            self.lscope, self.local_defs = scope, {}
            self.caller_context = GluonCallerContext(num_warps=task.num_warps)
            role = T.role_name(task.name, False, index[id(task)], rid)
            st.tasks.append(S.TaskCtx(num_warps=task.num_warps, replica=rid, line=task.line, role=role))
            try:
                with T.scope(self.semantic, "task"):
                    self.visit_compound_statement(task.stmt.body)
            finally:
                st.tasks.pop()
                self.caller_context = saved_ctx
            api.settle_all(self)
            b.create_warp_return()
    finally:
        self.lscope, self.local_defs, self.caller_context = saved_scope, saved_defs, saved_ctx
        b.set_insertion_point_after(ws_op.get_operation())


# ----------------------------------------------------------------------------------------------
# tl.* calls with layout= support, and the ones the lowering cannot do
# ----------------------------------------------------------------------------------------------


def _unsupported_tl(name: str, hint: str):
    def fn(*args, _semantic=None, _generator=None, **kwargs):
        raise error(_generator, f"tl.{name} is not supported by the TLX lowering", hint, rule="unsupported")

    fn.__name__ = name
    return glc.builtin(fn)


@glc.builtin
def _tl_arange(start, end, layout=None, _semantic=None, _generator=None):
    start, end = glc._unwrap_if_constexpr(start), glc._unwrap_if_constexpr(end)
    t = _semantic.arange(start, end, glc._unwrap_if_constexpr(layout))
    if layout is not None:
        t._tlx_reason = f"layout= given at line {api._line(_generator)}"
    return t


@glc.builtin
def _tl_full(shape, value, dtype, layout=None, _semantic=None, _generator=None):
    shape = api._ints(shape, _generator, "tl.full shape")
    t = _semantic.full(
        shape,
        glc._unwrap_if_constexpr(value),
        glc._unwrap_if_constexpr(dtype),
        glc._unwrap_if_constexpr(layout),
    )
    if layout is not None:
        t._tlx_reason = f"layout= given at line {api._line(_generator)}"
    return t


@glc.builtin
def _tl_zeros(shape, dtype, layout=None, _semantic=None, _generator=None):
    return _tl_full(shape, 0, dtype, layout=layout, _semantic=_semantic, _generator=_generator)


@glc.builtin
def _tl_zeros_like(input, dtype=None, layout=None, _semantic=None, _generator=None):
    dtype = glc._unwrap_if_constexpr(dtype) or input.dtype
    layout = glc._unwrap_if_constexpr(layout) or input.type.layout
    return _semantic.full(list(input.shape), 0, dtype, layout)


@glc.builtin
def _tl_full_like(input, value, dtype=None, layout=None, _semantic=None, _generator=None):
    dtype = glc._unwrap_if_constexpr(dtype) or input.dtype
    layout = glc._unwrap_if_constexpr(layout) or input.type.layout
    return _semantic.full(list(input.shape), glc._unwrap_if_constexpr(value), dtype, layout)


_TL_OVERRIDES = {
    "arange": _tl_arange,
    "full": _tl_full,
    "zeros": _tl_zeros,
    "zeros_like": _tl_zeros_like,
    "full_like": _tl_full_like,
    "dot": _unsupported_tl("dot", "stage the operands in shared buffers and use tlx.async_dot + tlx.async_dot_wait"),
    "dot_scaled": _unsupported_tl("dot_scaled", "use tlx.async_dot"),
    "make_tensor_descriptor": _unsupported_tl(
        "make_tensor_descriptor",
        "build the descriptor on the host (triton.tools.tensor_descriptor.TensorDescriptor) and pass it in",
    ),
    "make_block_ptr": _unsupported_tl("make_block_ptr", "use a tensor of pointers or a host TensorDescriptor"),
    "atomic_cas": _unsupported_tl("atomic_cas", "use the other tl.atomic_* calls"),
}

# tl.* names whose Triton implementation works unchanged on the TLX semantic.
_ = tl


class _CachedInspect:
    """``inspect`` for code_generator.py with a memoised ``signature`` (called once per builtin call)."""

    def __init__(self, mod):
        self._mod = mod
        self._cache: dict = {}

    def signature(self, fn):
        key = (getattr(fn, "__func__", fn), hasattr(fn, "__self__"))
        try:
            return self._cache[key]
        except (KeyError, TypeError):
            pass
        sig = self._mod.signature(fn)
        try:
            self._cache[key] = sig
        except TypeError:
            pass
        return sig

    def __getattr__(self, name):
        return getattr(self._mod, name)


def install() -> None:
    """Patch Triton's CodeGenerator once; every patch is inert unless a TLX lowering is active."""
    with _lock:
        if _ORIG:
            return
        for name, new in (
            ("__init__", _init),
            ("visit", _visit),
            ("get_Attribute", _get_attribute),
            ("set_value", _set_value),
            ("visit_Assign", _visit_assign),
            ("_verify_loop_carried_variable", _verify_loop_carried),
            ("_find_carries", _find_carries),
            ("visit_With", _visit_with),
        ):
            _ORIG[name] = getattr(CG, name)
            setattr(CG, name, new)
        if not isinstance(cg.inspect, _CachedInspect):
            cg.inspect = _CachedInspect(cg.inspect)
