"""Compile-only inspection (no GPU): compile a :class:`~tlx_kernels.attention.common.Launch` for sm_90 with
``triton.compile`` and read what ptxas made of it (registers, spills, SASS instruction counts).

    >>> launch = ws_pingpong.prepare(q_cpu, k_cpu, v_cpu, causal=True)
    >>> facts = compile_facts(launch)            # ~2-6 s per kernel on a laptop CPU
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from dataclasses import dataclass, field

import triton
from triton.backends.compiler import GPUTarget

SM90 = GPUTarget("cuda", 90, 32)


def compile_launch(launch, target: GPUTarget = SM90):
    """``triton.compile`` of ``launch.kernel`` specialised for ``launch.args``/``kwargs`` (as the JIT would)."""
    from triton.compiler import ASTSource, make_backend
    from triton.runtime.jit import create_function_from_signature

    fn = launch.kernel
    backend = make_backend(target)
    binder = create_function_from_signature(fn.signature, fn.params, backend)
    kwargs = dict(launch.kwargs)
    kwargs.setdefault("debug", False)
    bound, spec, options = binder(*launch.args, **kwargs)
    options, signature, constexprs, attrs = fn._pack_args(backend, kwargs, bound, spec, options)
    return triton.compile(ASTSource(fn, signature, constexprs, attrs), target=target, options=options.__dict__)


def _tool(name: str) -> str:
    from triton import knobs

    return getattr(knobs.nvidia, name).path


def _with_cubin(cubin: bytes, args: list[str]) -> str:
    with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as f:
        f.write(cubin)
        path = f.name
    try:
        return subprocess.run(args + [path], capture_output=True, text=True, timeout=300, check=True).stdout
    finally:
        os.unlink(path)


def ptxas_warnings(ptx: str, arch: str = "sm_90a") -> list[str]:
    """ptxas's warnings and "Potential Performance Loss" notes for ``ptx`` (e.g. wgmma serialisation, which
    would undo every overlap)."""
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "k.ptx")
        with open(src, "w") as f:
            f.write(ptx)
        res = subprocess.run([_tool("ptxas"), "-v", f"--gpu-name={arch}", src, "-o", os.path.join(d, "k.o")],
                             capture_output=True, text=True, timeout=300)
    lines = (res.stderr + res.stdout).splitlines()
    return [ln for ln in lines if "warning" in ln.lower() or "Performance Loss" in ln]


@dataclass
class Facts:
    """What the compiled kernel holds: the stages, resource use, and counts of the instructions that matter."""

    ptx: str
    ttgir: str
    sass: str
    registers: int
    stack: int
    shared: int
    num_warps: int
    maxnreg: list[int] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def spills(self) -> int:
        """Local-memory loads and stores in the SASS (register spills)."""
        return self.counts["LDL"] + self.counts["STL"]

    @property
    def spills_in_mma_loops(self) -> int:
        """Local-memory loads and stores inside the innermost loops that hold an HGMMA (a consumer's KV loop,
        both its arms): the spills paid every iteration. A spill outside them (a value reloaded once per tile
        of a persistent kernel) costs next to nothing."""
        return local_memory_in_mma_loops(self.sass)


def local_memory_in_mma_loops(sass: str) -> int:
    """LDL/STL instructions of ``sass`` (nvdisasm) inside an innermost loop that holds an HGMMA. A loop runs from a
    label to a backward branch to it, with no ``EXIT`` between: ptxas puts the retry of an mbarrier try-wait after
    the task's ``EXIT`` and branches back from there, which is not a loop. A loop holding another such loop (a
    persistent tile loop) is not innermost."""
    from workbench.ir.sass import read_sass

    code = read_sass(sass)
    xs = code.instrs
    loops = [(a, b) for a, b in code.loops() if not any(x.op == "EXIT" for x in xs[a:b])]
    mma = [(a, b) for a, b in loops if any(x.op.startswith("HGMMA") for x in xs[a:b + 1])]
    inner = [(a, b) for a, b in mma if not any((a, b) != (c, d) and a <= c and d <= b for c, d in mma)]
    return sum(1 for i, x in enumerate(xs) if x.op.split(".")[0] in ("LDL", "STL") and any(a <= i <= b
                                                                                            for a, b in inner))


_SASS_OPS = ("HGMMA", "UTMALDG", "UTMASTG", "MUFU.EX2", "SYNCS", "BAR.SYNC", "BAR.ARV", "LDL", "STL")


def facts(ck) -> Facts:
    from workbench.compile.tools import resource_usage
    from workbench.ir.ptx import setmaxnreg
    from workbench.ir.sass import read_sass

    sass = _with_cubin(ck.asm["cubin"], [_tool("nvdisasm"), "-c"])
    usage = {k: v for function in resource_usage(ck.asm["cubin"]).values() for k, v in function.items()}
    ptx = ck.asm["ptx"]
    code = read_sass(sass)
    return Facts(
        ptx=ptx, ttgir=ck.asm["ttgir"], sass=sass, registers=usage.get("REG", 0), stack=usage.get("STACK", 0),
        shared=ck.metadata.shared, num_warps=ck.metadata.num_warps,
        maxnreg=[n for _, n in setmaxnreg(ptx)],
        counts={op: code.count(op) for op in _SASS_OPS},
    )


def compile_facts(launch, target: GPUTarget = SM90) -> Facts:
    return facts(compile_launch(launch, target))


__all__ = ["SM90", "Facts", "compile_facts", "compile_launch", "facts", "local_memory_in_mma_loops",
           "ptxas_warnings"]
