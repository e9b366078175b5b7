"""The %%tlx magic's own overhead when the kernel is a compile-cache hit (target: under 50 ms).

Runs, in an in-process IPython shell, a cell that defines and launches a kernel, first with
``%%tlx`` and then without it (the same Python, the launch replaced by the ``workbench.compile``
call that the magic makes). Overhead = median(magic cell) - median(plain cell): capture, Report
construction, HTML/text/JSON renderings, display. Usage: python bench/magic_overhead.py [-n 20]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import statistics
import sys
import time
from pathlib import Path

TARGET_MS = 50.0

# the vector add and the TLX cell of the magic tests (tests/sample_kernels.py, tests/magic/cells.py), with their
# launch lines made a placeholder
TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path[:0] = [str(TESTS), str(TESTS / "magic")]
from cells import ADD as _ADD  # noqa: E402
from cells import TLX as _TLX  # noqa: E402

TRITON_CELL = _ADD.rsplit("\n", 2)[0] + "\n{launch}\n"
TRITON_LAUNCH = "vector_add[(triton.cdiv(n, 256),)](x, y, out, n, BLOCK=256)"
TRITON_PLAIN = "workbench.compile(vector_add, x, y, out, n, BLOCK=256)"
TLX_CELL = _TLX.rsplit("\n", 2)[0] + "\n{launch}\n"
TLX_LAUNCH = "ew_kernel[(2,)](x, y, 8192, TILES=4, BLOCK=1024, NUM_BUF=2)"
TLX_PLAIN = "workbench.compile(ew_kernel, x, y, 8192, TILES=4, BLOCK=1024, NUM_BUF=2)"


def _time(ip, cell: str, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            res = ip.run_cell(cell)
        out.append((time.perf_counter() - t0) * 1e3)
        if not res.success:
            raise SystemExit(f"cell failed: {res.error_in_exec or res.error_before_exec!r}")
    return out


def measure(ip, name: str, template: str, launch: str, plain: str, n: int) -> dict:
    magic_cell = "%%tlx\n" + template.replace("{launch}", launch)
    plain_cell = "import workbench\n" + template.replace("{launch}", plain)
    _time(ip, magic_cell, 1)  # compile (a cache miss) and warm up
    _time(ip, plain_cell, 2)
    magic = _time(ip, magic_cell, n)
    base = _time(ip, plain_cell, n)
    m, b = statistics.median(magic), statistics.median(base)
    return {
        "name": name,
        "magic_ms": m,
        "plain_ms": b,
        "overhead_ms": m - b,
        "p90_magic_ms": sorted(magic)[int(0.9 * (len(magic) - 1))],
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", type=int, default=20, help="repetitions per cell (default 20)")
    ap.add_argument("--no-tlx", action="store_true", help="skip the TLX kernel")
    a = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from IPython.core.interactiveshell import InteractiveShell

    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "workbench")
    ip.run_cell(
        "import triton, triton.language as tl, torch\nfrom workbench import tlx\n"
        "from workbench.run.device import detect\nDEVICE = detect().torch_device"
    )
    rows = [measure(ip, "triton vector_add", TRITON_CELL, TRITON_LAUNCH, TRITON_PLAIN, a.n)]
    if not a.no_tlx:
        try:
            rows.append(measure(ip, "tlx ew_kernel", TLX_CELL, TLX_LAUNCH, TLX_PLAIN, a.n))
        except Exception as e:  # the TLX front end is optional
            print(f"(tlx kernel skipped: {type(e).__name__}: {e})")
    from workbench.run.device import detect

    dev = detect()
    print(f"%%tlx overhead on a compile-cache hit ({a.n} runs each; device: {dev.name or 'none: ' + str(dev.reason)})")
    print(f"{'kernel':<20} {'%%tlx cell':>11} {'plain cell':>11} {'overhead':>10} {'p90 %%tlx':>10}")
    ok = True
    for r in rows:
        print(
            f"{r['name']:<20} {r['magic_ms']:>9.2f}ms {r['plain_ms']:>9.2f}ms {r['overhead_ms']:>8.2f}ms "
            f"{r['p90_magic_ms']:>8.2f}ms"
        )
        ok &= r["overhead_ms"] < TARGET_MS
    print(f"target: overhead < {TARGET_MS:.0f} ms -> {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
