"""What Meta's persistent ping-pong FA loses to the wait Triton puts after its async dots (issue 34's why).

The check ``dot-waited-at-issue`` says that in Meta's ``hopper_fa_ws_pipelined_pingpong_persistent`` the compiler
waits for each ``async_dot`` of the consumers' KV loop as soon as it is issued (a plain ``tl.range`` loop is
scheduled by Triton, which adds ``wgmma.wait_group 0``), so its ``P V`` product is never in flight while the
softmax runs. ``tl.range(..., num_stages=0)`` leaves the loop alone. This script makes that one edit in a copy of
Meta's file in a temporary folder (their code is test data: never edited in place, never committed), loads both
modules, prints each one's largest error against torch's fp32 attention, and times both host functions (what a user
calls) in interleaved rounds at B4 H32 S4096 D128 bf16, with our library attention beside them.

    python3 bench/meta_fa_overlap.py [--rounds 7] [--json PATH]     # needs a CUDA GPU
    python3 bench/meta_fa_overlap.py --dry                            # any machine: the edit applies, once
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.util
import statistics
import sys
import tempfile
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "kernels"), str(ROOT / "testbed")]

from tlx_kernels import meta_tutorials as mt  # noqa: E402

NAME = "hopper_fa_ws_pipelined_pingpong_persistent"
LOOP = "for _ in tl.range(lo + BLOCK_N, hi, BLOCK_N):"
EDITED = "for _ in tl.range(lo + BLOCK_N, hi, BLOCK_N, num_stages=0):"


def edited_source() -> str:
    """Meta's file with its consumers' KV loop left unscheduled by Triton; fails when the loop is not there once."""
    text = (mt.tutorial_dir() / f"{NAME}.py").read_text()
    if text.count(LOOP) != 1:
        raise SystemExit(f"{NAME}.py holds {text.count(LOOP)} copies of the consumer loop {LOOP!r}: "
                         "the wheel changed, look again")
    return text.replace(LOOP, EDITED)


def load_copy(folder: Path) -> ModuleType:
    path = folder / f"{NAME}_num_stages0.py"
    path.write_text(edited_source())
    spec = importlib.util.spec_from_file_location("tlx_tutorial_fa_num_stages0", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--rep-ms", type=float, default=200.0)
    ap.add_argument("--json", default=None)
    ap.add_argument("--dry", action="store_true", help="only check that the edit applies")
    args = ap.parse_args()
    src = edited_source()
    print(f"{NAME}: consumer loop edited to {EDITED.strip()!r} ({src.count('num_stages=0')} in the copy)")
    if args.dry:
        return 0
    import torch
    from recordings import versions, write_result
    from tlx_kernels import attention

    from workbench.measure.interleave import ratio, timed_rounds

    shape = mt.FA_SHAPE
    q, k, v = mt.inputs("attention", shape, torch.bfloat16)
    with tempfile.TemporaryDirectory() as tmp:
        copy = load_copy(Path(tmp))
        calls = {"meta": lambda: mt.host_call(NAME, q, k, v),
                 "meta_num_stages0": lambda: copy.attention(q, k, v, mt.SM_SCALE),
                 "ours": lambda: attention.attention(q, k, v, sm_scale=mt.SM_SCALE)}
        ref = mt.reference("attention", q, k, v).float()
        err = {}
        for name, fn in calls.items():
            out = fn().float()
            torch.cuda.synchronize()
            err[name] = float((out - ref).abs().max())
            print(f"{name:18s} max abs error vs torch fp32 {err[name]:.2e}", flush=True)
        times = timed_rounds(calls, args.rounds, args.rep_ms, timing="flush",
                             on_round=lambda r: print(f"round {r + 1}/{args.rounds}", flush=True))
    rows = {k: {"median_ms": statistics.median(times[k]), "ms_per_round": times[k], "max_abs_err": err[k],
                "speedup_vs_meta": ratio(times["meta"], times[k])} for k in calls}
    for k, r in rows.items():
        print(f"{k:18s} {r['median_ms']:.3f} ms   x{r['speedup_vs_meta']:.3f} Meta's original (same rounds)")
    doc = {"date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "device": torch.cuda.get_device_name(),
           "versions": versions(), "command": " ".join(["python3", "bench/meta_fa_overlap.py", *sys.argv[1:]]),
           "shape": {"B": shape[0], "H": shape[1], "S": shape[2], "D": shape[3], "dtype": "bfloat16"},
           "edit": {"file": f"{NAME}.py", "from": LOOP, "to": EDITED}, "rounds": args.rounds, "rows": rows}
    print(write_result(doc, "meta-fa-overlap", args.json))
    return 0


if __name__ == "__main__":
    sys.exit(main())
