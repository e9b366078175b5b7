"""Run the GPU-marked tests and record the outcome of each one as JSON.

    python3 bench/gpu_tests.py [--tree REV] [--json PATH] [pytest args ...]

Runs ``pytest -m gpu tests`` in this process (extra arguments go to pytest) and writes
bench/results/gpu-tests-DATE.json: date, device, versions, the command, the source tree it ran on
(``--tree``, else ``$WB_TREE``, else ``git rev-parse``: on the device machine a stale .git may answer), the
counts, and every test's id, outcome and duration, with the failure text of those that failed and what a test
measured (``record_property``); rewritten after
each test (``finished`` says whether pytest got to its end). Exits with pytest's status.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, "bench"), os.path.join(ROOT, "testbed")]

from recordings import source_tree  # noqa: E402


class Recorder:
    """pytest plugin: one row per test (the call phase, or setup when it failed or skipped there), the JSON
    rewritten after each one (a run that is killed, or ends itself on a hung test, keeps what ran)."""

    def __init__(self, doc: dict, path: str) -> None:
        self.rows: dict[str, dict] = {}
        self.doc, self.path, self.t0 = doc, path, time.perf_counter()

    def pytest_runtest_logreport(self, report) -> None:
        if report.when != "call" and not (report.failed or report.skipped):
            return
        row = dict(test=report.nodeid, outcome=report.outcome, seconds=round(report.duration, 3))
        if report.failed:
            row["failure"] = str(report.longreprtext)[-3000:]
        elif report.skipped and isinstance(report.longrepr, tuple):
            row["reason"] = report.longrepr[2]
        if report.user_properties:  # what a test measured (pytest's record_property)
            row["measured"] = dict(report.user_properties)
        self.rows.setdefault(report.nodeid, row)
        self.write()

    def write(self, status: int | None = None) -> None:
        rows = sorted(self.rows.values(), key=lambda r: r["test"])
        counts: dict[str, int] = {}
        for r in rows:
            counts[r["outcome"]] = counts.get(r["outcome"], 0) + 1
        self.doc.update(exit_status=status, finished=status is not None, counts=counts,
                        wall_s=round(time.perf_counter() - self.t0, 1), tests=rows)
        with open(self.path, "w") as f:
            json.dump(self.doc, f, indent=2)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tree", default=None)
    ap.add_argument("--json", default=None)
    args, extra = ap.parse_known_args(argv)

    import pytest
    import torch
    import triton

    pytest_args = ["-q", "-m", "gpu", "-p", "no:cacheprovider", *(extra or ["tests"])]
    now = dt.datetime.now(dt.UTC)
    path = args.json or os.path.join(ROOT, "bench", "results", f"gpu-tests-{now:%Y-%m-%d}.json")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    doc = dict(
        date=now.isoformat(timespec="seconds"),
        device=torch.cuda.get_device_name() if torch.cuda.is_available() else "no CUDA GPU",
        torch=torch.__version__,
        triton=triton.__version__,
        python=platform.python_version(),
        command="python3 bench/gpu_tests.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        pytest_args=pytest_args,
        tree=source_tree(args.tree) or "unknown",
    )
    rec = Recorder(doc, path)
    status = int(pytest.main(pytest_args, plugins=[rec]))
    rec.write(status)
    print(f"gpu tests: {doc['counts']} in {doc['wall_s']:.0f} s; wrote {os.path.relpath(path, ROOT)}")
    return status


if __name__ == "__main__":
    sys.exit(main())
