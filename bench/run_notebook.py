"""Execute a notebook with nbclient and save the executed copy (used on the GPU machine).

    python bench/run_notebook.py tutorials/01-producer-consumer-gemm.ipynb OUT_DIR [--timeout 300]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("notebook")
    ap.add_argument("out_dir")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per cell")
    args = ap.parse_args()
    import nbclient
    import nbformat

    path = Path(args.notebook)
    nb = nbformat.read(path, as_version=4)
    t0 = time.time()
    client = nbclient.NotebookClient(nb, timeout=args.timeout, kernel_name="python3",
                                     resources={"metadata": {"path": str(path.parent)}})
    rc = 0
    try:
        client.execute()
    except nbclient.exceptions.CellExecutionError as e:
        print(f"cell failed: {e}"[:4000])
        rc = 1
    out = Path(args.out_dir) / path.name
    out.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(nb, out)
    print(f"executed {path} in {time.time() - t0:.1f} s -> {out}")
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            text = o.get("text") or o.get("data", {}).get("text/plain", "")
            if text:
                print(str(text)[:600])
    return rc


if __name__ == "__main__":
    sys.exit(main())
