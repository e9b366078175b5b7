"""Plain ``@triton.jit`` kernels on CPU tensors, run by Triton's interpreter (no GPU needed)."""

from __future__ import annotations

from typing import Any

from workbench.compile.tuners import base_jit


def interpret(kernel: Any, args: tuple, kwargs: dict[str, Any], grid: Any) -> None:
    """Run a plain ``@triton.jit`` kernel on CPU tensors with Triton's interpreter."""
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    base = base_jit(kernel)
    fn = base.fn
    helpers: dict[Any, InterpretedFunction] = {}
    orig_call = JITFunction.__call__

    def call(self, *a, **k):  # device-function calls made by the kernel
        f = helpers.get(self.fn)
        if f is None:
            f = helpers[self.fn] = InterpretedFunction(self.fn)
        return f(*a, **k)

    # The interpreter rewrites functions into their own __globals__ and adds its module's globals there;
    # take those out again so the user's namespace is left as it was.
    globs = [fn.__globals__]
    before = {id(g): set(g) for g in globs}
    JITFunction.__call__ = call
    try:
        InterpretedFunction(fn).run(*args, grid=grid, warmup=False, **kwargs)
    finally:
        JITFunction.__call__ = orig_call
        for g in [fn.__globals__] + [h.fn.__globals__ for h in helpers.values()]:
            keep = before.get(id(g))
            if keep is None:
                continue
            for name in set(g) - keep:
                del g[name]
        for f in [fn] + list(helpers):
            InterpretedFunction.rewritten_fn.pop(f, None)
