"""The notebook of Meta's Hopper TLX tutorials through ``%%tlx`` cells (``bench/notebooks/meta_tutorials.ipynb``):
its cells (``build_notebook``: a setup, the cuBLAS / SDPA baselines, one ``%%tlx`` cell per tutorial and shape, a
summary) and ``execute`` (a fresh ipykernel). ``bench/meta_tutorials.py`` runs it on a GPU and tabulates it;
tests/magic/test_notebook_tlx.py checks that the committed notebook is this one and executes it without a GPU."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

NOTEBOOK = ROOT / "bench" / "notebooks" / "meta_tutorials.ipynb"
GEMMS = ["hopper_gemm_pipelined", "hopper_gemm_ws", "hopper-persistent-gemm-ws-cooperative",
         "hopper-persistent-gemm-ws-pingpong"]
ATTENTION = ["hopper_fa_ws", "hopper_fa_ws_pipelined", "hopper_fa_ws_pipelined_pingpong",
             "hopper_fa_ws_pipelined_pingpong_persistent"]
GEMM_SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192)]
FA_SHAPE = (4, 32, 4096, 128)

# ------------------------------------------------------------------------------------------ the notebook
INTRO = """# Meta's Hopper TLX tutorials through `%%tlx`

Each cell below runs one of Meta's TLX tutorials **unmodified**, from the installed `triton-utlx` wheel
(`tlx/tutorials/*.py` in site-packages, imported by `tlx_kernels.meta_tutorials.load`), by calling the
tutorial's own host function inside a `%%tlx` cell: the workbench captures the launch, shows the Report
(stages, source maps, tasks), checks the output against an fp32 torch result (`--check`) and times the
kernel against cuBLAS / torch SDPA in the same cell (`--bench --bench-ref`).

Without a Hopper GPU the same cells compile each tutorial's main kernel from CPU arguments with one of
its own autotune configs (`meta.case(name).compile()`), so the notebook runs anywhere.
`python bench/meta_tutorials.py` executes it and writes `bench/results/meta-tutorials-<device>-<date>.json`."""

SETUP = '''import functools
import json
import os
import platform
import sys
from importlib.metadata import version

import torch
import triton
from tlx_kernels import meta_tutorials as meta
from torch.nn.attention import SDPBackend

from workbench.measure import bench

GPU = torch.cuda.is_available() and torch.cuda.get_device_capability()[0] == 9  # Hopper: run; else compile
GEMM_DTYPE, FA_DTYPE = torch.float16, torch.bfloat16  # the Hopper GEMM tutorials write fp16 output
ROWS_PATH = os.environ.get("META_TUTORIALS_ROWS")  # where bench/meta_tutorials.py reads the rows
TLX_FLAGS = os.environ.get("META_TUTORIALS_TLX_FLAGS", "")  # more %%tlx options (e.g. --no-isolate)
ENV = {"device": torch.cuda.get_device_name() if torch.cuda.is_available() else "no GPU (compile only)",
       "gpu_run": GPU, "torch": torch.__version__, "triton": triton.__version__, "python": platform.python_version(),
       "tutorials": str(meta.tutorial_dir())}
try:
    ENV["triton_utlx"] = version("triton-utlx")
except Exception:  # a copied package without its dist-info
    ENV["triton_utlx"] = None
ROWS = []
if GPU:  # some tutorials' host functions leave the allocator to the caller
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))


def save():
    if ROWS_PATH:
        with open(ROWS_PATH, "w") as f:
            json.dump({"env": ENV, "rows": ROWS}, f, indent=1, default=str)


def _error():
    """The exception of the last failed cell (IPython keeps it in sys.last_value), then forget it."""
    exc = getattr(sys, "last_value", None)
    for name in ("last_type", "last_value", "last_traceback", "last_exc"):
        if hasattr(sys, name):
            delattr(sys, name)
    return None if exc is None else f"{type(exc).__name__}: {str(exc)[:800]}"


def record(tutorial, kind, shape, var):
    """One row from the Report a %%tlx cell stored in `var` (none when the cell failed before making one)."""
    rep, error = globals().get(var), _error()
    row = {"tutorial": tutorial, "kind": kind, "shape": list(shape), "report": var,
           "dtype": str(GEMM_DTYPE if kind == "gemm" else FA_DTYPE).replace("torch.", ""), "error": error}
    if rep is not None:
        run = rep.runs[-1] if rep.runs else {}
        check = (run.get("checks") or [{}])[0]
        m = next((x for x in rep.measurements if x.get("kind") == "bench"), {})
        t, r, md = m.get("timing") or {}, m.get("reference") or {}, rep.metadata
        consts = {a["name"]: a.get("value") for a in run.get("arguments", []) if a.get("kind") == "constexpr"}
        row.update(kernel=rep.name, mode=run.get("mode"), ran=run.get("ran"), grid=run.get("grid"), config=consts,
                   isolation=(run.get("isolation") or {}).get("mode"), check=check.get("status"),
                   check_fresh=(check.get("fresh") or {}).get("status"),
                   check_after_bench=(check.get("after_bench") or {}).get("status"), check_message=check.get("message"),
                   max_abs_err=check.get("max_abs_err"), max_rel_err=check.get("max_rel_err"),
                   median_ms=t.get("median_ms"), tflops=t.get("tflops"), stable=t.get("stable"),
                   ref_median_ms=r.get("median_ms"), ref_tflops=r.get("tflops"), ratio_vs_ref=m.get("ratio"),
                   bench_status=m.get("status"), bench_reason=m.get("reason"),
                   registers=md.get("registers"), spills=md.get("spills"), shared_bytes=md.get("shared_bytes"),
                   tasks=[[t_["num_warps"], t_["registers"]] for t_ in md.get("tasks", [])])
    ok = rep is not None and (row.get("check") == "passed" and row.get("bench_status") == "ok" if GPU else True)
    row["status"] = "ok" if ok else ("error" if rep is None else "check " + str(row.get("check")))
    ROWS.append(row)
    save()
    print({k: row.get(k) for k in ("tutorial", "shape", "status", "check", "median_ms", "tflops", "ratio_vs_ref")})


save()
print(ENV)'''

BASELINES = '''# cuBLAS (torch.matmul) and torch SDPA, timed as --bench times the tutorials (workbench.measure.bench)
def time_baseline(name, kind, shape, fn):
    row = {"tutorial": name, "kind": "baseline-" + kind, "shape": list(shape), "status": "skipped"}
    try:
        res = bench(fn, flops=meta.flops(kind, shape), name=name)
        row.update(status="ok", median_ms=res.median_ms, tflops=res.tflops, stable=res.stable, method=res.method)
    except Exception as e:  # e.g. a backend this torch build lacks
        row.update(status="error", error=f"{type(e).__name__}: {str(e)[:300]}")
    ROWS.append(row)
    print({k: row.get(k) for k in ("tutorial", "shape", "status", "median_ms", "tflops")})


if GPU:
    for shape in meta.GEMM_SHAPES:
        a, b = meta.inputs("gemm", shape, GEMM_DTYPE)
        time_baseline("cuBLAS", "gemm", shape, functools.partial(meta.baseline, "gemm", a, b))
    q, k, v = meta.inputs("attention", meta.FA_SHAPE, FA_DTYPE)
    backends = [("torch SDPA", None), ("SDPA flash", SDPBackend.FLASH_ATTENTION),
                ("SDPA cuDNN", SDPBackend.CUDNN_ATTENTION), ("SDPA efficient", SDPBackend.EFFICIENT_ATTENTION)]
    for label, backend in backends:
        time_baseline(label, "attention", meta.FA_SHAPE,
                      functools.partial(meta.baseline, "attention", q, k, v, backend=backend))
    del a, b, q, k, v
    save()
else:
    print("no Hopper GPU: baselines not timed; the cells below compile each tutorial's kernel only")'''

SUMMARY = '''for row in ROWS:
    print(f"{row['tutorial']:44} {'x'.join(map(str, row['shape'])):16} {row['status']:14} "
          f"{row.get('median_ms') or float('nan'):9.3f} ms {row.get('tflops') or float('nan'):7.1f} TFLOP/s")
save()'''


def var_name(name: str, shape: tuple) -> str:
    return "rep_" + re.sub(r"\W", "_", name) + f"_{shape[0] if len(shape) == 3 else shape[2]}"


def tutorial_cells(name: str, kind: str, shape: tuple) -> tuple[str, str]:
    """Two cells per tutorial and shape. A plain one: the module, inputs, the fp32 reference and one call of
    the host function, so the tutorial's own autotuning (if any) runs outside ``%%tlx`` and the ``%%tlx``
    cell's Report and timing are of the config it picked. Then the ``%%tlx`` cell: the host function again
    on a GPU; without one, its kernel compiled with one of its own configs."""
    from tlx_kernels.meta_tutorials import HOSTS

    host = HOSTS[name]
    if kind == "gemm":
        opts = (f'--check "c: meta.reference(\'gemm\', a, b)" --atol 1e-2 --rtol 1e-2 --bench '
                f'--bench-ref "torch.matmul(a, b)" --flops "2*{shape[0]}*{shape[1]}*{shape[2]}"')
        config = f', config=meta.host_config("{name}")' if host.pass_config else ""
        prep = [f'a, b = meta.inputs("gemm", {shape}, GEMM_DTYPE)']
        call = f"c = mod.{host.function}(a, b{config})"
        cpu = f'meta.case("{name}", shape={shape}).compile()'
    else:
        opts = (f'--check "o: meta.reference(\'attention\', q, k, v)" --atol 1e-2 --rtol 1e-2 --bench '
                f'--bench-ref "meta.baseline(\'attention\', q, k, v)" '
                f'--flops "4*{shape[0]}*{shape[1]}*{shape[2]}*{shape[2]}*{shape[3]}"')
        prep = [f'q, k, v = meta.inputs("attention", {shape}, FA_DTYPE)']
        call = f"o = mod.{host.function}(q, k, v, meta.SM_SCALE)"
        cpu = f'meta.case("{name}", shape={shape}, dtype=FA_DTYPE).compile()'
    plain = [f'mod = meta.load("{name}")  # Meta\'s file from the wheel, unmodified',
             "if GPU:  # inputs and a first call: the tutorial's own autotuning (if it tunes) runs here",
             *("    " + x for x in prep), "    " + call]
    tlx = [f"%%tlx {{TLX_FLAGS}} {opts} -o {var_name(name, shape)}", "if GPU:",
           f"    {call}  # the tutorial's own host function",
           "else:  # no Hopper GPU: compile its kernel with one of its own autotune configs", "    " + cpu]
    return "\n".join(plain), "\n".join(tlx)


def build_notebook():
    import nbformat

    v4 = nbformat.v4
    cells = [v4.new_markdown_cell(INTRO), v4.new_code_cell("%load_ext workbench", metadata={"name": "load"}),
             v4.new_code_cell(SETUP, metadata={"name": "setup"}),
             v4.new_code_cell(BASELINES, metadata={"name": "baselines"})]
    jobs = [(n, "gemm", s) for n in GEMMS for s in GEMM_SHAPES] + [(n, "attention", FA_SHAPE) for n in ATTENTION]
    for name, kind, shape in jobs:
        plain, tlx = tutorial_cells(name, kind, shape)
        cells.append(v4.new_code_cell(plain, metadata={"name": f"prepare {name} {shape}"}))
        cells.append(v4.new_code_cell(tlx, metadata={"name": f"{name} {shape}"}))
        cells.append(v4.new_code_cell(f'record("{name}", "{kind}", {shape},\n       "{var_name(name, shape)}")',
                                      metadata={"name": f"record {name} {shape}"}))
    cells.append(v4.new_code_cell(SUMMARY, metadata={"name": "summary"}))
    nb = v4.new_notebook(cells=cells)
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    return nb


# ------------------------------------------------------------------------------------------ running it
def execute(path: Path, cell_timeout: int, rows_path: Path) -> tuple[object, float, str | None]:
    """Execute the notebook in a fresh ipykernel (cwd: the repository root); a failing cell does not stop
    it (each records its error), a cell past ``cell_timeout`` or a dead kernel does."""
    import nbclient
    import nbformat

    nb = nbformat.read(path, as_version=4)
    os.environ["META_TUTORIALS_ROWS"] = str(rows_path)  # the kernel inherits it
    client = nbclient.NotebookClient(nb, timeout=cell_timeout, kernel_name="python3", allow_errors=True,
                                     record_timing=True, resources={"metadata": {"path": str(ROOT)}})
    t0, stopped = time.perf_counter(), None
    try:
        client.execute()
    except Exception as e:  # CellTimeoutError, DeadKernelError, ...
        stopped = f"{type(e).__name__}: {str(e)[:1000]}"
    return nb, time.perf_counter() - t0, stopped
