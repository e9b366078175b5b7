"""Time the TLX lowering (TLX source -> Gluon-level TTGIR, before Triton's passes) of a ~200-line kernel.

Usage: .venv/bin/python bench/tlx_lowering_time.py [--repeat 21] [--lines 200] [--json PATH]

Needs no GPU. Prints the median and writes JSON (default bench/results/tlx-lowering-time-DATE.json).
The kernel is a warp-specialized TMA/wgmma GEMM (producer + 2 replicated consumers)
with a long elementwise epilogue, written to a temporary module so ``inspect`` can read its source.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import json
import os
import platform
import statistics
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

HEAD = """
import triton.language as tl
from workbench import tlx


@tlx.jit
def big_kernel(a_desc, b_desc, c_desc, bias_ptr, M, N, K, alpha, BM: tl.constexpr, BN: tl.constexpr,
               BK: tl.constexpr, NUM_STAGES: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    off_m = pid_m * BM
    off_n = pid_n * BN
    HALF: tl.constexpr = BM // 2
    a_bufs = tlx.local_alloc((HALF, BK), tl.bfloat16, 2 * NUM_STAGES)
    b_bufs = tlx.local_alloc((BK, BN), tl.bfloat16, NUM_STAGES)
    c_bufs = tlx.local_alloc((HALF, BN), tl.bfloat16, 2)
    full = tlx.alloc_barriers(NUM_STAGES, arrive_count=1)
    empty = tlx.alloc_barriers(NUM_STAGES, arrive_count=2)
    num_k = tl.cdiv(K, BK)
    with tlx.async_tasks():
        with tlx.async_task("default"):
            for k in range(num_k):
                slot, phase = tlx.get_bufidx_phase(k, NUM_STAGES)
                tlx.barrier_wait(empty[slot], phase ^ 1)
                tlx.barrier_expect_bytes(full[slot], 2 * HALF * BK * 2 + BK * BN * 2)
                tlx.async_descriptor_load(a_desc, a_bufs[slot], [off_m, k * BK], full[slot])
                tlx.async_descriptor_load(a_desc, a_bufs[NUM_STAGES + slot], [off_m + HALF, k * BK], full[slot])
                tlx.async_descriptor_load(b_desc, b_bufs[slot], [k * BK, off_n], full[slot])
        with tlx.async_task(num_warps=4, num_regs=232, replicate=2):
            cid = tlx.async_task_replica_id()
            acc = tl.zeros((HALF, BN), dtype=tl.float32)
            for k in range(num_k):
                slot, phase = tlx.get_bufidx_phase(k, NUM_STAGES)
                tlx.barrier_wait(full[slot], phase)
                acc = tlx.async_dot(a_bufs[cid * NUM_STAGES + slot], b_bufs[slot], acc)
                acc = tlx.async_dot_wait(0, acc)
                tlx.barrier_arrive(empty[slot])
            offs_n = off_n + tl.arange(0, BN)
            bias = tl.load(bias_ptr + offs_n, mask=offs_n < N, other=0.0)
            v0 = acc * alpha + bias[None, :]
"""

TAIL = """
            tlx.local_store(c_bufs[cid], v{last}.to(tl.bfloat16))
            tlx.fence_async_shared()
            tlx.async_descriptor_store(c_desc, c_bufs[cid], [off_m + cid * HALF, off_n])
            tlx.async_descriptor_store_wait(0)
"""


def make_source(total_lines: int = 200) -> str:
    head_lines = HEAD[HEAD.index("@tlx.jit") :].count("\n")  # the kernel's own lines, decorator included
    n_ops = max(1, total_lines - head_lines - TAIL.count("\n"))
    body = []
    ops = [
        "v{p} * 0.999 + 0.001",
        "tl.maximum(v{p}, -4.0)",
        "tl.minimum(v{p}, 4.0)",
        "v{p} - 0.5 * v{p}",
        "tl.where(v{p} > 0.0, v{p}, 0.01 * v{p})",
        "v{p} + 0.25",
    ]
    for i in range(1, n_ops + 1):
        body.append(f"            v{i} = " + ops[i % len(ops)].format(p=i - 1))
    return HEAD + "\n".join(body) + "\n" + TAIL.format(last=n_ops)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=21)
    ap.add_argument("--lines", type=int, default=200)
    ap.add_argument("--json", default=None, help="where to write the JSON (default bench/results/...)")
    args = ap.parse_args(argv)

    import torch
    from triton.tools.tensor_descriptor import TensorDescriptor

    src = make_source(args.lines)
    tmp = tempfile.NamedTemporaryFile("w", suffix="_tlx_big_kernel.py", delete=False)
    tmp.write(src)
    tmp.close()
    spec = importlib.util.spec_from_file_location("tlx_big_kernel", tmp.name)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    kernel = mod.big_kernel
    n_lines = len("".join(kernel.raw_src).splitlines())

    M = N = K = 512
    BM, BN, BK = 128, 128, 64
    a = torch.empty(M, K, dtype=torch.bfloat16)
    b = torch.empty(K, N, dtype=torch.bfloat16)
    c = torch.empty(M, N, dtype=torch.bfloat16)
    bias = torch.empty(N, dtype=torch.float32)
    descs = (
        TensorDescriptor(a, [M, K], [K, 1], [BM // 2, BK]),
        TensorDescriptor(b, [K, N], [N, 1], [BK, BN]),
        TensorDescriptor(c, [M, N], [N, 1], [BM // 2, BN]),
    )
    call_args = (*descs, bias, M, N, K, 1.5)
    kw = dict(BM=BM, BN=BN, BK=BK, NUM_STAGES=3, num_warps=4)

    times = []
    for i in range(args.repeat + 1):
        t0 = time.perf_counter()
        kernel.trace(call_args, kw)
        ms = (time.perf_counter() - t0) * 1e3
        if i > 0:  # the first call also imports and warms Triton up
            times.append(ms)
    os.unlink(tmp.name)
    med = statistics.median(times)
    ok = med < 200
    print(
        f"TLX lowering of a {n_lines}-line kernel (front end to Gluon TTGIR, sm_90, CPU): "
        f"median {med:.1f} ms, min {min(times):.1f} ms, max {max(times):.1f} ms over {len(times)} runs "
        f"({'under' if ok else 'OVER'} the 200 ms budget)"
    )
    import triton

    now = dt.datetime.now(dt.UTC)
    out = args.json or os.path.join(ROOT, "bench", "results", f"tlx-lowering-time-{now:%Y-%m-%d}.json")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    with open(out, "w") as f:
        json.dump(
            {
                "date": now.isoformat(),
                "device": f"CPU only ({platform.machine()}, {os.cpu_count()} cores), target sm_90",
                "triton": triton.__version__,
                "torch": torch.__version__,
                "python": platform.python_version(),
                "command": "python " + " ".join(sys.argv),
                "kernel_lines": n_lines,
                "what": "TLXKernel.trace: Triton's front end with the TLX lowering, to Gluon-level TTGIR",
                "times_ms": times,
                "median_ms": med,
                "targets": {"median_under_200ms": ok},
            },
            f,
            indent=2,
        )
    print(f"wrote {os.path.relpath(out, ROOT)}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
