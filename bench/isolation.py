"""Isolated runs on a GPU, in a real notebook: execute bench/notebooks/isolation.ipynb with nbclient.

    python3 bench/isolation.py [--out PATH] [--deadline-s 230]

Cases (each recorded, none can stop the others from being written):
- hang: a %%tlx cell whose TLX ring never releases a slot returns an error within its --timeout (3 s)
  + 5 s; the next cell finds the notebook's tensors intact and launches again;
- fault: the same for an out-of-bounds store;
- race: racecheck (and ConSan, synccheck) on a deliberate slot-reuse race report it at its line;
  memcheck on the out-of-bounds store; racecheck and ConSan on the correct ring (false positives?);
  ConSan on the hanging ring (a deadlock report instead of a hang?);
- cost: median wall time per launch of a small kernel (launch + wait, 200 launches): isolated vs
  in the notebook's process vs Triton alone.

Writes bench/results/isolation-DATE.json (device, date, versions, command, cases, the notebook's own
record) and, with $WB_OUT, the executed notebook there. About 2-3 minutes on an H200; a global
deadline (--deadline-s) stops cell execution in time to write the results. Needs nbclient, nbformat,
jupyter_client, ipykernel (and IPython, pyzmq, tornado, ...) besides torch and triton.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from run_notebook import cell_facts  # noqa: E402

NOTEBOOK = ROOT / "bench" / "notebooks" / "isolation.ipynb"
HANG_TIMEOUT_S = 3.0


def execute(nb, deadline: float) -> list[str]:
    """Run the notebook cell by cell under a global deadline; returns what went wrong (if anything)."""
    import nbclient

    problems: list[str] = []
    client = nbclient.NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=False,
                                     resources={"metadata": {"path": str(ROOT)}})
    with client.setup_kernel():
        for i, cell in enumerate(nb.cells):
            if cell.cell_type != "code":
                continue
            left = deadline - time.time()
            if left < 5:
                problems.append(f"deadline: cell {i} and later not run")
                break
            client.timeout = int(max(5, min(240, left)))
            try:
                client.execute_cell(cell, i)
            except Exception as e:  # a cell that was not meant to fail, or a timeout: record, go on
                problems.append(f"cell {i}: {type(e).__name__}: {str(e)[-1500:]}")
    return problems


def cases(record: dict, cells: list[dict]) -> list[dict]:
    c = record.get("cases", {})
    hang_cell = next((r for r in cells if "--timeout 3" in r["first_line"]), {})
    fault_cell = next((r for r in cells if r["first_line"].strip() == "%%tlx"), {})
    out = []
    ok_checks = c.get("correct_ring", {}).get("checks") or []
    out.append({"case": "correct ring, isolated, --check", "ok": bool(ok_checks) and all(
        k.get("status") == "passed" for k in ok_checks), "detail": c.get("correct_ring")})
    for name, cell, want in (("hang", hang_cell, "KernelHangError"), ("fault", fault_cell, "KernelFaultError")):
        after = c.get(f"after_{name}", {})
        secs = cell.get("seconds")
        ok = bool(cell.get("error", "") and cell["error"].startswith(want) and after.get("next_launch_ok")
                  and after.get("intact") and c.get(name, {}).get("intact"))
        if name == "hang":
            ok = ok and secs is not None and secs < HANG_TIMEOUT_S + 5
        out.append({"case": f"{name}: error on its cell, next cell runs, tensors intact", "ok": ok,
                    "cell_seconds": secs, "limit_s": HANG_TIMEOUT_S + 5 if name == "hang" else None,
                    "error": cell.get("error"), "after": after, "during": c.get(name)})
    for key, v in c.items():
        if key.startswith("sanitize_"):
            out.append({"case": key, "ok": v.get("hit") if v.get("want_lines") else None, **v})
    if "cost" in c:
        out.append({"case": "cost per launch", "ok": bool(c["cost"].get("z_ok")), **c["cost"]})
    return out


def table(rows: list[dict]) -> str:
    lines = [f"{'case':58} {'ok':>5}  detail"]
    for r in rows:
        if r["case"] == "cost per launch":
            d = ", ".join(f"{k} {r[k].get('median_us', float('nan')):.0f} us" for k in ("isolated", "in_process",
                                                                                    "plain_triton")
                          if isinstance(r.get(k), dict) and "median_us" in r[k])
        elif r["case"].startswith("sanitize_"):
            lines_hit = [f.get("line") for f in r.get("findings") or []]
            d = (r.get("skipped") or f"{r.get('seconds', 0):.1f} s, want {r.get('want_lines')}, findings at "
                 f"{lines_hit}, {(r.get('error') or '')[:60]}")
        else:
            d = f"cell {r.get('cell_seconds')} s" if "cell_seconds" in r else ""
        lines.append(f"{r['case'][:58]:58} {str(r['ok']):>5}  {d}")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=None, help="results JSON (default bench/results/isolation-DATE.json)")
    ap.add_argument("--deadline-s", type=float, default=230.0, help="stop running cells after this many seconds")
    ap.add_argument("--cpu-dry-run", action="store_true",
                    help="run the notebook on the CPU (nothing launches: checks the notebook and this script)")
    args = ap.parse_args()
    t0 = time.time()
    date = dt.datetime.now(dt.UTC)
    out = Path(args.out or ROOT / "bench" / "results" / f"isolation-{date:%Y-%m-%d}.json")
    result: dict = {"date": date.isoformat(), "command": "python3 " + " ".join(sys.argv),
                    "python": platform.python_version(), "notebook": str(NOTEBOOK.relative_to(ROOT))}
    try:
        import torch
        import triton

        result.update(device=torch.cuda.get_device_name() if torch.cuda.is_available() else "no GPU",
                      torch=torch.__version__, triton=triton.__version__)
    except Exception as e:
        result["setup_error"] = f"{type(e).__name__}: {e}"
    nb_out = Path(tempfile.mkdtemp(prefix="wb-isolation-")) / "record.json"
    os.environ.update(WB_ISOLATION_NB_OUT=str(nb_out), WB_ISOLATION_BUDGET_S=str(args.deadline_s - 60),
                      TLX_WORKBENCH_SANITIZE_SETUP_S="60", TLX_WORKBENCH_SANITIZE_TIMEOUT_S="60",
                      WB_ISOLATION_DEVICE="cpu" if args.cpu_dry_run else "cuda")
    nb = None
    try:
        import nbformat

        nb = nbformat.read(NOTEBOOK, as_version=4)
        result["problems"] = execute(nb, t0 + args.deadline_s)
    except Exception:
        result["problems"] = [traceback.format_exc()[-3000:]]
    record = json.loads(nb_out.read_text()) if nb_out.exists() else {}
    cells = cell_facts(nb) if nb is not None else []
    result.update(cells=cells, cases=cases(record, cells), notebook_record=record, wall_s=round(time.time() - t0, 1))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1, default=str))
    if nb is not None and os.environ.get("WB_OUT"):
        import nbformat

        nbformat.write(nb, Path(os.environ["WB_OUT"]) / "isolation.executed.ipynb")
    print(table(result["cases"]))
    for p in result["problems"]:
        print("problem:", p[:500])
    print(f"wrote {out} in {result['wall_s']} s")
    return 0 if all(r["ok"] is not False for r in result["cases"]) and result["cases"] else 1


if __name__ == "__main__":
    sys.exit(main())
