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
    ap.add_argument("--summary", default=None, help="write the text outputs and run facts as JSON here")
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
    texts = []
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            text = o.get("text") or o.get("data", {}).get("text/plain", "")
            if text:
                texts.append(str(text)[:4000])
                print(str(text)[:600])
    if args.summary:
        import datetime as dt
        import json
        import platform

        import torch
        import triton

        Path(args.summary).parent.mkdir(parents=True, exist_ok=True)
        Path(args.summary).write_text(json.dumps({
            "date": dt.datetime.now(dt.UTC).isoformat(),
            "device": torch.cuda.get_device_name() if torch.cuda.is_available() else "no GPU",
            "torch": torch.__version__, "triton": triton.__version__, "python": platform.python_version(),
            "command": "python " + " ".join(sys.argv), "notebook": str(path), "ok": rc == 0,
            "seconds": time.time() - t0, "text_outputs": texts,
        }, indent=1))
    return rc


if __name__ == "__main__":
    sys.exit(main())
