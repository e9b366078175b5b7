#!/usr/bin/env python
"""The attention consumers' steady-state loops side by side, read from the SASS (CPU only): ours and Meta's.

    .venv/bin/python bench/attention_loop_compare.py   # table + bench/results/attention-loop-compare-<date>.json
    .venv/bin/python bench/attention_loop_compare.py --no-write

Every kernel is compiled for sm_90 at B4 H32 S4096 D128 bf16, non-causal: our ws_pipelined and ws_pingpong with
their default config and each of their TRIALS, and Meta's Hopper FA tutorials from the installed triton-utlx
wheel (unmodified, their own config). For each, ``workbench.analyse.loop_mix``'s analysis of the first consumer's
loop: instructions per warp on the steady path, how many run under the S = Q K^T wgmma, under the P V wgmma,
and exposed (none of the warpgroup's own wgmmas in flight), and the F2FP / PRMT / FMUL counts that move between
those. Where the newest ``bench/results/attention-*.json`` timed a kernel at this shape, its measured TFLOP/s
(interleaved-round median) goes beside it: the static counts say what each schedule leaves exposed, not how the
two warpgroups and the producer interleave, which only the GPU shows.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "kernels"))

from workbench.analyse.loop_mix import code_lines, loop_mix  # noqa: E402

SHAPE = (4, 32, 4096, 128)
META = ("hopper_fa_ws", "hopper_fa_ws_pipelined", "hopper_fa_ws_pipelined_pingpong",
        "hopper_fa_ws_pipelined_pingpong_persistent")
# our bench's names for Meta's kernels (bench/attention_jobs.py)
META_BENCH_NAME = {"hopper_fa_ws": "meta_ws", "hopper_fa_ws_pipelined": "meta_ws_pipelined",
                   "hopper_fa_ws_pipelined_pingpong": "meta_pingpong",
                   "hopper_fa_ws_pipelined_pingpong_persistent": "meta_pingpong_persistent"}


def ours() -> list[tuple[str, str, Any]]:
    """(name, bench name, artifact) of our pipelined, ping-pong and persistent kernels: default config, then each
    trial."""
    import torch
    from tlx_kernels.attention import ws_persistent, ws_pingpong, ws_pipelined

    import workbench

    q = torch.empty(*SHAPE, dtype=torch.bfloat16)
    out = []
    for name, mod in (("ws_pipelined", ws_pipelined), ("ws_pingpong", ws_pingpong),
                      ("ws_persistent", ws_persistent)):
        for i, cfg in enumerate([mod.DEFAULT, *mod.TRIALS]):
            launch = mod.prepare(q, q, q, False, cfg)
            extra = {k: v for k, v in cfg.items() if k not in mod.DEFAULT or mod.DEFAULT[k] != v}
            label = name + (" " + ",".join(f"{k}={v}" for k, v in extra.items()) if i else " default")
            out.append((label, name if i == 0 else "", workbench.compile(launch.kernel, *launch.args, target="sm_90",
                                                                         **launch.kwargs)))
    return out


def metas() -> list[tuple[str, str, Any]]:
    from tlx_kernels import meta_tutorials as mt

    return [(f"Meta {n}", META_BENCH_NAME[n], mt.case(n).compile()) for n in META]


def measured(kernel: str) -> dict[str, Any] | None:
    """TFLOP/s of ``kernel`` at SHAPE, non-causal, in the interleaved rounds (median) of the newest attention
    bench result that timed it, with that file's name."""
    for f in sorted((ROOT / "bench" / "results").glob("attention-2*.json"), reverse=True):
        for m in json.loads(f.read_text()).get("measurements", []):
            if (m["kernel"] == kernel and m.get("phase") == "rounds" and list(m["shape"]) == list(SHAPE)
                    and not m["causal"] and m.get("tflops")):
                return dict(tflops=round(m["tflops"], 1), source=f.name)
    return None


def summary(label: str, bench_name: str, art: Any) -> dict[str, Any]:
    from tlx_kernels.attention import device as dev

    res = loop_mix(art, 1, [code_lines(dev.mask_scores)])
    groups = {g["kind"]: g for g in res["overlap"]}
    count = {c: res["counts_per_warp"].get(c, 0) for c in ("F2FP", "FMUL", "other")}
    return dict(kernel=label, steady_instructions=res["steady_path_instructions"],
                under_s=groups.get("SS", {}).get("issue_cycles"), under_pv=groups.get("RS", {}).get("issue_cycles"),
                exposed=sum(res["exposed"].values()), exposed_mix=res["exposed"],
                under_s_mix=groups.get("SS", {}).get("during"), counts=count,
                consumer_registers=max(t["registers"] for t in art.metadata.tasks if t["partition"] is not None),
                measured=measured(bench_name) if bench_name else None)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    ap.add_argument("--no-write", action="store_true")
    opts = ap.parse_args(argv)
    import triton

    rows = [summary(*k) for k in ours() + metas()]
    print(f"{'kernel':<58} {'steady':>6} {'under S':>7} {'under PV':>8} {'exposed':>7} {'F2FP':>5} {'other':>5} "
          f"{'regs':>4}  measured")
    for r in rows:
        print(f"{r['kernel']:<58} {r['steady_instructions']:>6} {r['under_s']:>7} {r['under_pv']:>8} "
              f"{r['exposed']:>7} {r['counts']['F2FP']:>5} {r['counts']['other']:>5} {r['consumer_registers']:>4}  "
              + (f"{r['measured']['tflops']} ({r['measured']['source']})" if r["measured"] else "-"))
    if not opts.no_write:
        path = Path(opts.out) / f"attention-loop-compare-{dt.date.today().isoformat()}.json"
        doc = dict(date=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                   command=" ".join(["bench/attention_loop_compare.py", *(sys.argv[1:] if argv is None else argv)]),
                   triton=triton.__version__, shape=SHAPE, dtype="bf16", causal=False, rows=rows)
        path.write_text(json.dumps(doc, indent=1, default=str) + "\n")
        print(f"\nwrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
