"""Helpers of ``tutorials/01-producer-consumer-gemm.ipynb``, whose kernels are written in its ``%%tlx`` cells.

- host side of a step: :func:`output` (a NaN-filled output, so a tile no CTA writes fails the check),
  :func:`tma_args` (TMA descriptors and sizes), :func:`tiles_grid` / :func:`persistent_grid`;
- what a step changed: :func:`facts` (compiler facts of a Report or Artifact), :func:`show_step`,
  :func:`summary_table`;
- :func:`knobs`: ipywidgets controls that re-run a step with another stage count, tile or register
  budget and add a row to a table (compiler facts always; TFLOP/s and a check on a GPU).

Everything works without a GPU (the compiler facts are real on a CPU). Nothing here imports the
workbench or ipywidgets at import time: the library stays free of both (tests/kernels checks it).
"""

from __future__ import annotations

import functools
import html
import math
import re
import textwrap
from collections.abc import Callable, Sequence
from typing import Any

from tlx_kernels.gemm import common as C

__all__ = ["ATOL", "RTOL", "Knobs", "facts", "knobs", "measured", "output", "persistent_grid", "ptxas_warnings",
           "show_step", "summary_table", "tiles_grid", "timeline_lines", "tma_args"]

# Tolerances of the tutorial's checks (fp32 accumulation, fp16/bf16 output; K up to 8192, values ~sqrt(K)):
# cuBLAS and our kernels sum in different orders, so outputs near zero differ by more than a relative bound.
ATOL, RTOL = 0.1, 0.02

# --- host side of a step --------------------


def output(a: Any, b: Any) -> Any:
    """An ``M x N`` output for ``a @ b`` (TMA-storable), filled with NaN: a tile nothing writes fails a check."""
    return C.empty_out(a.shape[0], b.shape[1], a.dtype, a.device, fill=float("nan"))


def tma_args(a: Any, b: Any, c: Any, a_block: Sequence[int], b_block: Sequence[int],
             c_block: Sequence[int]) -> tuple[Any, ...]:
    """``(a_desc, b_desc, c_desc, M, N, K)``: host TMA descriptors of row-major A, B, C with these block shapes."""
    return (C.descriptor(a, a_block), C.descriptor(b, b_block), C.descriptor(c, c_block),
            a.shape[0], b.shape[1], a.shape[1])


def tiles_grid(M: int, N: int, BM: int, BN: int) -> tuple[int]:
    """One CTA per output tile."""
    return (math.ceil(M / BM) * math.ceil(N / BN),)


def persistent_grid(M: int, N: int, BM: int, BN: int, device: Any = None) -> tuple[int]:
    """One CTA per SM (132 on an H100/H200 when there is no GPU), never more CTAs than tiles."""
    return (max(1, min(tiles_grid(M, N, BM, BN)[0], C.num_sms(device))),)


# --- what a step changed --------------------

_PTXAS_WARNING = re.compile(r"\((C\d+)\)\s*([^\n]+)")


def _artifact(report: Any) -> Any:
    return getattr(report, "artifact", None) or report


def _acc_layout(art: Any) -> str:
    m = re.search(r"#ttg\.nvidia_mma<\{[^}]*\}>", art.stages.get("ttgir", ""))
    return m.group(0) if m else "-"


def _budgets(md: Any) -> str:
    """The roles' warps and register budgets from the compile's task metadata (setmaxnreg), or '-'."""
    return ", ".join(("producer" if t.get("partition") is None else f"consumer.{t['partition']}")
                     + f" {t.get('num_warps')}w/{t.get('registers')}r" for t in md.tasks or []) or "-"


def ptxas_warnings(art: Any) -> list[str]:
    """ptxas's numbered remarks, e.g. '(C7507) ... setmaxnreg ignored ...' for a budget below what the code needs."""
    log = str((getattr(art.metadata, "extra", None) or {}).get("ptxas", ""))
    if not log and art.stages.get("ptx"):  # Triton's cache answered, so ptxas printed nothing: ask it
        log = _ptxas_log(art.stages["ptx"], str(art.target).rstrip("a") + "a")
    return [f"{code} {text.strip()}" for code, text in _PTXAS_WARNING.findall(log)]


@functools.lru_cache(maxsize=64)
def _ptxas_log(ptx: str, arch: str) -> str:
    import subprocess
    import tempfile
    from pathlib import Path

    from workbench.compile.tools import tool_path

    with tempfile.TemporaryDirectory() as d:
        (Path(d) / "k.ptx").write_text(ptx)
        res = subprocess.run([tool_path("ptxas"), "-v", f"--gpu-name={arch}", str(Path(d) / "k.ptx"), "-o",
                              str(Path(d) / "k.o")], capture_output=True, text=True, timeout=300)
    return res.stderr + res.stdout


def facts(report_or_artifact: Any) -> dict[str, Any]:
    """Compiler facts of a step: registers, budgets, spills, shared memory, warps, wgmma/TMA/barrier counts."""
    from workbench.ir.ptx import setmaxnreg
    from workbench.ir.sass import read_sass

    art = _artifact(report_or_artifact)
    md = art.metadata
    ptx, ttgir = art.stages.get("ptx", ""), art.stages.get("ttgir", "")
    sass = read_sass(art.stages.get("sass", ""))
    return {
        "kernel": md.name,
        "warps": md.num_warps,
        "registers/thread (launch)": md.registers,
        "roles (warps/registers)": _budgets(md),
        "setmaxnreg": ", ".join(f"{k} {v}" for k, v in setmaxnreg(ptx)) or "-",
        "spilled bytes": (md.spill_stores or 0) + (md.spill_loads or 0),
        "shared bytes": md.shared_bytes,
        "warp-specialized": "ttg.warp_specialize" in ttgir,
        "HGMMA (SASS)": sass.count("HGMMA"),
        "TMA copies (PTX)": ptx.count("cp.async.bulk.tensor"),
        "mbarrier waits (PTX)": ptx.count("mbarrier.try_wait"),
        # named barriers a kernel uses for its own hand-overs (TLX convention: ids 9-15; Triton's are lower)
        "named-barrier ops (PTX)": len(re.findall(r"bar\.(?:sync|arrive)\s+(?:9|1[0-5]), \d+;", ptx)),
        "LDL/STL (SASS)": sass.count("LDL") + sass.count("STL"),
        "accumulator layout": _acc_layout(art),
    }


def measured(report: Any) -> dict[str, Any]:
    """The bench, check and timeline outcome of a ``%%tlx`` Report (or why there is none)."""
    out: dict[str, Any] = {"tflops": None, "median_us": None, "ratio": None, "bench": None, "timeline": None,
                           "check": None}
    for m in getattr(report, "measurements", None) or []:
        if m.get("kind") != "bench":
            continue
        if m.get("status") == "ok" and m.get("timing"):
            t = m["timing"]
            out["tflops"] = t.get("tflops")
            out["median_us"] = (t.get("median_ms") or 0) * 1e3
            out["ratio"] = m.get("ratio")
            out["bench"] = f"{m.get('measured_by')} on {m.get('device')} at {m.get('when')}"
        else:
            out["bench"] = m.get("reason") or m.get("status")
    checks = [c for r in getattr(report, "runs", None) or [] for c in r.get("checks", [])]
    if checks:
        out["check"] = "; ".join(f"{c['expr']}: {c['status']}" + (f" ({c['message']})" if c.get("message") else "")
                                 for c in checks)
    tl = getattr(report, "timeline", None)
    if tl:
        out["timeline"] = tl if tl.get("status") == "ok" else tl.get("reason")
    return out


def _checked(report: Any) -> str | None:
    """The outcome of a Report's checks in a word or two ('passed', 'FAILED', 'not run')."""
    status = {c["status"] for r in getattr(report, "runs", None) or [] for c in r.get("checks", [])}
    if not status:
        return None
    if status & {"failed", "error"}:
        return "FAILED"
    return "passed" if status == {"passed"} else "not run"


GPU_NOTE = (
    "On a GPU this step also shows: the --check against torch (cuBLAS) on real data, the median time and "
    "TFLOP/s (workbench.measure, L2 flushed) beside cuBLAS timed the same way, the point on the roofline, and "
    "(with --timeline) each role's lane over time: producer TMA issue, consumer wgmma and epilogue, the "
    "barrier waits between them."
)


def timeline_lines(tl: dict[str, Any], waits: int = 2) -> list[str]:
    """Per role of a Report's timeline: busy, issuing and waiting shares of its span and its ``waits`` longest
    barrier waits; then the instrumentation's cost (the GEMM and broadcast walkthroughs print this)."""
    lines = []
    for r in tl.get("roles") or []:
        pct = {k: 100 * (r.get(k) or 0) for k in ("busy_fraction", "issuing_fraction", "waiting_fraction")}
        top = list((r.get("waits") or {}).items())[:waits]
        longest = ", ".join(f"{k} {100 * v.get('fraction', 0):.0f}%" for k, v in top)
        lines.append(f"  {str(r.get('role')):<12} busy {pct['busy_fraction']:5.1f}%  issuing "
                     f"{pct['issuing_fraction']:5.1f}%  waiting {pct['waiting_fraction']:5.1f}%  "
                     f"({longest or 'no barrier waits'})")
    if tl.get("overhead") is not None:
        lines.append(f"  instrumentation overhead {100 * tl['overhead']:+.1f}% (plain vs instrumented median)")
    return lines


_LONG = ("roles (warps/registers)", "setmaxnreg", "accumulator layout")


def facts_lines(f: dict[str, Any], p: dict[str, Any] | None, width: int = 16) -> list[str]:
    """Short facts as columns (before, now, '<-' where they differ; ``width`` characters each), the long ones
    (:data:`_LONG`, those ``f`` has) as 'before:'/'now:' lines."""
    if p is None:
        return [f"{k:26s} {v}" for k, v in f.items()]
    long = [k for k in _LONG if k in f]
    lines = [f"{'fact':26s} {str(p['kernel'])[:width]:>{width}s}   {str(f['kernel'])[:width]:>{width}s}"]
    lines += [f"{k:26s} {p.get(k)!s:>{width}s}   {v!s:>{width}s}" + ("  <-" if p.get(k) != v else "")
              for k, v in f.items() if k not in ("kernel", *long)]
    for k in long:
        mark = "  <-" if p.get(k) != f[k] else ""
        lines += [f"{k}{mark}", f"  before: {p.get(k)}", f"  now:    {f[k]}"]
    return lines


def print_step(now: dict[str, Any], before: dict[str, Any] | None, m: dict[str, Any], baseline: Any,
               baseline_label: str, gpu_note: str, timeline: tuple[str, Callable[[dict[str, Any]], list[str]]],
               width: int = 16) -> None:
    """A tutorial step's printout: the facts ``now`` (beside ``before``), the check and the measurement ``m``
    (:func:`measured`) with the ratio to ``baseline`` (a ``BenchResult``, or None), or ``gpu_note`` when
    nothing was timed, and the per-role timeline (``timeline``: a heading and the function that gives its
    lines)."""
    print("\n".join(facts_lines(now, before, width)))
    print(f"\ncheck: {m['check'] or 'none'}")
    if m["tflops"] is not None:
        vs = (f", {m['tflops'] / baseline.tflops:.2f}x {baseline_label} ({baseline.tflops:.0f})"
              if baseline is not None else "")
        print(f"measured: {m['tflops']:.1f} TFLOP/s, median {m['median_us']:.1f} us{vs}\n  ({m['bench']})")
    else:
        print(f"not timed: {m['bench'] or 'no --bench'}\n" + textwrap.fill(gpu_note, 110))
    if isinstance(m["timeline"], dict):
        print(f"{timeline[0]}:\n" + "\n".join(timeline[1](m["timeline"])))
    elif m["timeline"]:
        print(f"timeline: {m['timeline']}")


def show_step(report: Any, prev: Any = None, cublas: Any = None) -> None:
    """Print what this step changed (compiler facts before/now), its check, and what was measured (or would be)."""
    print_step(facts(report), facts(prev) if prev is not None else None, measured(report), cublas, "cuBLAS",
               GPU_NOTE, ("timeline (per role)", timeline_lines))


def summary_table(reports: dict[str, Any], cublas: Any = None) -> str:
    """One line per step: warps, registers, shared memory, HGMMA count, TFLOP/s and the ratio to cuBLAS."""
    rows = [f"{'step':32s} {'warps':>5s} {'regs':>5s} {'smem KiB':>8s} {'HGMMA':>5s} {'TFLOP/s':>8s} {'x cuBLAS':>8s}"]
    for name, r in reports.items():
        f, m = facts(r), measured(r)
        tf = f"{m['tflops']:.1f}" if m["tflops"] is not None else "-"
        ratio = f"{m['tflops'] / cublas.tflops:.2f}" if m["tflops"] is not None and cublas is not None else "-"
        rows.append(f"{name:32s} {f['warps']!s:>5s} {f['registers/thread (launch)']!s:>5s} "
                    f"{(f['shared bytes'] or 0) / 1024:8.1f} {f['HGMMA (SASS)']:>5d} {tf:>8s} {ratio:>8s}")
    if cublas is not None:
        rows.append(f"{'cuBLAS (torch.matmul)':32s} {'':>5s} {'':>5s} {'':>8s} {'':>5s} {cublas.tflops:8.1f} {1:8.2f}")
    return "\n".join(rows)


# --- knobs: re-run a step with other values --------------------


class Knobs:
    """Controls (ipywidgets) for a step's knobs; changing one re-runs the step with the new value.

    ``run(config)`` launches the step's kernel once (``kernel[grid](...)``) and returns its output. Each
    try runs under the ``%%tlx`` magic's launch capture (``workbench.run.capture``): without a GPU the
    launch is compiled for sm_90 and the row shows registers, budgets, spills and shared memory; with one
    it also runs, is checked against ``a @ b`` and timed (``workbench.measure.bench``). The first row is the
    cell's own run (``base``, its Report). A config over the shared-memory limit is compiled, not launched.
    """

    def __init__(self, run: Callable[[dict[str, Any]], Any], config: dict[str, Any], base: Any = None, *,
                 a: Any = None, b: Any = None, flops: float | None = None,
                 choices: dict[str, Sequence[Any]] | None = None) -> None:
        self.run, self.config, self.base = run, dict(config), base
        self.a, self.b, self.flops = a, b, flops
        self.choices = {k: list(v) for k, v in (choices or {}).items()}
        self.rows: list[dict[str, Any]] = []
        self.artifacts: dict[str, tuple[Any, Any]] = {}  # a row's "try" -> (Artifact, kernel)
        self._expected = None
        self._widget = None
        if base is not None:
            self.rows.append(self._row("as in the cell", _artifact(base), {**measured(base), "check": _checked(base)}))
            self.artifacts["as in the cell"] = (_artifact(base), None)

    # -------------------------------------------------------------- trying a config
    def _config(self, changes: dict[str, Any]) -> dict[str, Any]:
        cfg = dict(self.config)
        for k, v in changes.items():
            if k == "tile":
                cfg["BM"], cfg["BN"] = v
            else:
                cfg[k] = v
        return cfg

    def _value(self, knob: str) -> Any:
        return (self.config["BM"], self.config["BN"]) if knob == "tile" else self.config.get(knob)

    def try_config(self, **changes: Any) -> dict[str, Any]:
        """Re-run the step with ``changes`` (knob=value; ``tile=(BM, BN)``); add and return its row.

        First a compile-only pass (the magic's launch capture with ``compile_only``); then, on a GPU and if
        the config fits in shared memory, the real launch (in the magic's isolated worker: a hang or a fault
        becomes an error row), the check and the timing."""
        from workbench.run.device import detect

        cfg = self._config(changes)
        label = ", ".join(f"{k}={v}" for k, v in changes.items()) or "as in the cell"
        entry, _, error = self._capture(cfg, compile_only=True)
        m: dict[str, Any] = {}
        if entry is not None and error is None and detect().available:
            if (entry.artifact.metadata.shared_bytes or 0) <= C.SMEM_LIMIT:
                ran, out, error = self._capture(cfg, compile_only=False)
                entry = ran or entry
                m = self._measure(entry, out) if error is None else {}
        if entry is None:
            row = {"try": label, "error": error or "no kernel was launched"}
        else:
            row = self._row(label, entry.artifact, m, error)
            self.artifacts[label] = (entry.artifact, entry.kernel)
        self.rows = [r for r in self.rows if r["try"] != label or r is self.rows[0]] + [row]  # a repeat: re-run
        self._refresh()
        return row

    def _capture(self, cfg: dict[str, Any], compile_only: bool) -> tuple[Any, Any, str | None]:
        """(the launched kernel's capture entry, the output, an error) of one ``run(cfg)``."""
        from workbench.run.capture import Capture
        from workbench.run.device import detect

        cap = Capture(device=detect(), target="sm_90", compile_only=compile_only)
        out, error = None, None
        try:
            with cap:
                out = self.run(cfg)
        except Exception as e:  # a compile error, a launch the GPU refused, a hang or fault in the worker
            error = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"[:240]
        entries = list(cap.entries.values())
        entry = next((e for e in reversed(entries) if e.runs), entries[-1] if entries else None)
        return entry, out, error

    def _measure(self, entry: Any, out: Any) -> dict[str, Any]:
        if not entry.ran:
            return {}
        import torch

        from workbench import measure

        torch.cuda.synchronize()
        if self._expected is None and self.a is not None:
            self._expected = (self.a @ self.b).float()
        res: dict[str, Any] = {}
        if self._expected is not None:
            bad = ~torch.isclose(out.float(), self._expected, atol=ATOL, rtol=RTOL)
            n = int(bad.sum())
            err = (out.float() - self._expected).abs().nan_to_num(math.inf).max().item()
            res["check"] = f"passed (max abs err {err:.2g})" if n == 0 else f"FAILED: {n} elements off"
        res["tflops"] = measure.bench(entry.relaunch, flops=self.flops).tflops if self.flops else None
        return res

    def _row(self, label: str, art: Any, m: dict[str, Any], error: str | None = None) -> dict[str, Any]:
        f = facts(art)
        smem = f["shared bytes"] or 0
        fits = smem <= C.SMEM_LIMIT
        return {
            "try": label,
            "registers": f["registers/thread (launch)"],
            "roles": f["roles (warps/registers)"],
            "spilled bytes": f["spilled bytes"],
            "shared KiB": round(smem / 1024, 1),
            "fits": fits,
            "ptxas": "; ".join(ptxas_warnings(art)) or "-",
            "TFLOP/s": m.get("tflops"),
            "check": m.get("check") or ("compiled only" + ("" if fits else ": over the shared-memory limit")),
            "error": error,
        }

    def report(self, i: int = -1) -> Any:
        """A Report of try ``i`` (default: the last), with the diff against the cell's run."""
        from workbench.report.build import build_report
        from workbench.report.diff import diff_reports

        art, kernel = self.artifacts[self.rows[i]["try"]]
        r = build_report(art, kernel=kernel)
        if self.base is not None:
            r.previous = diff_reports(self.base, r)
        return r

    # -------------------------------------------------------------- display
    _HEAD = ("try", "regs", "roles (warps/regs)", "spills (B)", "smem KiB", "TFLOP/s", "check", "ptxas")

    @staticmethod
    def _cells(r: dict[str, Any]) -> list[str]:
        if "registers" not in r:
            return [r["try"], f"error: {r['error']}"]
        smem = f"{r['shared KiB']}" + ("" if r["fits"] else " (over the 227 KiB limit)")
        tf = "-" if r["TFLOP/s"] is None else f"{r['TFLOP/s']:.1f}"
        return [str(x) for x in (r["try"], r["registers"], r["roles"], r["spilled bytes"], smem, tf,
                                 r["error"] or r["check"], r["ptxas"])]

    def text(self) -> str:
        """The rows as plain text, one line per try."""
        return "\n".join(" | ".join(f"{h}: {c}" for h, c in zip(self._HEAD, self._cells(r), strict=False))
                         for r in self.rows)

    def _html(self) -> str:
        head = "".join(f"<th>{h}</th>" for h in self._HEAD)
        rows = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in self._cells(r)) + "</tr>"
                       for r in self.rows)
        return f"<table style='font-size:12px'><tr>{head}</tr>{rows}</table>"

    def _refresh(self) -> None:
        if self._widget is not None:
            self._widget.children[-1].value = self._html()

    @property
    def widget(self) -> Any:
        """The controls (one dropdown per knob) above the table of tries."""
        if self._widget is None:
            import ipywidgets as w

            controls = []
            for k, vals in self.choices.items():
                opts = [(f"{v[0]}x{v[1]}" if k == "tile" else str(v), v) for v in vals]
                controls.append(w.Dropdown(options=opts, value=self._value(k) if self._value(k) in vals else vals[0],
                                           description=k, style={"description_width": "initial"},
                                           layout=w.Layout(width="auto")))
            status = w.HTML("change a knob: the step is compiled (and on a GPU run, checked and timed) again")

            def changed(_: Any) -> None:
                diff = {d.description: d.value for d in controls if d.value != self._value(d.description)}
                status.value = "running ..."
                row = self.try_config(**diff)
                status.value = f"last try: {html.escape(row['try'])}"

            for dd in controls:
                dd.observe(changed, names="value")
            self._widget = w.VBox([w.HBox(controls), status, w.HTML(self._html())])
        return self._widget

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        """The live widget, with the table as HTML and text for front ends without it (an executed notebook
        opened untrusted, nbconvert, a terminal)."""
        data = dict(self.widget._repr_mimebundle_())
        knobs = ", ".join(f"{k} {self.choices[k]}" for k in self.choices)
        data["text/html"] = f"<p>Knobs ({html.escape(knobs)}): run the notebook to turn them.</p>{self._html()}"
        data["text/plain"] = self.text()
        return data


def knobs(run: Callable[[dict[str, Any]], Any], config: dict[str, Any], base: Any = None, *, a: Any = None,
          b: Any = None, flops: float | None = None, **choices: Sequence[Any]) -> Knobs:
    """A :class:`Knobs` for a step: ``choices`` name each knob's values (``tile=[(BM, BN), ...]`` for tile shapes)."""
    return Knobs(run, config, base, a=a, b=b, flops=flops, choices=choices)
