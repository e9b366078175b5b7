#!/usr/bin/env python
"""GPU run for issue 16: per-role timelines of real TLX kernels, no edits to their source.

    python3 bench/timeline_kernels.py                      # all three kernels, ~2-3 min on an H200
    python3 bench/timeline_kernels.py --kernels fa_pingpong --out /tmp/x

Kernels (each in its own try/except; a failure is recorded in its JSON and the others still run):
- ``ws_cooperative`` / ``ws_pingpong``: the library's WS GEMMs (``tlx_kernels.gemm.<name>``: ``prepare``
  with ``DEFAULT``), 4096^3 bf16; skipped with the import error when the library does not import;
- ``fa_pingpong``: Meta's FA forward persistent ping-pong tutorial from the installed wheel
  (``tlx/tutorials/hopper_fa_ws_pipelined_pingpong_persistent.py``, unmodified, launched through its
  own ``attention()``), B1 H8 S4096 D128 bf16, non-causal (2 tiles per CTA: a trace of ~0.2M events);
- ``attn_ws_pipelined``: the library's fastest attention kernel (``tlx_kernels.attention.ws_pipelined``,
  ``prepare`` with its default config), same shape as ``fa_pingpong``.

Per kernel: correctness against torch (cuBLAS matmul / SDPA); then ``workbench.measure.timeline``:
the plain kernel timed (``workbench.measure.bench``), one launch recorded under Proton with scopes at
level ``fine`` (role tasks, barrier waits by set, TMA issue, MMA issue and wait, epilogue stores, inside
the persistent loops), the instrumented build timed the same way (overhead), the SM clock (NVML
samples, a probe kernel, the trace's own estimate); the overhead of levels ``waits`` and ``task`` too
(no trace, timing only) while time remains. Checks: every role has its scopes, no dropped events,
overhead <= 10%.

Writes ``<out>/timeline-<kernel>-<date>.json`` (device, date, versions, command, the Report payload,
per-level overhead, checks), ``.trace.json.gz`` (a Proton-format sample of 8 CTAs) and
``.perfetto.json`` (4 CTAs); a 4-CTA sample goes to ``tests/measure/timeline/data/<kernel>.json.gz``
(the CPU tests' real traces). Exit status 1 when a kernel raised, else 0 (failed checks are in the JSON and table).
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import json
import sys
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
for p in (ROOT, ROOT / "kernels"):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))

T0 = time.perf_counter()
BUDGET_S = 200.0  # stop adding optional measurements (extra levels) after this
KERNELS = ("ws_cooperative", "ws_pingpong", "fa_pingpong", "attn_ws_pipelined")
FA_TUTORIAL = "hopper_fa_ws_pipelined_pingpong_persistent"


def say(msg: str) -> None:
    print(f"[{time.perf_counter() - T0:6.1f}s] {msg}", flush=True)


def _err(exc: BaseException) -> dict[str, Any]:
    return {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc(limit=10)}


def _rel(out: Any, ref: Any) -> float:
    return float((out.float() - ref.float()).norm() / ref.float().norm().clamp_min(1e-30))


def gemm_case(name: str, size: int) -> dict[str, Any]:
    import torch

    try:
        mod = importlib.import_module(f"tlx_kernels.gemm.{name}")
    except Exception as e:
        return {"skip": f"tlx_kernels.gemm.{name} does not import: {type(e).__name__}: {e}"}
    torch.manual_seed(0)
    a = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
    args, kwargs, grid, out = mod.prepare(a, b)

    def fn() -> Any:
        return mod.kernel[grid](*args, **kwargs)

    def check() -> float:
        fn()
        torch.cuda.synchronize()
        return _rel(out, mod.reference(a, b))

    return {"fn": fn, "check": check, "record": (mod.kernel, grid, args, kwargs), "events_per_warp": 4096,
            "shape": {"M": size, "N": size, "K": size, "dtype": "bfloat16"}, "config": dict(mod.DEFAULT),
            "flops": 2.0 * size**3, "source": f"tlx_kernels.gemm.{name} (prepare, DEFAULT)"}


def fa_case(batch: int, heads: int, seq: int, dim: int) -> dict[str, Any]:
    import torch
    import torch.nn.functional as F
    from tlx_kernels import meta_tutorials

    mod = meta_tutorials.load(FA_TUTORIAL)
    path = meta_tutorials.tutorial_dir() / f"{FA_TUTORIAL}.py"
    torch.manual_seed(0)
    q, k, v = (torch.randn(batch, heads, seq, dim, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    sm_scale = dim**-0.5

    def fn() -> Any:
        return mod.attention(q, k, v, sm_scale)

    def check() -> float:
        o = fn()
        return _rel(o, F.scaled_dot_product_attention(q, k, v, scale=sm_scale))

    return {"fn": fn, "check": check, "record": None, "events_per_warp": 8192,
            "shape": {"B": batch, "H": heads, "S": seq, "D": dim, "dtype": "bfloat16", "causal": False},
            "flops": 4.0 * batch * heads * seq * seq * dim, "source": str(path)}


def attn_case(batch: int, heads: int, seq: int, dim: int) -> dict[str, Any]:
    import torch
    import torch.nn.functional as F
    from tlx_kernels.attention import ws_pipelined

    torch.manual_seed(0)
    q, k, v = (torch.randn(batch, heads, seq, dim, device="cuda", dtype=torch.bfloat16) for _ in range(3))
    launch = ws_pipelined.prepare(q, k, v)

    def fn() -> Any:
        return launch.kernel[launch.grid](*launch.args, **launch.kwargs)

    def check() -> float:
        return _rel(launch.run(), F.scaled_dot_product_attention(q, k, v))

    return {"fn": fn, "check": check, "record": (launch.kernel, launch.grid, launch.args, launch.kwargs),
            "events_per_warp": 8192, "config": dict(ws_pipelined.DEFAULT),
            "shape": {"B": batch, "H": heads, "S": seq, "D": dim, "dtype": "bfloat16", "causal": False},
            "flops": 4.0 * batch * heads * seq * seq * dim, "source": "tlx_kernels.attention.ws_pipelined (prepare)"}


def case_of(name: str, a: argparse.Namespace) -> dict[str, Any]:
    fa = tuple(map(int, a.fa.split(",")))
    if name == "fa_pingpong":
        return fa_case(*fa)
    if name == "attn_ws_pipelined":
        return attn_case(*fa)
    return gemm_case(name, a.size)


def checks_of(tl: Any) -> dict[str, Any]:
    """What the timeline must show: every role's scopes in every sampled lane, no drops, overhead <= 10%."""
    lanes = tl.trace.lanes()
    kinds = {r.role: r.kind for r in tl.roles}
    bad: list[str] = []
    for (cta, role), evs in lanes.items():
        acts = {e.activity for e in evs}
        kind = kinds.get(role, "other")
        need = {"task", "wait", "tma_load"} if kind == "producer" else {"task", "wait", "mma", "mma_wait"}
        if not need <= acts:
            bad.append(f"CTA {cta} {role}: missing {sorted(need - acts)}")
    roles = {r for _, r in lanes}
    missing = [f"CTA {c}" for c in tl.trace.ctas if any((c, r) not in lanes for r in roles)]
    ov = tl.timing.get("overhead")
    return {
        "roles_have_their_scopes": not bad, "problems": bad[:10],
        "every_cta_has_every_role": not missing, "ctas_missing_a_role": missing[:10],
        "no_dropped_events": not tl.dropped.get("detected"),
        "overhead_at_most_10pct": ov is not None and ov <= 0.10,
        "roles": sorted(roles),
    }


def run_kernel(name: str, case: dict[str, Any], out: Path, data_dir: Path, stamp: str,
               levels: list[str]) -> dict[str, Any]:
    from workbench.measure.timeline import ModeSpec, default_spec, record, time_instrumented, timeline_of

    row: dict[str, Any] = {"kernel": name, "shape": case["shape"], "source": case["source"],
                           "config": case.get("config")}
    row["rel_err"] = case["check"]()
    say(f"{name}: rel err vs torch {row['rel_err']:.2e}")
    work = Path("/tmp") / f"tlx-timeline-{name}"
    if case["record"] is not None:
        kernel, grid, args, kwargs = case["record"]
        tl = record(kernel, grid, *args, events_per_warp=case["events_per_warp"], level="fine", workdir=work, log=say,
                    **kwargs)
    else:  # Meta's tutorial through its own attention(): three 4-warp roles (default, two consumers)
        tl = timeline_of(case["fn"], spec=default_spec(None, num_warps=12, events_per_warp=case["events_per_warp"]),
                         level="fine", workdir=work, log=say)
    payload = tl.to_dict()
    say(tl.summary())
    row["checks"] = checks_of(tl)
    row["overhead_by_level"] = {"fine": tl.timing.get("overhead")}
    plain = (tl.timing.get("plain") or {}).get("median_ms")
    if plain:
        row["tflops_plain"] = case["flops"] / (plain * 1e-3) / 1e12
    spec = ModeSpec(sampled_warps=tuple(tl.mode.get("sampled_warps") or ()) or None,
                    buffer_size=tl.mode.get("buffer_size") or 0)  # what the recorded launch used
    for lvl in levels:
        if lvl == "fine":
            continue
        if time.perf_counter() - T0 > BUDGET_S:
            row["overhead_by_level"][lvl] = None
            say(f"{name}: level {lvl} skipped (time budget)")
            continue
        res = time_instrumented(case["fn"], spec, lvl)
        row["overhead_by_level"][lvl] = (res["median_ms"] / plain - 1) if plain and "median_ms" in res else res
        say(f"{name}: level {lvl} overhead {row['overhead_by_level'][lvl]}")
    other = {"kernel": name, "shape": case["shape"], "date": stamp, "device": tl.env.get("device")}
    sample = tl.save_sample(out / f"timeline-{name}-{stamp}.trace.json.gz", n_ctas=8, other=other)
    data_dir.mkdir(parents=True, exist_ok=True)
    tl.save_sample(data_dir / f"{name}.json.gz", n_ctas=4, other=other)
    perfetto = tl.to_perfetto(out / f"timeline-{name}-{stamp}.perfetto.json", ctas=payload_ctas(payload))
    row.update({"timeline": payload, "sample_trace": str(sample.relative_to(ROOT)) if sample.is_relative_to(ROOT)
                else str(sample), "perfetto": str(perfetto.name)})
    return row


def payload_ctas(payload: dict[str, Any]) -> list[int]:
    return sorted({ln["cta"] for ln in payload.get("lanes", [])})


def table(rows: list[dict[str, Any]]) -> str:
    lines = [f"{'kernel':<15} {'role':<11} {'busy':>6} {'issue':>6} {'wait':>6} {'mma_w':>6}  top barrier waits"]
    for r in rows:
        tl = r.get("timeline")
        if not tl:
            lines.append(f"{r['kernel']:<15} {r.get('skip') or r.get('error', '?')}"[:160])
            continue
        for ro in tl["roles"]:
            waits = ", ".join(f"{k} {100 * v['fraction']:.1f}%" for k, v in list(ro["waits"].items())[:3])
            lines.append(f"{r['kernel']:<15} {ro['role']:<11} {100 * (ro['busy_fraction'] or 0):5.1f}% "
                         f"{100 * (ro['issuing_fraction'] or 0):5.1f}% {100 * (ro['waiting_fraction'] or 0):5.1f}% "
                         f"{100 * ro['shares'].get('mma_wait', 0):5.1f}%  {waits}")
        ov = ", ".join(f"{k} {100 * v:+.1f}%" if isinstance(v, float) else f"{k} n/a"
                       for k, v in r["overhead_by_level"].items())
        ok = all(v for k, v in r["checks"].items() if isinstance(v, bool))
        lines.append(f"{'':<15} overhead: {ov}; clock {tl['clock'].get('mhz')} MHz ({tl['clock'].get('source')}); "
                     f"rel err {r['rel_err']:.1e}; checks {'ok' if ok else 'FAILED'}")
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernels", default=",".join(KERNELS))
    ap.add_argument("--levels", default="fine,waits,task")
    ap.add_argument("--size", type=int, default=4096, help="GEMM M = N = K")
    ap.add_argument("--fa", default="1,8,4096,128", help="FA B,H,S,D")
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    ap.add_argument("--data-dir", default=str(ROOT / "tests" / "measure" / "timeline" / "data"))
    a = ap.parse_args()
    import torch
    import triton

    from workbench.measure._env import environment

    out, data_dir = Path(a.out), Path(a.data_dir)
    out.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d")
    env = environment()
    base = {"date": env.get("measured_at"), "device": env.get("device"), "torch": torch.__version__,
            "triton": triton.__version__, "env": env, "command": " ".join([sys.executable, *sys.argv])}
    rows: list[dict[str, Any]] = []
    status = 0
    for name in [k for k in a.kernels.split(",") if k]:
        say(f"=== {name}")
        try:
            case = case_of(name, a)
            row = {"kernel": name, **case} if "skip" in case else run_kernel(
                name, case, out, data_dir, stamp, a.levels.split(","))
        except Exception as e:
            status = 1
            row = {"kernel": name, **_err(e)}
            say(f"{name}: {row['error']}")
        rows.append(row)
        (out / f"timeline-{name}-{stamp}.json").write_text(json.dumps({**base, **row}, indent=1, default=str))
    print(table(rows), flush=True)
    say(f"done, wrote {out}/timeline-*-{stamp}.json")
    return status


if __name__ == "__main__":
    sys.exit(main())
