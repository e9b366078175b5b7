#!/usr/bin/env python
"""Fingerprints of the kernel library's machine code (CPU only): every kernel at its test configs, for sm_90.

    .venv/bin/python bench/kernel_fingerprint.py --save /tmp/before.json        # record
    .venv/bin/python bench/kernel_fingerprint.py --against /tmp/before.json     # after a refactor: same SASS?
    .venv/bin/python bench/kernel_fingerprint.py --only 'attention/ws_pingpong' --jobs 2

Each case is launched as the compile-only tests launch it (``prepare`` on CPU tensors: odd sizes, both dtypes,
row- and column-major operands, every config and trial config that the tests compile) and compiled with
``workbench.compile``. Its fingerprint is a hash of the SASS instruction text (nvdisasm; the ``//`` line-info
comments dropped, so moving code between functions or lines does not count) and, for information, of the PTX
without ``.loc``/``.file`` lines and debug sections. ``--against`` exits 1 when any case's SASS differs.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "kernels"))

GEMM_ODD = (1000, 1500, 776)  # tests/kernels/test_gemm_compile.py: no multiple of any tile
ATTN_B, ATTN_H, ATTN_SQ, ATTN_SKV = 2, 3, 1000, 777  # tests/kernels/test_attention_compile.py

# (label, a function of no arguments giving (kernel, args, kwargs))
Case = tuple[str, Callable[[], tuple[Any, tuple, dict[str, Any]]]]


def _gemm_launch(name: str, index: int, dtype: str, a_t: bool, b_t: bool):
    import torch
    from tlx_kernels import gemm as G

    dt = {"bf16": torch.bfloat16, "fp16": torch.float16}[dtype]
    M, N, K = GEMM_ODD
    a = torch.empty(K, M, dtype=dt).T if a_t else torch.empty(M, K, dtype=dt)
    b = torch.empty(N, K, dtype=dt).T if b_t else torch.empty(K, N, dtype=dt)
    mod = G.MODULES[name]
    prepared = mod.prepare(a, b, mod.CONFIGS[index])
    if name == "triton_dot":
        kernel, args, kwargs = prepared[:3]
    else:
        kernel, (args, kwargs) = mod.kernel, prepared[:2]
    return kernel, args, kwargs


def gemm_cases() -> Iterator[Case]:
    from tlx_kernels import gemm as G

    for name, mod in G.MODULES.items():
        for i in range(len(mod.CONFIGS)):
            yield f"gemm/{name}/cfg{i}/bf16-rr", lambda n=name, i=i: _gemm_launch(n, i, "bf16", False, False)
        yield f"gemm/{name}/cfg0/fp16-cc", lambda n=name: _gemm_launch(n, 0, "fp16", True, True)
    for dtype, a_t, b_t in (("bf16", False, True), ("fp16", True, False)):
        label = f"gemm/ws_cooperative/cfg0/{dtype}-{'rc'[a_t]}{'rc'[b_t]}"
        yield label, lambda d=dtype, a=a_t, b=b_t: _gemm_launch("ws_cooperative", 0, d, a, b)


def _attention_launch(name: str, dtype: str, D: int, causal: bool, config: dict[str, Any] | None):
    import torch
    from tlx_kernels import attention as A

    dt = {"bf16": torch.bfloat16, "fp16": torch.float16}[dtype]
    q = torch.empty(ATTN_B, ATTN_H, ATTN_SQ, D, dtype=dt)
    kv = torch.empty(ATTN_B, ATTN_H, ATTN_SKV, D, dtype=dt)
    launch = A.MODULES[name].prepare(q, kv, kv, causal, config, want_lse=True)
    return launch.kernel, launch.args, launch.kwargs


def attention_cases() -> Iterator[Case]:
    from tlx_kernels import attention as A
    from tlx_kernels.attention import common as C

    for name in A.MODULES:  # the default configs: both dtypes, head dims and mask modes
        yield f"attention/{name}/default/bf16-d128-causal", lambda n=name: _attention_launch(n, "bf16", 128, True, None)
        yield f"attention/{name}/default/fp16-d64-full", lambda n=name: _attention_launch(n, "fp16", 64, False, None)
    yield "attention/ws_persistent/default/bf16-d64-causal", lambda: _attention_launch("ws_persistent", "bf16", 64,
                                                                                       True, None)
    for cfg in A.triton_baseline.CONFIGS[1:]:
        label = f"attention/triton_baseline/{C.config_name(cfg)}/bf16-d128-causal"
        yield label, lambda c=cfg: _attention_launch("triton_baseline", "bf16", 128, True, c)
    seen = set()  # every TLX config and trial that fits a head dim, once per compile
    for name in A.TLX_MODULES:
        mod = A.MODULES[name]
        for D in (128, 64):
            for cfg in C.configs_for([*mod.CONFIGS, *getattr(mod, "TRIALS", [])], D):
                compiled = C.config_name({k: v for k, v in cfg.items() if k not in ("GROUP_HEADS", "SNAKE")})
                if (name, D, compiled) not in seen:
                    seen.add((name, D, compiled))
                    yield (f"attention/{name}/{compiled}/bf16-d{D}-causal",
                           lambda n=name, D=D, c=cfg: _attention_launch(n, "bf16", D, True, c))


def _broadcast_launch(shape: str, index: int, dtype: str):
    import torch
    from tlx_kernels import broadcast as BC

    s = {t.name: t for t in BC.TEST_SHAPES}[shape]
    dt = {"bf16": torch.bfloat16, "fp16": torch.float16}[dtype]
    U, X, W = torch.empty(s.B, s.DU, dtype=dt), torch.empty(s.B, s.C, s.DX, dtype=dt), torch.empty(s.DU + s.DX, s.N,
                                                                                                  dtype=dt)
    b = torch.empty(s.N, dtype=dt) if s.bias else None
    args, kwargs, _grid, _y = BC.prepare(U, X, W, b, act=s.act, config=BC.CONFIGS[index])
    return BC.KERNEL, args, kwargs


def broadcast_cases() -> Iterator[Case]:
    from tlx_kernels import broadcast as BC

    for shape in ("realistic", "odd-small", "unaligned"):
        yield f"broadcast/{shape}/cfg0/bf16", lambda s=shape: _broadcast_launch(s, 0, "bf16")
    for i in range(1, len(BC.CONFIGS)):
        yield f"broadcast/odd-small/cfg{i}/bf16", lambda i=i: _broadcast_launch("odd-small", i, "bf16")
    yield "broadcast/odd-small/cfg0/fp16", lambda: _broadcast_launch("odd-small", 0, "fp16")


def cases() -> list[Case]:
    return [*gemm_cases(), *attention_cases(), *broadcast_cases()]


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def fingerprint(label: str) -> dict[str, Any]:
    """Compile case ``label`` for sm_90 and hash its SASS and PTX (run in a worker process)."""
    from workbench.compile import compile as wb_compile
    from workbench.ir import ptx, sass

    make = dict(cases())[label]
    t0 = time.time()
    kernel, args, kwargs = make()
    art = wb_compile(kernel, *args, target="sm_90", **kwargs)
    return dict(label=label, kernel=art.metadata.name if hasattr(art.metadata, "name") else None,
                sass=_digest(sass.code_text(art.stages["sass"])), ptx=_digest(ptx.code_text(art.stages["ptx"])),
                instructions=len(sass.read_sass(art.stages["sass"]).instrs), seconds=round(time.time() - t0, 1))


def compare(now: dict[str, dict], before: dict[str, dict]) -> list[str]:
    """Lines naming every case whose SASS differs from ``before`` (or that one side lacks)."""
    out = []
    for label in sorted(set(now) | set(before)):
        a, b = before.get(label), now.get(label)
        if a is None or b is None:
            out.append(f"{label}: only {'after' if a is None else 'before'}")
        elif a["sass"] != b["sass"]:
            out.append(f"{label}: SASS {a['sass']} -> {b['sass']} ({a['instructions']} -> {b['instructions']} "
                       "instructions)")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", help="regular expression: the cases whose label it finds")
    ap.add_argument("--jobs", type=int, default=1, help="compiles at once (processes)")
    ap.add_argument("--save", type=Path, help="write the fingerprints as JSON")
    ap.add_argument("--against", type=Path, help="compare with fingerprints saved earlier; exit 1 if SASS differs")
    ap.add_argument("--list", action="store_true", help="list the cases and stop")
    args = ap.parse_args(argv)
    labels = [label for label, _ in cases() if not args.only or re.search(args.only, label)]
    if args.list:
        print("\n".join(labels))
        return 0
    results: dict[str, dict] = {}
    with ProcessPoolExecutor(max(1, args.jobs)) as pool:
        for r in pool.map(fingerprint, labels):
            results[r["label"]] = r
            print(f"{r['label']:64s} sass {r['sass']}  ptx {r['ptx']}  {r['instructions']:6d} instr  "
                  f"{r['seconds']:5.1f} s", flush=True)
    if args.save:
        args.save.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    if args.against:
        before = json.loads(args.against.read_text())
        if args.only:
            before = {k: v for k, v in before.items() if re.search(args.only, k)}
        diffs = compare(results, before)
        same_ptx = sum(1 for k, r in results.items() if k in before and before[k]["ptx"] == r["ptx"])
        print(f"{len(results) - len(diffs)} of {len(results)} cases: SASS identical ({same_ptx} with identical PTX)")
        print("\n".join(diffs))
        return 1 if diffs else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
