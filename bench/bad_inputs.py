"""Issue 25's table: each bad input of the issue (and of the tests) in a real Jupyter kernel, with no GPU.

    python3 bench/bad_inputs.py [--json PATH] [--only TEXT]

Each case runs in a fresh kernel (after ``%load_ext workbench`` and a cell making tensors): the time from sending
the cell to its first error or finding, what the cell said (its error line, or the finding), the cell
line it points at (and the line it should), how the cell ended (ok, error, died, timeout) and whether the kernel
still answers afterwards (a cell reading the tensors it made before). Prints a table and writes JSON (default
bench/results/bad-inputs-<date>.json) with the commit measured and the files under workbench/ that differed from it.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "bench"), str(ROOT / "testbed")]

from recordings import source_tree  # noqa: E402

SETUP = "import torch\nx = torch.randn(1024)\ny = torch.empty(1024)\nh = torch.empty(512, 512, dtype=torch.float16)"
ANSI = re.compile(r"\x1b\[[0-9;]*m")
SAYING = re.compile(r"\s*([A-Z]\w*(Error|Exception)|warning|info|error)\b")

OOB = '''@triton.jit
def k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * 1024 + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs) * 2)

k[(2,)](x, y, 1024, BLOCK=1024)'''
BIG_DOT = '''@triton.jit
def big(a_ptr, b_ptr, c_ptr, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    a = tl.load(a_ptr + r[:, None] * BLOCK + r[None, :])
    b = tl.load(b_ptr + r[:, None] * BLOCK + r[None, :])
    tl.store(c_ptr + r[:, None] * BLOCK + r[None, :], tl.dot(a, b))

big[(1,)](h, h, torch.empty(512, 512), BLOCK=512)'''
SCALE = '''@triton.jit
def scale(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)

'''
LAUNCH = 'scale[lambda m: (triton.cdiv(1024, m["BLOCK"]),)](x, y, 1024, BLOCK=128)'
RING = '''import triton.language.extra.tlx as tlx
from triton.tools.tensor_descriptor import TensorDescriptor

@triton.jit
def ring(x_desc, out_ptr, K, BM: tl.constexpr, BK: tl.constexpr):
    bufs = tlx.local_alloc((BM, BK), tl.float16, 2)
    full = tlx.alloc_barriers(2, arrive_count=1)
    with tlx.async_tasks():
        with tlx.async_task("default"):
            tlx.barrier_expect_bytes(full[0], BM * BK * 2)
            tlx.async_descriptor_load(x_desc, bufs[0], [0, 0], full[0])
        with tlx.async_task(num_warps=4):
            tlx.barrier_wait(full[0], 0)
            offs = tl.arange(0, BM)[:, None] * BK + tl.arange(0, BK)[None, :]
            tl.store(out_ptr + offs, tlx.local_load(bufs[0]))

xs = torch.randn(64, 512, dtype=torch.float16)
ring[(1,)](TensorDescriptor(xs, [64, 512], [512, 1], [64, 64]), torch.empty(64, 48, dtype=torch.float16), 512,
           BM=64, BK=48)'''

# (name, cell, the line the message should point at (cell lines; the %%tlx line is 1), what it must say)
SHAPES = '''@triton.jit
def bad(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    other = tl.arange(0, BLOCK * 2)
    tl.store(x_ptr + offs, offs + other)

bad[(1,)](y, BLOCK=64)'''

CASES = [
    ("out of bounds, --check (interpreter)", '%%tlx --check "y: x * 2"\n' + OOB, 6, "OutOfBoundsError"),
    ("out of bounds, no --check (static)", "%%tlx\n" + OOB, 6, "global-out-of-bounds"),
    ("1 MiB of shared memory (tl.dot 512)", "%%tlx\n" + BIG_DOT, 5, "KiB of shared memory"),
    ("a missing kernel argument", "%%tlx\n" + SCALE + "scale[(8,)](x, y, BLOCK=128)", 7, "missing a required"),
    ("an unknown keyword argument", "%%tlx\n" + SCALE + "scale[(8,)](x, y, 1024, BLOK=128)", 7, "unexpected keyword"),
    ("--sanitize without a GPU", "%%tlx --sanitize memcheck\n" + SCALE + LAUNCH, None, "--sanitize memcheck: not run"),
    ("--check that is not an expression", '%%tlx --check "y: x *"\n' + SCALE + LAUNCH, 1, "not a valid expression"),
    ("--target that does not exist", "%%tlx --target sm_999\n" + SCALE + LAUNCH, 1, "sm_999"),
    ("--search with an empty space", '%%tlx --search "BLOCK=[]"\n' + SCALE + LAUNCH, 1, "empty"),
    ("--search over a key the kernel lacks", '%%tlx --search "BLOK=[64,128]"\n' + SCALE + LAUNCH, 1,
     "does not take"),
    ("--search on an unreachable cluster", '%%tlx --search "BLOCK=[64]" --cluster 127.0.0.1:9\n' + SCALE + LAUNCH, 1,
     "cannot reach the Ray cluster"),
    ("--search with no launch in the cell", '%%tlx --search "BLOCK=[64]"\n' + SCALE, 1, "no kernel launch"),
    ("a Python error in the cell", "%%tlx\n" + SCALE + "undefined_name + 1", 7, "NameError"),
    ("shapes that do not match, in the kernel", "%%tlx\n" + SHAPES, 6, "CompileError"),
    ("an undefined name, in the kernel", "%%tlx\n" + SHAPES.replace("offs + other", "undefined_thing"), 6,
     "CompileError"),
    # a 64x48 fp16 ring slot (48 is no power of two): an assertion in uTLX's C++ op builder aborted the process
    ("a 64x48 fp16 ring slot (uTLX asserts in C++)", "%%tlx\n" + RING, 7, "CompileError"),
    ("--timeout of -3 s", "%%tlx --timeout -3\n" + SCALE + LAUNCH, 1, "needs a number of seconds above 0"),
    ("--flops that is not an expression", "%%tlx --bench --flops '2*('\n" + SCALE + LAUNCH, 1,
     "is not a valid expression"),
    ("--flops without --bench", "%%tlx --flops 2*1024\n" + SCALE + LAUNCH, None, "--flops is ignored"),
    ("a library call on CPU tensors", "%%tlx\nfrom tlx_kernels.gemm import ws_cooperative\nws_cooperative.matmul(h, h)",
     3, "must be on a CUDA GPU"),
]


def _texts(msgs: list[dict]) -> list[str]:
    out = []
    for m in msgs:
        c = m["content"]
        if m["msg_type"] == "error":
            out.append(ANSI.sub("", "\n".join(c.get("traceback") or [c.get("evalue", "")])))
        elif m["msg_type"] == "stream":
            out.append(ANSI.sub("", c["text"]))
        elif m["msg_type"] in ("display_data", "execute_result"):
            out.append(c["data"].get("text/plain", ""))
    return out


def _execute(km, kc, code: str, timeout: float, hook) -> tuple[str, float]:
    """Runs ``code``, passing each output message to ``hook``: ('ok' | 'error' | 'died' | 'timeout', seconds).
    jupyter_client's execute_interactive waits out its timeout when the kernel dies; this asks every half second."""
    import queue

    t0 = time.perf_counter()
    msg_id = kc.execute(code)
    while time.perf_counter() - t0 < timeout:
        try:
            m = kc.get_iopub_msg(timeout=0.5)
        except queue.Empty:
            if not km.is_alive():
                return "died", time.perf_counter() - t0
            continue
        if m["parent_header"].get("msg_id") != msg_id:
            continue
        if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
            reply = kc.get_shell_msg(timeout=10)
            return reply["content"]["status"], time.perf_counter() - t0
        hook(m)
    return "timeout", time.perf_counter() - t0


def run_case(name: str, cell: str, want_line: int | None, says: str) -> dict:
    import jupyter_client

    km, kc = jupyter_client.manager.start_new_kernel(kernel_name="python3")
    row: dict = {"case": name, "expected_line": want_line}
    try:
        kc.execute_interactive("%load_ext workbench\n" + SETUP, timeout=300, output_hook=lambda m: None)
        msgs: list[dict] = []
        first: list[float] = []
        t0 = time.perf_counter()

        def hook(m: dict) -> None:
            msgs.append(m)
            if not first and says in "\n".join(_texts([m])):
                first.append(time.perf_counter() - t0)

        row["outcome"], took = _execute(km, kc, cell, 600, hook)
        row["finished_s"] = round(took, 2)
        text = "\n".join(_texts(msgs))
        row["seconds_to_message"] = round(first[0], 2) if first else None
        said = [ln for ln in text.splitlines() if says in ln]
        errors = [ln for ln in said if SAYING.match(ln)]  # a traceback's error line, not its source lines
        line = errors[-1] if errors else (said[0] if said else "")
        row["message"] = line.strip()[:300] or ("(the kernel died: no message)" if row["outcome"] == "died" else "")
        m = re.search(r"Cell line (\d+)|line (\d+):|File <tlx-cell-[^>]*>:(\d+)", text)
        row["line"] = int(next(g for g in m.groups() if g)) if m else None
        row["right_line"] = want_line is None or row["line"] == want_line
        row["alive"] = km.is_alive() and _execute(km, kc, "assert x.shape[0] == 1024", 60, lambda m: None)[0] == "ok"
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    return row


def _tree() -> dict:
    """The commit measured, and the files under workbench/ that differed from it (others edit this checkout)."""
    import subprocess

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True).stdout.strip()

    return {"commit": source_tree(),
            "uncommitted": git("status", "--porcelain", "--", "workbench").splitlines()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", default=None)
    ap.add_argument("--only", default="", help="run the cases whose name holds this text (nothing written)")
    a = ap.parse_args()
    rows = []
    for name, cell, line, says in [c for c in CASES if a.only in c[0]]:
        row = run_case(name, cell, line, says)
        rows.append(row)
        print(f"{name:42s} {row['seconds_to_message'] if row['seconds_to_message'] is not None else '-':>6} s  "
              f"line {row['line']} ({'ok' if row['right_line'] else 'want ' + str(line)})  "
              f"{'alive' if row['alive'] else 'DEAD'}  {row['outcome']:5s} {row['message'][:90]}", flush=True)
    summary = {"cases": len(rows), "alive": sum(r["alive"] for r in rows),
               "right_line": sum(r["right_line"] for r in rows),
               "said_it": sum(r["seconds_to_message"] is not None for r in rows),
               "within_2s": sum(r["seconds_to_message"] is not None and r["seconds_to_message"] <= 2.0 for r in rows)}
    print(json.dumps(summary))
    if a.only:
        return
    out = {"date": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"), "device": "no GPU (CPU only)",
           "command": " ".join(["python3", "bench/bad_inputs.py", *sys.argv[1:]]), "python": sys.version.split()[0],
           "tree": _tree(),
           "summary": summary, "rows": rows}
    path = a.json or str(ROOT / "bench" / "results" / f"bad-inputs-{dt.date.today().isoformat()}.json")
    Path(path).write_text(json.dumps(out, indent=1))
    print("wrote", path)


if __name__ == "__main__":
    main()
