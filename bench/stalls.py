"""`%%tlx --stalls` as a user runs it, on the library's GEMM and attention and on Meta's TLX GEMM and FA forward.

Each kernel: a plain cell makes the inputs and calls the public function once (its tuning and compile), then a
``%%tlx --stalls --bench --quiet`` cell calls it again; the cell's wall time and the stalls payload are recorded: the
share of samples placed on a role and a line (all, and inside the SASS loops), the roles' stall reasons, the
hottest lines. The ``.ncu-rep`` files are copied beside the JSON (``--keep``), to open in Nsight Compute or to
serve as test data. Last, ``workbench.compare`` of Meta's GEMM and ours and of Meta's persistent ping-pong FA and
ours (time, stall reasons ranked by the time they explain, the hottest loops' instruction mix): issue 34's why is
our attention slower. Needs a CUDA GPU and Nsight Compute.

    python3 bench/stalls.py --json bench/results/stalls-h200-DATE.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

SETUP = ("import torch\nfrom tlx_kernels import gemm, attention\nfrom tlx_kernels import meta_tutorials as mt\n")
CASES = {
    "gemm_ws_cooperative_4096": (
        "a, b = mt.inputs('gemm', (4096, 4096, 4096), torch.float16)\nc = gemm.ws_cooperative.matmul(a, b)",
        "c = gemm.ws_cooperative.matmul(a, b)"),
    "meta_hopper_gemm_ws_4096": (
        "a, b = mt.inputs('gemm', (4096, 4096, 4096), torch.float16)\nc = mt.host_call('hopper_gemm_ws', a, b)",
        "c = mt.host_call('hopper_gemm_ws', a, b)"),
    "attention_B4_H32_S4096_D128": (
        "q, k, v = mt.inputs('attention', (4, 32, 4096, 128), torch.bfloat16)\no = attention.attention(q, k, v)",
        "o = attention.attention(q, k, v)"),
    "meta_fa_pingpong_persistent_B4_H32_S4096_D128": (  # Meta's fastest FA forward, 0.95x ahead of ours (issue 34)
        "q, k, v = mt.inputs('attention', (4, 32, 4096, 128), torch.bfloat16)\n"
        "o = mt.host_call('hopper_fa_ws_pipelined_pingpong_persistent', q, k, v)",
        "o = mt.host_call('hopper_fa_ws_pipelined_pingpong_persistent', q, k, v)"),
}
#: workbench.compare of Meta's kernel (before) and ours (after), each where both ran: the JSON key, the two cases
COMPARED = [("compare_meta_to_ours", "meta_hopper_gemm_ws_4096", "gemm_ws_cooperative_4096"),
            ("compare_meta_fa_to_ours", "meta_fa_pingpong_persistent_B4_H32_S4096_D128",
             "attention_B4_H32_S4096_D128")]


def run_case(ip: Any, name: str, keep: Path | None, kept: dict[str, Any]) -> dict[str, Any]:
    warm, cell = CASES[name]
    ip.run_cell(warm).raise_error()
    t0 = time.perf_counter()
    ip.user_ns.pop("stalls_report", None)
    ip.run_cell_magic("tlx", "--stalls --bench --quiet -o stalls_report", cell)  # -o: the magic returns nothing
    wall = time.perf_counter() - t0
    reports = [ip.user_ns["stalls_report"]] if ip.user_ns.get("stalls_report") is not None else []
    item = next((m for r in reports or [] for m in r.measurements if m.get("kind") == "stalls"), None)
    row: dict[str, Any] = {"case": name, "cell_s": round(wall, 2), "kernel": reports[-1].name if reports else None}
    if reports:
        kept[name] = reports[-1]
    if item is None:
        return {**row, "status": "missing", "reason": "the Report has no stalls item"}
    row.update({k: item.get(k) for k in ("status", "reason", "seconds", "samples", "mapped", "duration_ns",
                                         "ncu_version", "pc_offset", "device")})
    row["roles"] = [{k: r[k] for k in ("role", "warps", "samples", "stalled")} |
                    {"top": sorted(r["by_reason"].items(), key=lambda kv: -kv[1])[:4]} for r in item.get("roles", [])]
    row["hot_lines"] = sorted(item.get("lines", []), key=lambda ln: -ln["samples"])[:8]
    if keep and item.get("report_file"):
        dest = keep / f"{name}.ncu-rep"
        shutil.copy(item["report_file"], dest)
        row["report_copy"] = str(dest)
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", default=",".join(CASES), help=f"of {','.join(CASES)}")
    ap.add_argument("--json", default=None)
    ap.add_argument("--keep", default=None, help="folder to copy each case's .ncu-rep into")
    args = ap.parse_args(argv)
    import torch
    import triton
    from IPython.core.interactiveshell import InteractiveShell

    if not torch.cuda.is_available():
        print("bench/stalls.py needs a CUDA GPU")
        return 2
    keep = Path(args.keep) if args.keep else None
    if keep:
        keep.mkdir(parents=True, exist_ok=True)
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "workbench")
    ip.run_cell(SETUP).raise_error()
    doc: dict[str, Any] = {"date": dt.datetime.now(dt.UTC).isoformat(), "device": torch.cuda.get_device_name(),
                           "torch": torch.__version__, "triton": triton.__version__,
                           "command": " ".join(["python3", "bench/stalls.py", *(argv or sys.argv[1:])]), "rows": []}
    kept: dict[str, Any] = {}
    for name in [c for c in args.cases.split(",") if c]:
        row = run_case(ip, name, keep, kept)
        doc["rows"].append(row)
        m = row.get("mapped") or {}
        print(f"{name:<32} {row.get('status')!s:<7} cell {row['cell_s']:6.1f} s  samples {row.get('samples')}  "
              f"role+line {m.get('role_and_line')}  loop {m.get('loop_role_and_line')}  {row.get('reason') or ''}",
              flush=True)
        for key, before, after in COMPARED:  # ours against Meta's, as workbench.compare shows it
            if kept.get(before) is not None and kept.get(after) is not None and key not in doc:
                import workbench

                c = workbench.compare(kept[before], kept[after])
                doc[key] = c.data
                print(c, flush=True)
        if args.json:
            Path(args.json).write_text(json.dumps(doc, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
