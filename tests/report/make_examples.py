"""Record the Report examples under workbench/report/examples (the contract's test data) by running
real ``%%tlx`` cells in an in-process IPython shell.

    python tests/report/make_examples.py          # CPU: vector_add(_diff).json, tlx_ws_cooperative.json
    python tests/report/make_examples.py --gpu    # GPU: gpu_<device>_ws_cooperative.json (--bench --check
                                                  #      --timeline on a real launch), about 1-2 minutes
    python tests/report/make_examples.py --shown  # every stored example gets what this version writes for the
                                                  #      viewer to show as it is (summaries.write_shown: lines in
                                                  #      words, drawings' views), its data unchanged

The extension's unit tests (extension/test/examples.test.ts) and tests/report read every example.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "workbench" / "report" / "examples"

sys.path.insert(0, str(ROOT / "tests"))
from sample_kernels import kernel_text  # noqa: E402

ADD = kernel_text("vector_add") + """
n = 1000
x = torch.randn(n, device=DEVICE)
y = torch.randn(n, device=DEVICE)
out = torch.empty(n, device=DEVICE)
vector_add[(triton.cdiv(n, BLOCK),)](x, y, out, n, BLOCK=BLOCK)
"""

SETUP_GEMM = """import torch
from tlx_kernels.gemm import ws_cooperative
M = N = K = 4096
FLOPS, BYTES = 2.0 * M * N * K, 2.0 * (M * K + K * N + M * N)
if torch.cuda.is_available():
    torch.manual_seed(0)
    a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
else:
    a = torch.empty(M, K, dtype=torch.bfloat16)
    b = torch.empty(K, N, dtype=torch.bfloat16)
"""

GEMM_CELL = (
    '%%tlx -o r --bench --flops FLOPS --bytes BYTES --timeline --check "c: (a.float() @ b.float()).to(c.dtype)" '
    "--atol 0.5 --rtol 0.02 --stages ttgir,sass\n"
    "c = ws_cooperative.launch(a, b, ws_cooperative.DEFAULT)\n"
)


def shell():
    from IPython.core.interactiveshell import InteractiveShell

    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "workbench")
    return ip


def run(ip, cell: str):
    res = ip.run_cell(cell)
    if not res.success:
        raise SystemExit(f"cell failed: {res.error_in_exec or res.error_before_exec}")
    return ip.user_ns.get("r")


def save(report, name: str) -> None:
    report.validate()
    path = OUT / name
    path.write_text(report.to_json(indent=1) + "\n")
    print(f"{path.relative_to(ROOT)}: {path.stat().st_size / 1024:.1f} KiB, stages "
          f"{', '.join(report.stage_names)}, measurements {[m['kind'] for m in report.measurements]}")


def cpu_examples(ip) -> None:
    ip.run_cell("BLOCK = 256")
    save(run(ip, '%%tlx -o r --check "out: x + y" --stages ttgir,ptx\n' + ADD), "vector_add.json")
    ip.run_cell("BLOCK = 128")
    save(run(ip, '%%tlx -o r --diff --check "out: x + y" --stages ttgir,ptx\n' + ADD), "vector_add_diff.json")
    ip.run_cell(SETUP_GEMM)
    save(run(ip, GEMM_CELL), "tlx_ws_cooperative.json")


def gpu_example(ip) -> None:
    import torch

    ip.run_cell(SETUP_GEMM)
    t0 = time.time()
    r = run(ip, GEMM_CELL)
    slug = re.sub(r"[^a-z0-9]+", "_", torch.cuda.get_device_name(0).lower()).strip("_")
    save(r, f"gpu_{slug}_ws_cooperative.json")
    bench = next((m for m in r.measurements if m["kind"] == "bench"), {})
    print(f"cell {time.time() - t0:.0f} s; bench {bench.get('status')}: {bench.get('reason') or ''} "
          f"median {(bench.get('timing') or {}).get('median_ms')} ms; checks "
          f"{[(c['expr'], c['status']) for c in r.checks]}; timeline {(r.timeline or {}).get('status')} "
          f"{(r.timeline or {}).get('reason') or ''}")


def write_shown() -> None:
    """What this version writes for the viewer to show as it is (run, check and measurement lines, provenance,
    drawings' views) into every stored example, the recorded data as it was (the GPU example cannot be recorded
    again without a GPU)."""
    import json

    from workbench.report.summaries import write_shown as shown

    for path in sorted(OUT.glob("*.json")):
        d = json.loads(path.read_text())
        shown(d)
        path.write_text(json.dumps(d, indent=1) + "\n")
        print(f"{path.relative_to(ROOT)}: written")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--gpu", action="store_true", help="record the GPU example (needs a CUDA GPU)")
    p.add_argument("--shown", action="store_true", help="write what this version shows into the stored examples")
    args = p.parse_args()
    if args.shown:
        return write_shown()
    ip = shell()
    if args.gpu:
        import torch

        if not torch.cuda.is_available():
            sys.exit("--gpu needs a CUDA GPU")
        gpu_example(ip)
    else:
        cpu_examples(ip)


if __name__ == "__main__":
    main()
