"""Quick throughput probe of the TLX example GEMMs vs cuBLAS (first look on a GPU, before tuning).

    python bench/probe_tlx_gemm.py [--sizes 4096 8192]
"""

from __future__ import annotations

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "tlx"))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", nargs="*", type=int, default=[4096, 8192])
    args = ap.parse_args()
    import tlx_examples as ex
    import torch
    import triton

    rows = []
    for n in args.sizes:
        a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
        flops = 2 * n**3
        ref = torch.matmul(a, b)
        t_cublas = triton.testing.do_bench(lambda: torch.matmul(a, b))  # noqa: B023
        for name, fn, meta in [("tma_gemm", ex.tma_gemm, {}), ("ws_gemm", ex.ws_gemm, {}),
                               ("ws_gemm BN=256", ex.ws_gemm, dict(BN=256)),
                               ("ws_gemm BN=256 S4", ex.ws_gemm, dict(BN=256, NUM_STAGES=4))]:
            try:
                c = fn(a, b, **meta)
                err = float((c.float() - ref.float()).norm() / ref.float().norm())
                t = triton.testing.do_bench(lambda fn=fn, meta=meta: fn(a, b, **meta))  # noqa: B023
                rows.append(dict(n=n, kernel=name, tflops=flops / t / 1e9, cublas=flops / t_cublas / 1e9,
                                 rel_err=err))
            except Exception as e:  # record and go on
                rows.append(dict(n=n, kernel=name, error=f"{type(e).__name__}: {str(e)[:300]}"))
            print(rows[-1], flush=True)
    print(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
