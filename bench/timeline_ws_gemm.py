#!/usr/bin/env python
"""GPU acceptance run for workbench.measure.timeline (issue 7): the warp-specialized TLX GEMM's per-role timeline.

    python bench/timeline_ws_gemm.py                       # 2048^3 bf16; writes bench/results/...
    python bench/timeline_ws_gemm.py --out /tmp/x --size 4096

Parts (each in its own try/except; a failure is recorded and the rest still runs; < 2 min on an H200):
1. correctness of ws_gemm (tests/tlx/tlx_examples.py) against torch at the size timed;
2. run_timeline: plain timing (the real number), one launch under Proton's instrumentation backend
   (global buffer, one sampled warp per warpgroup: warps 0, 4, 8), instrumented timing (overhead),
   SM clock (NVML / nvidia-smi while it ran, and a %clock64-over-%globaltimer probe kernel);
3. checks: producer lanes hold `wait:empty` waits and `tma_load` issues, consumer lanes `wait:full`
   waits and `mma` issues; every CTA has every role; no dropped events;
4. a small sample of the trace (8 CTAs, Proton's own format, gzip) -> tests/timeline/data/ws_gemm_trace.json.gz
   (the CPU tests' real trace) and a Perfetto export of it beside the results;
5. overflow check: the same launch with a 1 KiB-per-warp buffer (64 events) must be reported as dropping events.
Writes <out>/timeline-ws-gemm-<date>.json (date, device, versions, command, per-role stats, overhead).
Exit status 0 when every check passes.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import sys
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "tlx"))

T0 = time.perf_counter()


def say(msg: str) -> None:
    print(f"[{time.perf_counter() - T0:6.1f}s] {msg}", flush=True)


def _err(exc: BaseException) -> dict[str, Any]:
    return {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc(limit=8)}


def setup(size: int) -> dict[str, Any]:
    import tlx_examples as E
    import torch
    import triton

    torch.manual_seed(0)
    M = N = K = size
    meta = dict(E.WS_META)
    a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(K, N, device="cuda", dtype=torch.bfloat16)
    c = E.empty_tma(M, N, torch.bfloat16, "cuda")
    a_desc, b_desc, c_desc = E._ws_descs(a, b, c, meta["BM"], meta["BN"], meta["BK"])
    grid = (triton.cdiv(M, meta["BM"]), triton.cdiv(N, meta["BN"]))
    args = (a_desc, b_desc, c_desc, M, N, K)
    kw = dict(num_warps=4, **meta)
    return dict(E=E, a=a, b=b, c=c, grid=grid, args=args, kw=kw, kernel=E.ws_gemm_kernel, M=M, N=N, K=K, meta=meta)


def part_correctness(s: dict[str, Any]) -> dict[str, Any]:
    import torch

    s["kernel"][s["grid"]](*s["args"], **s["kw"])
    torch.cuda.synchronize()
    ref = s["a"].float() @ s["b"].float()
    got = s["c"].float()
    rel = float((got - ref).norm() / ref.norm())
    return {"rel_error": rel, "nan_count": int(torch.isnan(got).sum()), "ok": rel < 1e-2}


def lane_checks(tl: Any) -> dict[str, Any]:
    tr = tl.trace
    lanes = tr.lanes()
    kinds = {r.role: r.kind for r in tl.roles}
    producers = [r for r, k in kinds.items() if k == "producer"]
    consumers = [r for r, k in kinds.items() if k == "consumer"]
    out: dict[str, Any] = {"producers": producers, "consumers": consumers}

    def has(role: str, pred: Any) -> int:
        return sum(1 for (_c, r), evs in lanes.items() if r == role and any(pred(e) for e in evs))

    n = len(tr.ctas)
    out["producer_lanes_with_empty_waits"] = {
        r: has(r, lambda e: e.activity == "wait" and e.detail == "empty") for r in producers
    }
    out["producer_lanes_with_tma"] = {r: has(r, lambda e: e.activity == "tma_load") for r in producers}
    out["consumer_lanes_with_full_waits"] = {
        r: has(r, lambda e: e.activity == "wait" and e.detail == "full") for r in consumers
    }
    out["consumer_lanes_with_mma"] = {r: has(r, lambda e: e.activity == "mma") for r in consumers}
    out["ctas"] = n
    ok = (
        len(producers) == 1
        and len(consumers) == 2
        and all(v == n for v in out["producer_lanes_with_empty_waits"].values())
        and all(v == n for v in out["producer_lanes_with_tma"].values())
        and all(v == n for v in out["consumer_lanes_with_full_waits"].values())
        and all(v == n for v in out["consumer_lanes_with_mma"].values())
        and not tl.dropped.get("detected")
    )
    out["ok"] = ok
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(ROOT / "bench" / "results"))
    ap.add_argument("--size", type=int, default=2048)
    ap.add_argument("--ctas", type=int, default=8, help="CTAs kept in the committed sample trace")
    ap.add_argument("--data-dir", default=str(ROOT / "tests" / "timeline" / "data"))
    ap.add_argument("--no-overflow-check", action="store_true")
    a = ap.parse_args()
    out_dir = Path(a.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d-%H%M%S")
    result: dict[str, Any] = {
        "what": "workbench.measure.timeline acceptance: per-role timeline of the TLX warp-specialized GEMM (ws_gemm)",
        "date": stamp,
        "command": " ".join([Path(sys.executable).name, *sys.argv]),
        "size": a.size,
        "parts": {},
    }
    ok = True
    try:
        from workbench.measure._env import environment

        result["env"] = environment()
        say(f"device {result['env'].get('device')}, triton {result['env'].get('triton')}")
    except Exception as e:
        result["env"] = _err(e)
    try:
        s = setup(a.size)
        result["shape"] = {"M": s["M"], "N": s["N"], "K": s["K"], **s["meta"], "grid": list(s["grid"])}
    except Exception as e:
        result["parts"]["setup"] = _err(e)
        say(f"setup failed: {e}")
        _write(result, out_dir, stamp)
        return 1
    # 1
    try:
        r = part_correctness(s)
        result["parts"]["correctness"] = r
        ok &= r["ok"]
        say(f"correctness: rel error {r['rel_error']:.2e}")
    except Exception as e:
        result["parts"]["correctness"] = _err(e)
        ok = False
        say(f"correctness failed: {e}")
    # 2
    tl = None
    try:
        from workbench.measure.timeline import run_timeline

        flops = 2.0 * s["M"] * s["N"] * s["K"]
        tl = run_timeline(
            s["kernel"],
            s["grid"],
            *s["args"],
            log=say,
            bench_options={"rep_ms": 200.0},
            workdir=str(Path("/tmp") / f"tlx-timeline-{stamp}"),
            **s["kw"],
        )
        d = tl.to_dict(lane_ctas=2)
        d.pop("lanes", None)
        timing = d.get("timing", {})
        for k in ("plain", "instrumented"):
            if k in timing and timing[k].get("median_ms"):
                timing[k]["tflops"] = flops / (timing[k]["median_ms"] * 1e-3) / 1e12
                timing[k].pop("samples_ms", None)
        result["parts"]["timeline"] = d
        print(tl.summary(), flush=True)
    except Exception as e:
        result["parts"]["timeline"] = _err(e)
        ok = False
        say(f"timeline failed: {e}")
    # 3
    if tl is not None:
        try:
            r = lane_checks(tl)
            result["parts"]["checks"] = r
            ok &= r["ok"]
            say(f"checks: {'ok' if r['ok'] else 'FAILED'} {r}")
        except Exception as e:
            result["parts"]["checks"] = _err(e)
            ok = False
    # 4
    if tl is not None:
        try:
            other = {
                "device": (result.get("env") or {}).get("device"),
                "when": stamp,
                "command": result["command"],
                "shape": result.get("shape"),
                "stderr_tail": [],
            }
            sample = out_dir / f"timeline-ws-gemm-{stamp}.trace.json.gz"
            tl.save_sample(sample, a.ctas, other)
            data_dir = Path(a.data_dir)
            data_dir.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(sample, data_dir / "ws_gemm_trace.json.gz")
            from workbench.measure.timeline.trace import pick_ctas

            pf = tl.to_perfetto(out_dir / f"timeline-ws-gemm-{stamp}.perfetto.json", pick_ctas(tl.trace, a.ctas))
            # stats of the sample itself, for the CPU tests to compare with
            from workbench.measure.timeline import analyze, read_trace

            back = analyze(read_trace(sample))
            result["parts"]["sample"] = {
                "file": str(sample),
                "bytes": sample.stat().st_size,
                "copied_to": str(data_dir / "ws_gemm_trace.json.gz"),
                "perfetto": str(pf),
                "perfetto_bytes": pf.stat().st_size,
                "events": len(back.trace.events),
                "roles": {r.role: {"kind": r.kind, "busy": r.busy_fraction, "iters": r.iterations} for r in back.roles},
            }
            say(f"sample: {sample.stat().st_size / 1e3:.0f} kB, {len(back.trace.events)} events")
        except Exception as e:
            result["parts"]["sample"] = _err(e)
            ok = False
    # 5
    if not a.no_overflow_check and time.perf_counter() - T0 < 90:
        try:
            from workbench.measure.timeline import ModeSpec, run_timeline

            small = ModeSpec(buffer_size=3 * 1024, sampled_warps=(0, 4, 8))  # 64 events per warp
            tl2 = run_timeline(s["kernel"], s["grid"], *s["args"], spec=small, time_it=False, log=say, **s["kw"])
            r = {"dropped": tl2.dropped, "ok": bool(tl2.dropped.get("detected"))}
            result["parts"]["overflow_check"] = r
            ok &= r["ok"]
            say(f"overflow check: detected={tl2.dropped.get('detected')} ({tl2.dropped.get('dropped_events')} dropped)")
        except Exception as e:
            result["parts"]["overflow_check"] = _err(e)
            ok = False
    result["ok"] = bool(ok)
    result["elapsed_s"] = time.perf_counter() - T0
    _write(result, out_dir, stamp)
    return 0 if ok else 1


def _write(result: dict[str, Any], out_dir: Path, stamp: str) -> None:
    path = out_dir / f"timeline-ws-gemm-{stamp}.json"
    path.write_text(json.dumps(result, indent=1, default=str))
    say(f"wrote {path}")


if __name__ == "__main__":
    sys.exit(main())
