"""Where the time of an isolated launch goes, on a GPU: Triton alone, ``isolate.launch`` by parts, ``%%tlx``.

    python3 bench/isolation_cost.py [--n 300] [--out PATH]

A small kernel (4 CTAs adding 1 to 4096 floats: microseconds of GPU time) launched and waited for ``--n``
times each way, in this process (an IPython shell for the ``%%tlx`` rows, not a Jupyter kernel):

- ``plain``: ``kernel[grid](...)`` + ``torch.cuda.synchronize()``, Triton alone;
- ``isolate.launch``: the compiled kernel launched in the worker process, with the parts of each launch:
  the notebook's side before the request is sent (argument specs, its own synchronize), the worker's
  rebuilding of the arguments, its launch call, its wait for the GPU, and the messages' round trip;
- ``%%tlx`` isolated and ``%%tlx --no-isolate``: the same loop in a cell, as a user writes it (capture,
  records, replays: what the magic adds per launch);
- ``first_cell``: in fresh processes with empty caches, how long ``%load_ext workbench`` holds the prompt, how long
  its background start takes (imports, isolated worker, Ray and the search's workers: ``workbench.search.warm``),
  and the first isolated ``%%tlx`` cell (the kernel compiled and launched) after it, and right after the prompt.
  ``--first-cell`` measures only this.

Writes ``bench/results/isolation-cost-<date>.json`` (device, date, versions, command, medians and p10/p90).
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CELL_KERNEL = '''
@triton.jit
def add_one(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1.0, mask=mask)
'''
CELL_LOOP = '''
_ts = []
for _i in range(N):
    _t0 = time.perf_counter()
    add_one[(4,)](z, z.numel(), BLOCK=1024)
    torch.cuda.synchronize()
    _ts.append(time.perf_counter() - _t0)
LAST = _ts
'''


def stats(ts: list[float], skip: int = 20) -> dict[str, Any]:
    """Median and p10/p90 in microseconds, without the first ``skip`` (warm-up) samples."""
    from workbench.measure.timing import quantile

    xs = ts[skip:]
    return {"median_us": round(statistics.median(xs) * 1e6, 1), "p10_us": round(quantile(xs, 0.1) * 1e6, 1),
            "p90_us": round(quantile(xs, 0.9) * 1e6, 1), "n": len(xs)}


def plain(kernel: Any, z: Any, n: int) -> dict[str, Any]:
    """The cell's loop (``CELL_LOOP``) in this process, with no magic: Triton alone."""
    import torch

    ns = {"add_one": kernel, "z": z, "N": n, "time": time, "torch": torch}
    exec(CELL_LOOP, ns)
    return stats(ns["LAST"])


def isolated_parts(kernel: Any, z: Any, n: int) -> dict[str, Any]:
    """``isolate.launch`` directly, each launch split into its parts (Outcome's worker-side times)."""
    from workbench.run import isolate

    compiled = kernel.warmup(z, z.numel(), BLOCK=1024, grid=(4,))
    names = list(kernel.arg_names)
    consts = [p.is_constexpr for p in kernel.params]
    values = [z, z.numel(), 1024]
    parts: dict[str, list[float]] = {k: [] for k in ("total", "before_send", "worker_prepare", "worker_launch",
                                                     "worker_wait", "messages")}
    for _ in range(n):
        t0 = time.perf_counter()
        out = isolate.launch(compiled, names, consts, values, (4, 1, 1), key="isolation-cost")
        total = time.perf_counter() - t0
        if not out.ok:
            raise RuntimeError(f"isolated launch failed: {out.status} {out.message}")
        parts["total"].append(total)
        parts["before_send"].append(total - out.total_s)
        parts["worker_prepare"].append(out.prepare_s or 0.0)
        parts["worker_launch"].append(out.launch_s or 0.0)
        parts["worker_wait"].append((out.run_s or 0.0) - (out.launch_s or 0.0))
        parts["messages"].append(out.total_s - (out.run_s or 0.0) - (out.prepare_s or 0.0))
    return {k: stats(v) for k, v in parts.items()}


def magic(n: int) -> dict[str, Any]:
    """The loop in a ``%%tlx`` cell, isolated and in-process, in a real IPython shell."""
    from IPython.core.interactiveshell import InteractiveShell

    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "workbench")
    ip.run_cell("import time, torch, triton\nimport triton.language as tl\n"
                f"N = {n}\nz = torch.zeros(4096, device='cuda')")
    ip.run_cell_magic("tlx", "--compile-only", CELL_KERNEL)
    out = {}
    for label, opts in (("isolated", "--quiet"), ("in_process", "--quiet --no-isolate")):
        ip.run_cell_magic("tlx", opts, CELL_LOOP)
        out[label] = stats(ip.user_ns["LAST"])
    return out


FIRST_CELL = r'''
import json, os, sys, threading, time
from IPython.core.interactiveshell import InteractiveShell
ip = InteractiveShell.instance()
t0 = time.perf_counter()
ip.run_line_magic("load_ext", "workbench")
out = {"load_ext_s": time.perf_counter() - t0}
ip.run_cell("import torch, triton\nimport triton.language as tl\nz = torch.zeros(4096, device='cuda')")
if sys.argv[1] == "after-background":
    from workbench.run import isolate
    from workbench.search import warm
    for th in threading.enumerate():
        if th.name == "workbench-imports":
            th.join(300)
    while warm.status().get("started") and not warm.status()["done"]:
        time.sleep(0.05)
    isolate.shared_worker().ready(isolate.SETUP_S)
    out.update(background_s=time.perf_counter() - t0, warm=warm.status())
t1 = time.perf_counter()
ip.run_cell_magic("tlx", "--quiet", sys.argv[2])
out["first_cell_s"] = time.perf_counter() - t1
out["z_ok"] = bool(ip.user_ns["z"][0].item() == 1.0)
print(json.dumps(out))
'''


def first_cell() -> dict[str, Any]:
    """The first isolated ``%%tlx`` cell of a fresh process with empty caches (Triton's, the workbench's), after
    the background start has finished and right after ``%load_ext`` returned."""
    import os
    import subprocess
    import tempfile

    cell = CELL_KERNEL + "\nadd_one[(4,)](z, z.numel(), BLOCK=1024)\n"
    out = {}
    for when in ("after-background", "at-once"):
        with tempfile.TemporaryDirectory() as tmp:
            env = {**os.environ, "TRITON_CACHE_DIR": f"{tmp}/triton", "TLX_WORKBENCH_CACHE_DIR": f"{tmp}/wb",
                   "TLX_WORKBENCH_WARM": "1"}  # as on any GPU machine (gpu_session.sh turns it off elsewhere)
            p = subprocess.run([sys.executable, "-c", FIRST_CELL, when, cell], capture_output=True, text=True,
                               timeout=600, env=env)
        if p.returncode != 0:
            raise RuntimeError(f"first-cell run ({when}) failed: {p.stderr[-2000:]}")
        out[when] = json.loads(p.stdout.strip().splitlines()[-1])
        print(f"first cell {when}: " + ", ".join(f"{k} {v:.2f} s" for k, v in out[when].items()
                                                 if isinstance(v, float)))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--out", default=None)
    ap.add_argument("--first-cell", action="store_true", help="measure only the first cell of a fresh process")
    args = ap.parse_args(argv)
    import torch
    import triton
    import triton.language as tl

    if not torch.cuda.is_available():
        print("bench/isolation_cost.py needs a CUDA GPU")
        return 2

    @triton.jit
    def add_one(x_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1.0, mask=mask)

    from workbench.run import isolate

    isolate.shared_worker().ready(isolate.SETUP_S)
    z = torch.zeros(4096, device="cuda")
    doc: dict[str, Any] = {"device": torch.cuda.get_device_name(), "date": dt.datetime.now(dt.UTC).isoformat(),
                           "torch": torch.__version__, "triton": triton.__version__,
                           "command": " ".join(["python3", "bench/isolation_cost.py", *sys.argv[1:]]), "n": args.n}
    doc["first_cell"] = first_cell()
    if args.first_cell:
        path = Path(args.out or ROOT / "bench" / "results" / f"first-cell-{dt.date.today().isoformat()}.json")
        path.write_text(json.dumps(doc, indent=1))
        print(f"wrote {path}")
        return 0
    doc["plain"] = plain(add_one, z, args.n)
    doc["isolate_launch"] = isolated_parts(add_one, z, args.n)
    doc["magic"] = magic(args.n)
    doc["z_ok"] = bool(torch.all(z >= args.n * 2).item())
    for k, v in doc["isolate_launch"].items():
        print(f"isolate.launch {k:<15} {v['median_us']:8.1f} us  (p10 {v['p10_us']}, p90 {v['p90_us']})")
    print(f"plain Triton            {doc['plain']['median_us']:8.1f} us")
    for k, v in doc["magic"].items():
        print(f"%%tlx {k:<18} {v['median_us']:8.1f} us  (p10 {v['p10_us']}, p90 {v['p90_us']})")
    path = Path(args.out or ROOT / "bench" / "results" / f"isolation-cost-{dt.date.today().isoformat()}.json")
    path.write_text(json.dumps(doc, indent=1))
    print(f"wrote {path}")
    isolate.shared_worker().close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
