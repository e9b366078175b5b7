"""``tlx-workbench``: the command line.

    tlx-workbench eval SPEC [--json OUT] [--trials N] [--cluster ADDRESS] [--quiet]

``eval`` runs ``workbench.evaluate`` on the candidates a spec file names (JSON, or TOML by its suffix):

    {"reference": "ref.py:reference",          # callable(*inputs) -> the right output(s)
     "inputs": "ref.py:make_inputs",           # callable(shape, seed, device) -> tuple of the call's arguments
     "shapes": [[4096, 4096, 4096], [1000, 1000, 999]],
     "candidates": ["agent/*.py:kernel", "mine.py:matmul"],
     "trials": 5, "atol": null, "rtol": null, "rounds": 3, "timeout_s": 120, "target": "sm_90", "seed": 0}

Paths are relative to the spec file; a candidate path may be a glob. One JSON line per candidate goes to
``--json`` (default: SPEC with ``.jsonl``) as each finishes; the exit status is 0 when every candidate passed,
1 when one did not, 2 for a spec that cannot work.
"""

from __future__ import annotations

import argparse
import glob
import json
import sys
from pathlib import Path
from typing import Any

__all__ = ["main"]

_KEYS = {"reference", "inputs", "shapes", "candidates", "trials", "atol", "rtol", "rounds", "timeout_s", "target",
         "seed", "skip_on_error"}


def _load_spec(path: Path) -> dict[str, Any]:
    text = path.read_text()
    if path.suffix == ".toml":
        import tomllib

        spec = tomllib.loads(text)
    else:
        spec = json.loads(text)
    unknown = set(spec) - _KEYS
    if unknown:
        raise ValueError(f"{path}: unknown keys {sorted(unknown)} (known: {sorted(_KEYS)})")
    for key in ("reference", "inputs", "shapes", "candidates"):
        if key not in spec:
            raise ValueError(f"{path}: '{key}' is missing")
    return spec


def _resolve(entry: str, base: Path) -> list[str]:
    where, _, name = entry.rpartition(":")
    if not where.endswith(".py"):
        return [entry]  # module:name
    pattern = where if Path(where).is_absolute() else str(base / where)
    found = sorted(glob.glob(pattern))
    if not found:
        raise ValueError(f"{entry}: no file matches {pattern}")
    return [f"{f}:{name}" for f in found]


def _eval(args: argparse.Namespace) -> int:
    from workbench.errors import WorkbenchError
    from workbench.search.evaluate import evaluate

    path = Path(args.spec)
    try:
        spec = _load_spec(path)
        base = path.resolve().parent
        cands = [c for entry in spec.pop("candidates") for c in _resolve(entry, base)]
        ref = _resolve(spec.pop("reference"), base)[0]
        make = _resolve(spec.pop("inputs"), base)[0]
    except (OSError, ValueError) as e:
        print(f"tlx-workbench eval: {e}", file=sys.stderr)
        return 2
    if args.trials is not None:
        spec["trials"] = args.trials
    out = Path(args.json) if args.json else path.with_suffix(".jsonl")
    try:
        result = evaluate(cands, reference=ref, inputs=make, json_path=out, cluster=args.cluster,
                          progress=not args.quiet, **spec)
    except WorkbenchError as e:
        print(f"tlx-workbench eval: {e}", file=sys.stderr)
        return 2
    print(result)
    print(f"rows: {out}")
    return 0 if all(r["status"] == "passed" for r in result.rows) else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="tlx-workbench", description="TLX Workbench on the command line")
    sub = parser.add_subparsers(dest="command", required=True)
    ev = sub.add_parser("eval", help="judge and time candidate kernels against a reference (workbench.evaluate)")
    ev.add_argument("spec", help="a JSON or TOML file: reference, inputs, shapes, candidates, trials, ...")
    ev.add_argument("--json", help="where the JSON lines go (default: SPEC with .jsonl)")
    ev.add_argument("--trials", type=int, help="fresh seeds per shape (overrides the spec)")
    ev.add_argument("--cluster", help="a Ray address (default: RAY_ADDRESS or a local cluster)")
    ev.add_argument("--quiet", action="store_true", help="no progress lines")
    args = parser.parse_args(argv)
    return _eval(args)


if __name__ == "__main__":
    sys.exit(main())
