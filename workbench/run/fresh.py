"""``--check`` that a stale output cannot pass: the cell's launches run again on fresh random inputs,
their outputs poisoned with NaN first, and the reference is evaluated again on those inputs.

The rule, for a check ``ACTUAL: EXPECTED`` (a cell creates its own tensors, so the inputs are the
tensors the reference names):

- outputs: the tensors ACTUAL evaluates to. Each must share storage with an argument of a launch in
  the cell (else this check is not re-run: a value the cell computed from a kernel's output is not
  the output). They are filled with NaN (integers: the dtype's minimum; booleans are left alone).
- inputs: the floating-point tensors named in EXPECTED (names and attribute chains) that share
  storage with a launch argument and are not outputs. They get random values in place: normal, with
  the original's mean and standard deviation (non-negative data stays non-negative). Integer and
  boolean tensors keep their values (indices, lengths, masks).
- every launch of the cell runs again, in order (at most ``MAX_REPLAYS``), the same way it ran (in the
  worker, in-process, or in Triton's interpreter); EXPECTED is evaluated again and compared with
  ACTUAL with the same tolerances.
- then every tensor that was changed gets its values back: the notebook is left as the cell left it.

A kernel that reads its own output (an accumulation into it, an in-place update) fails against a
NaN-poisoned output: ``--no-fresh`` checks only what the cell produced.
"""

from __future__ import annotations

import ast
import random
from typing import Any

from workbench.run.launch_record import poison_, refill_, storage_key, tensors_in
from workbench.run.verify import CheckSpec, evaluate, skipped

__all__ = ["combine", "fresh_checks"]


def _names(expr: str, ns: dict[str, Any]) -> list[tuple[str, Any]]:
    """(text, value) of the names and attribute chains in ``expr`` that the namespace holds."""
    out: list[tuple[str, Any]] = []
    for node in ast.walk(ast.parse(expr, mode="eval")):
        chain, cur = [], node
        while isinstance(cur, ast.Attribute):
            chain.append(cur.attr)
            cur = cur.value
        if not isinstance(cur, ast.Name) or cur.id not in ns:
            continue
        value = ns[cur.id]
        try:
            for attr in reversed(chain):
                value = getattr(value, attr)
        except Exception:
            continue
        out.append((ast.unparse(node), value))
    return out


def _plan(spec: CheckSpec, ns: dict[str, Any], arg_keys: set) -> tuple[list[Any], str | None]:
    try:
        value = eval(compile(spec.actual, "<--check>", "eval"), ns)  # noqa: S307 - the user's own expression
    except Exception as e:
        return [], f"{spec.actual} cannot be evaluated: {type(e).__name__}: {e}"
    outs = tensors_in(value)
    if not outs:
        return [], f"{spec.actual} is not a tensor"
    if any(storage_key(t) not in arg_keys for t in outs):
        return [], (f"{spec.actual} is not an argument of a launch in this cell (a value computed from one?): "
                    "check the kernel's output tensor itself")
    return outs, None


def _skip(spec: CheckSpec, why: str) -> dict[str, Any]:
    d = skipped(spec, f"fresh-input re-run not done: {why}")
    d["run"] = "fresh"
    return d


def fresh_checks(specs: list[CheckSpec], ns: dict[str, Any], sequence: list[Any], *, atol: float | None = None,
                 rtol: float | None = None, seed: int | None = None, max_replays: int = 64,
                 tf32: bool = False) -> list[dict[str, Any] | None]:
    """The fresh-input, NaN-poisoned re-run of the cell's launches: one result per spec (None for a
    boolean-expression check, which names no output)."""
    results: list[dict[str, Any] | None] = [None] * len(specs)
    comparisons = [i for i, s in enumerate(specs) if s.actual is not None]
    if not comparisons or not sequence:
        return results
    if len(sequence) > max_replays:
        for i in comparisons:
            results[i] = _skip(specs[i], f"the cell made more than {max_replays} launches")
        return results
    arg_keys = {storage_key(t) for r in sequence for t in r.tensors}
    outputs: dict[int, tuple[str, Any]] = {}
    planned = []
    for i in comparisons:
        outs, why = _plan(specs[i], ns, arg_keys)
        if why:
            results[i] = _skip(specs[i], why)
            continue
        planned.append(i)
        for t in outs:
            outputs[id(t)] = (specs[i].actual, t)
    if not planned:
        return results
    out_keys = {storage_key(t) for _, t in outputs.values()}
    inputs: dict[int, tuple[str, Any]] = {}
    for i in planned:
        for text, value in _names(specs[i].expected, ns):
            for t in tensors_in(value):
                if storage_key(t) in arg_keys and storage_key(t) not in out_keys and \
                        (t.is_floating_point() or t.is_complex()):
                    inputs.setdefault(id(t), (text, t))
    seed = random.randrange(2**31) if seed is None else seed
    note = _rerun(list(inputs.values()), list(outputs.values()), sequence, seed)
    try:
        for i in planned:
            if note.get("error"):
                d = skipped(specs[i], "")
                d.update(status="error", message=f"fresh-input re-run failed: {note['error']}")
            else:
                d = evaluate(specs[i], ns, atol, rtol, tf32=tf32)  # the re-run's outputs, the reference on fresh inputs
            results[i] = _annotate(d, note, seed)
    finally:
        _restore(note)
    return results


_RANK = {"skipped": 0, "passed": 1, "failed": 2, "error": 3}


def combine(as_run: dict[str, Any], other: dict[str, Any] | None, key: str = "fresh") -> dict[str, Any]:
    """One check result for both runs: the worse status; the other run's result kept under ``key``."""
    if other is None:
        return as_run
    as_run[key] = {k: other.get(k) for k in ("status", "message", "max_abs_err", "max_rel_err", "mismatched",
                                               "seed", "first_mismatch")}
    worse = _RANK.get(other["status"], 0) > _RANK.get(as_run["status"], 0)
    first = as_run["message"]
    if worse or as_run["status"] == "skipped":
        as_run.update({k: other.get(k) for k in ("status", "max_abs_err", "max_rel_err", "mismatched",
                                                 "first_mismatch") if other.get(k) is not None or worse})
    tol = as_run.get("tolerance")
    if tol and tol in str(other.get("message")):
        first = first.replace(f" ({tol})", "")  # stated once, at the end
    prefix = "" if first.startswith("as the cell ran: ") else "as the cell ran: "  # combined once already
    as_run["message"] = f"{prefix}{first}; {other['message']}"
    return as_run


def _rerun(inputs: list[tuple[str, Any]], outputs: list[tuple[str, Any]], sequence: list[Any], seed: int) -> dict:
    import torch

    saved = [(t, t.detach().clone()) for _, t in inputs + outputs]
    note: dict[str, Any] = {"saved": saved, "inputs": [n for n, _ in inputs], "poisoned": [], "kept": []}
    gens: dict[Any, Any] = {}
    try:
        for _, t in inputs:
            g = gens.get(t.device)
            if g is None:
                g = gens[t.device] = torch.Generator(device=t.device).manual_seed(seed)
            refill_(t, g)
        for name, t in outputs:
            (note["poisoned"] if poison_(t) else note["kept"]).append(name)
        for r in sequence:
            r.again()
    except Exception as e:
        note["error"] = f"{type(e).__name__}: {e}".split("\n")[0][:400]
    return note


def _restore(note: dict[str, Any]) -> None:
    import torch

    with torch.no_grad():
        for t, old in note.get("saved", []):
            t.copy_(old)
    note["saved"] = []


def _annotate(d: dict[str, Any], note: dict[str, Any], seed: int) -> dict[str, Any]:
    ins = ", ".join(dict.fromkeys(note["inputs"])) or "none named in the reference"
    outs = ", ".join(dict.fromkeys(note["poisoned"])) or "none"
    d = dict(d)
    d["message"] = f"fresh inputs ({ins}; seed {seed}), NaN-poisoned outputs ({outs}): {d['message']}"
    d["run"], d["seed"] = "fresh", seed
    return d
