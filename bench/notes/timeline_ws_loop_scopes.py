"""Reproducer: Proton scopes inside the loops of a replicated TLX task fail in ConvertNVGPUToLLVM (CPU, sm_90).

Run: ``.venv/bin/python bench/notes/timeline_ws_loop_scopes.py`` (no GPU; about 10 s). Prints one
line per case: compiled or the MLIR error. See ``timeline-scopes-in-ws-loops.md`` next to it.

The kernel: a persistent ring, a producer (default task) filling a 2-slot shared ring, and a consumer
task (``replicate=REPL``) reading it, all inside ``for tile in range(pid, n_tiles, num_programs)``.
Proton scopes (``triton.profiler.language``, Triton semantic enabled) wrap the consumer's barrier
wait inside the loop; ``TASK_SCOPE`` adds one scope around the consumer's whole body.
"""

from __future__ import annotations

import triton
import triton.language as tl
import triton.language.extra.tlx as tlx
import triton.profiler.language as pl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from workbench.measure.timeline.instrument import ModeSpec, instrumentation

pl.enable_semantic("triton")


@triton.jit
def ring(x_ptr, y_ptr, n_tiles, BLOCK: tl.constexpr, REPL: tl.constexpr, TASK_SCOPE: tl.constexpr):
    bufs = tlx.local_alloc((BLOCK,), tl.float32, 2)
    full = tlx.alloc_barriers(2, arrive_count=1)
    empty = tlx.alloc_barriers(2, arrive_count=REPL)
    with tlx.async_tasks():
        with tlx.async_task("default"):
            i = 0
            for tile in range(tl.program_id(0), n_tiles, tl.num_programs(0)):
                slot = i % 2
                tlx.barrier_wait(empty[slot], ((i // 2) & 1) ^ 1)
                x = tl.load(x_ptr + tile * BLOCK + tl.arange(0, BLOCK))
                tlx.local_store(bufs[slot], x)
                tlx.barrier_arrive(full[slot])
                i += 1
        with tlx.async_task(num_warps=4, replicate=REPL):
            if TASK_SCOPE:
                pl.enter_scope("consumer")
            i = 0
            for tile in range(tl.program_id(0), n_tiles, tl.num_programs(0)):
                slot = i % 2
                pl.enter_scope("wait_full")
                tlx.barrier_wait(full[slot], (i // 2) & 1)
                pl.exit_scope("wait_full")
                x = tlx.local_load(bufs[slot])
                tl.store(y_ptr + tile * BLOCK + tl.arange(0, BLOCK), x)
                tlx.barrier_arrive(empty[slot])
                i += 1
            if TASK_SCOPE:
                pl.exit_scope("consumer")


def compile_case(repl: int, task_scope: bool, buffer_type: str) -> str:
    sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "n_tiles": "i32", "BLOCK": "constexpr", "REPL": "constexpr",
           "TASK_SCOPE": "constexpr"}
    consts = {(3,): 256, (4,): repl, (5,): task_scope}  # by parameter position
    with instrumentation(ModeSpec(buffer_type=buffer_type)) as mode:
        src = ASTSource(ring, sig, consts)
        try:
            triton.compile(src, target=GPUTarget("cuda", 90, 32), options={"instrumentation_mode": mode,
                                                                          "num_warps": 4})
        except Exception as e:  # the MLIR diagnostic went to stderr; summarise
            return f"FAILED ({type(e).__name__}: {str(e).splitlines()[0][:80]})"
    return "compiled"


def main() -> None:
    for repl, task_scope in ((2, False), (2, True), (1, False)):
        for buf in ("global", "shared"):
            what = f"replicate={repl} task scope={'yes' if task_scope else 'no '} buffer={buf:<6}"
            print(f"{what}: {compile_case(repl, task_scope, buf)}", flush=True)


if __name__ == "__main__":
    main()
