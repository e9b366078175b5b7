"""workbench.search's budgeted strategy against its exhaustive search, on a space too large to try all: the library's
tl.dot GEMM (``tlx_kernels.gemm.triton_dot.dot_kernel``) at SIZE^3 fp16 over every tile, K step, stage count,
group and warp count (648 configs).

    python3 bench/search_budgeted.py [--size 4096] [--json PATH]        # on a GPU machine (~8 minutes)
    python3 bench/search_budgeted.py --smoke                           # no GPU: the harness on 8 configs

Each search runs in a fresh process with empty caches (Triton's and the workbench's), so compiles count for both.
Then both winners are timed again in one interleaved run (``workbench.measure.interleave``), so that their ratio is
a same-moment ratio. Target (issue 33): the budgeted winner within 2% of the exhaustive winner's time, in at most
25% of the exhaustive wall time. Writes JSON (default bench/results/search-budgeted-<date>.json).
"""

from __future__ import annotations

import argparse
import datetime as dt
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "kernels"), str(ROOT / "bench"), str(ROOT / "testbed")]

AXES = {"BM": [64, 128, 256], "BN": [64, 128, 256], "BK": [32, 64, 128], "NUM_STAGES": [2, 3, 4, 5],
        "GROUP_M": [1, 8, 16], "num_warps": [4, 8]}
SMOKE = {"BM": [64, 128], "BN": [64, 128], "BK": [64], "NUM_STAGES": [2, 3], "GROUP_M": [8], "num_warps": [4]}


def _blocks(nargs: dict) -> None:
    """A config's descriptor block shapes (as Triton's autotuner runs a TensorDescriptor kernel's pre_hook)."""
    nargs["a_desc"].block_shape = [nargs["BM"], nargs["BK"]]
    nargs["b_desc"].block_shape = [nargs["BK"], nargs["BN"]]
    nargs["c_desc"].block_shape = [nargs["BM"], nargs["BN"]]


def space(axes: dict) -> list:
    import triton

    keys = list(axes)
    out = []
    for vals in itertools.product(*axes.values()):
        cfg = dict(zip(keys, vals, strict=True))
        warps = cfg.pop("num_warps")
        out.append(triton.Config(cfg, num_warps=warps, num_stages=cfg["NUM_STAGES"], pre_hook=_blocks))
    return out


def problem(size: int, device: str):
    """The launch's arguments (row-major fp16 A, B; fp16 C) and its grid."""
    import torch
    import triton
    from tlx_kernels.gemm.common import descriptor

    a = torch.randn(size, size, dtype=torch.float16, device=device)
    b = torch.randn(size, size, dtype=torch.float16, device=device)
    c = torch.empty(size, size, dtype=torch.float16, device=device)
    descs = (descriptor(a, [64, 64]), descriptor(b, [64, 64]), descriptor(c, [64, 64]))
    grid = lambda m: (triton.cdiv(size, m["BM"]) * triton.cdiv(size, m["BN"]),)  # noqa: E731
    return (*descs, size, size, size), grid, (a, b)


def child(strategy: str, size: int, smoke: bool) -> dict:
    """One search in this (fresh) process: its wall time, its winner and how many configs it measured."""
    import torch
    from tlx_kernels.gemm.triton_dot import dot_kernel

    import workbench

    device = "cpu" if smoke else "cuda"
    args, grid, (a, b) = problem(size, device)
    t0 = time.perf_counter()
    r = workbench.search(dot_kernel, space(SMOKE if smoke else AXES), *args, grid=grid,
                         reference=None if smoke else (lambda a_d, b_d, c_d, M, N, K: (a_d.base @ b_d.base)),
                         outputs=None if smoke else ["c_desc"], compile_only=smoke, strategy=strategy,
                         progress=False, A_T=False, B_T=False)
    wall = time.perf_counter() - t0
    best = r.best_index
    return {"strategy": strategy, "wall_s": round(wall, 2), "configs": len(r.candidates), "counts": r.counts(),
            "measured": sum(1 for x in r.rows.values() if x.get("status") not in ("skipped", None)),
            "best": None if best is None else {k: v for k, v in r.candidates[best].config.items()},
            "best_ms": None if best is None else r.rows[best].get("ms"), "notes": r.info.get("notes"),
            "device": torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"}


def both_winners(size: int, configs: list[dict]) -> list[float]:
    """The winners timed again in one run, interleaved round by round: each one's median ms."""
    import statistics

    from tlx_kernels.gemm.triton_dot import dot_kernel

    from workbench.measure.interleave import rounds
    from workbench.measure.timing import bench

    runs = {}
    for i, cfg in enumerate(configs):
        args, grid, _ = problem(size, "cuda")  # descriptors of its own: their block shapes are this config's
        kw = dict(cfg)
        _blocks({"a_desc": args[0], "b_desc": args[1], "c_desc": args[2], **kw})
        g = grid(kw)  # the config as the search shows it: its constexprs and launch options (num_warps, ...)
        runs[str(i)] = (lambda args=args, kw=kw, g=g: dot_kernel[g](*args, **kw, A_T=False, B_T=False))
    times = rounds(runs, 9, lambda f: bench(f, warmup_ms=10, rep_ms=50).median_ms)
    return [statistics.median(times[str(i)]) for i in range(len(configs))]


def _fresh(args: list[str]) -> dict:
    d = Path(tempfile.mkdtemp(prefix="search-budgeted-"))
    env = {**os.environ, "TRITON_CACHE_DIR": str(d / "triton"), "TLX_WORKBENCH_CACHE_DIR": str(d / "wb")}
    p = subprocess.run([sys.executable, __file__, "--child", *args], env=env, capture_output=True, text=True,
                       timeout=3000)
    if p.returncode != 0:
        raise RuntimeError(f"{args} failed:\n{p.stderr[-4000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--smoke", action="store_true", help="no GPU: compile-only searches of 8 configs")
    ap.add_argument("--json")
    ap.add_argument("--child", nargs=3, default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        print(json.dumps(child(a.child[0], int(a.child[1]), a.child[2] == "smoke"), default=str))
        return
    size, mode = (256 if a.smoke else a.size), ("smoke" if a.smoke else "gpu")
    runs = {s: _fresh([s, str(size), mode]) for s in ("exhaustive", "budgeted")}
    for s, r in runs.items():
        print(f"{s}: {r['wall_s']} s, {r['measured']} of {r['configs']} measured, best {r['best']} "
              f"{r['best_ms']} ms", flush=True)
    summary = {"wall_ratio": round(runs["budgeted"]["wall_s"] / runs["exhaustive"]["wall_s"], 3)}
    from recordings import versions, write_result

    doc = {"date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "device": runs["exhaustive"]["device"],
           "versions": versions(), "command": " ".join(["python3", "bench/search_budgeted.py", *sys.argv[1:]]),
           "size": size, "axes": SMOKE if a.smoke else AXES, "summary": summary, "runs": runs}
    path = write_result(doc, "search-budgeted" + ("-smoke" if a.smoke else ""), a.json)  # kept if what follows fails
    if not a.smoke and runs["exhaustive"]["best"] and runs["budgeted"]["best"]:
        try:
            exhaustive_ms, budgeted_ms = both_winners(size, [runs["exhaustive"]["best"], runs["budgeted"]["best"]])
            summary.update(exhaustive_winner_ms=exhaustive_ms, budgeted_winner_ms=budgeted_ms,
                           winner_ratio=round(budgeted_ms / exhaustive_ms, 4),
                           target="budgeted winner <= 1.02x, wall <= 0.25x")
        except Exception as e:
            summary["winners_error"] = f"{type(e).__name__}: {e}"
        path.write_text(json.dumps(doc, indent=1, default=str))
    print(json.dumps(summary, indent=1))
    print(path)


if __name__ == "__main__":
    main()
