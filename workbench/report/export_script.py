"""``workbench.export(report, "repro.py")``: a standalone script that reproduces one kernel of a ``%%tlx`` cell.

The script needs torch and Triton with uTLX, not the workbench: the kernel's source and every ``@triton.jit``
helper, function and constant it uses (and that the cell's checks use) are copied in
(``export_sources``); the launch's tensors are made again by shape, dtype and seed, or with the notebook's
own values when they are small (``export_inputs``); the checks and the reference are the cell's own
expressions, rewritten to the script's names (``export_exprs``); what runs them is
``export_runtime``, copied in too. On a GPU it launches once, checks, times the kernel and the reference
and compares with what the workbench measured; without one it compiles for the Report's target and compares
the compiled kernel's warps and shared memory.
"""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path
from typing import Any

from workbench.compile.targets import parse_target
from workbench.errors import WorkbenchError
from workbench.report.export_exprs import rewrite
from workbench.report.export_inputs import Inputs
from workbench.report.export_sources import Sources, literal
from workbench.run.verify import CheckSpec, parse_check

__all__ = ["script_text", "write_script"]

SEED = 0
# before any @triton.jit below: with --interpret, plain Triton kernels run in Triton's CPU interpreter
_INTERPRET = 'if "--interpret" in sys.argv[1:]:\n    os.environ["TRITON_INTERPRET"] = "1"'


def _workbench_saw(report: Any, launch: Any) -> dict[str, Any]:
    """What the workbench measured and found, for the script to compare with."""
    bench = next((m for m in report.measurements if m.get("kind") == "bench" and m.get("timing")), None)
    md = report.metadata or {}
    return {
        "arch": parse_target(launch.target).arch,
        "compile_only": launch.compile_only,
        "findings": [f"{f.get('severity')} [{f.get('rule')}] line {f.get('line')}" for f in report.findings
                     if f.get("severity") == "error"],
        "kind": report.kernel.get("kind"),
        "device": (report.device or {}).get("name"),
        "median_ms": (bench or {}).get("timing", {}).get("median_ms") if bench else None,
        "reference": launch.bench_ref,
        "reference_ms": ((bench or {}).get("reference") or {}).get("median_ms") if bench else None,
        "flops": launch.flops,
        "checks": [{"expr": c.get("expr"), "status": c.get("status"), "message": c.get("message")}
                   for c in report.checks],
        "compiled": {"num_warps": md.get("num_warps"), "shared_bytes": md.get("shared_bytes"),
                     "registers": md.get("registers")},
        "versions": report.versions,
    }


def _checks(launch: Any, sources: Sources, inputs: Inputs) -> tuple[list[str], list[str]]:
    """(CheckSpec constructor calls in the script's names, what cannot be reproduced and why)."""
    calls, missing = [], []
    for expr in launch.checks:
        spec = parse_check(expr)
        parts = [spec.actual, spec.expected] if spec.actual else [spec.expr]
        texts, why = [], []
        for part in parts:
            text, problems = rewrite(part, launch.names, sources, inputs.var, f"--check {expr}")
            texts.append(text)
            why += problems
        if why:
            missing.append(f"check {expr}: {'; '.join(dict.fromkeys(why))}")
            continue
        spec_args = [expr, *texts] if spec.actual else [expr, None, None]
        calls.append(f"CheckSpec({', '.join(literal(a) for a in spec_args)})")
    return calls, missing


def _launch_call(kernel: str, launch: Any, args: dict[str, str | None]) -> str:
    fn = launch.kernel
    consts = {p.name for p in fn.params if p.is_constexpr}
    parts, keywords = [], False
    for name in fn.arg_names:
        if name not in args:
            continue
        keywords = keywords or name in consts
        parts.append(f"{name}={args[name]}" if keywords else str(args[name]))
    parts += [f"{k}={literal(v)}" for k, v in launch.options.items()]
    return f"{kernel}[GRID]({', '.join(parts)})"


def _header(report: Any, saw: dict[str, Any], inputs: Inputs, missing: list[str], script: str, pt: str | None) -> str:
    k, cell = report.kernel, report.cell
    where = f"cell [{cell.get('execution_count')}] of {cell.get('filename')}" if cell.get("filename") else "a cell"
    lines = [
        f"Reproducer of {k.get('name')} ({k.get('kind')} kernel, {k.get('target')}), exported by the TLX Workbench "
        f"from {where} ({report.created}).",
        f"The cell's magic line: {cell.get('magic_line') or '%%tlx'}",
        "",
        "Run it with plain python where torch and triton with triton-utlx are installed (no workbench needed):",
        f"    python {script} [--json] [--interpret]" + (" [--run]" if saw["compile_only"] else ""),
        "With a CUDA GPU it launches the kernel once on the inputs below, evaluates the cell's checks, times the",
        "kernel (and the --bench-ref reference) with triton.testing.do_bench and compares with the workbench;",
        f"without one it compiles the kernel for sm_{saw['arch']} only (ptxas ships with Triton) and says so;",
        "--interpret runs a plain Triton kernel in Triton's CPU interpreter instead (checks, no timing).",
        "It exits with status 1 when a check fails or the launch or compile does.",
    ]
    if saw["compile_only"]:
        lines += [
            f"The cell was --compile-only: so is this script, on a GPU too (it compiles for sm_{saw['arch']}, "
            "launches nothing);",
            "--run launches it anyway" + (f" (the workbench found: {'; '.join(saw['findings'])}: it may hang)"
                                          if saw["findings"] else "") + ".",
        ]
    lines += [
        "",
        f"What the workbench saw (triton {saw['versions'].get('triton')}, torch {saw['versions'].get('torch')}): "
        f"device {saw['device'] or 'none'}; compiled: {saw['compiled']['num_warps']} warps, "
        f"{saw['compiled']['shared_bytes']} bytes of shared memory, {saw['compiled']['registers']} registers; "
        + (f"median {saw['median_ms']:.4f} ms" if saw["median_ms"] else "not timed") + ".",
    ]
    lines += [f"  check {c['expr']}: {c['status']}: {c['message']}" for c in saw["checks"]]
    lines += ["", f"Inputs (seed {SEED}):"] + [f"  {n}" for n in inputs.notes]
    if pt:
        lines.append(f"  (the notebook's values of the larger ones are in {pt}, beside this script)")
    if missing:
        lines += ["", "Not reproduced:"] + [f"  {m}" for m in missing]
    return "\n".join("# " + line if line else "#" for line in lines)


def _inline_block(inline: dict[str, str]) -> str:
    rows = []
    for var, data in inline.items():
        chunks = textwrap.wrap(data, 100) or [""]
        rows.append(f"    {var!r}: (\n" + "\n".join(f'        "{c}"' for c in chunks) + "\n    ),")
    return "INLINE = {\n" + "\n".join(rows) + "\n}" if rows else "INLINE = {}"


def _main_block(name: str, launch: Any, kernel: str, inputs: Inputs, reference: str | None, pt: str | None) -> str:
    """The script's ``main()``: the device, the inputs, the launch, the reference and the compile-only path."""
    return "\n".join([
        "def main() -> None:",
        "    device, why = repro_device(ARCH, WORKBENCH['kind'], WORKBENCH['compile_only'])",
        "    run = why is None",
        "    generator = torch.Generator(device=device).manual_seed(SEED)",
        *(["    saved = torch.load(Path(__file__).with_name(PT), map_location='cpu')"] if pt else []),
        *[f"    {line}" for line in inputs.lines],
        "",
        "    def launch() -> None:",
        f"        {_launch_call(kernel, launch, inputs.args)}",
        "",
        *(["    def reference():", f"        return {reference}", ""] if reference else []),
        "    def compile_only() -> dict:",
        f"        return repro_compile({kernel}, SIGNATURE, CONSTEXPRS, ATTRS, OPTIONS, ARCH)",
        "",
        "    namespace = {**globals(), **locals()}  # the checks' names: the tensors above, after the launch",
        f"    repro_run({literal(name)}, launch, {'reference' if reference else 'None'}, CHECKS, namespace, "
        "why, compile_only, WORKBENCH, ATOL, RTOL, NOT_REPRODUCED)",
    ])


def _constants_block(launch: Any, saw: dict[str, Any], pt: str | None, checks: list[str], missing: list[str]) -> str:
    """The script's constants: the seed, the target, the launch's signature and options, checks and tolerances."""
    return "\n".join([
        f"SEED = {SEED}",
        f"ARCH = {saw['arch']}",
        f"GRID = {literal(launch.grid or (1,))}",
        f"PT = {literal(pt)}",
        f"SIGNATURE = {literal(launch.signature)}",
        f"CONSTEXPRS = {literal(launch.constexprs)}",
        f"ATTRS = {literal(launch.attrs)}",
        f"OPTIONS = {literal(launch.options)}",
        f"ATOL, RTOL = {literal(launch.atol)}, {literal(launch.rtol)}",
        f"CHECKS = [{', '.join(checks)}]",
        f"NOT_REPRODUCED = {literal(missing)}",
        f"WORKBENCH = {literal(saw)}",
    ])


def script_text(report: Any, script_name: str = "repro.py", pt_name: str = "repro.pt") -> tuple[str, dict[str, Any]]:
    """(the script's text, the tensors for its .pt file: empty when none is needed)."""
    from workbench.report import export_runtime as rt

    launch = report.launch
    if launch is None:
        raise WorkbenchError(
            f"this Report of {report.name} holds no launch to reproduce (a Report loaded from JSON, or one whose "
            "kernel was compiled but never bound to arguments)",
            hint="export the Report the %%tlx cell produced (%%tlx --export repro.py, or workbench.export(r, path) "
                 "with -o r), in the session that ran it")
    import torch
    import triton
    import triton.language as tl

    sources = Sources({"torch": torch, "triton": triton, "tl": tl, "Path": Path, "os": os, "sys": sys})
    for fn in (rt.repro_device, rt.repro_tensor, rt.repro_compile, rt.repro_run, CheckSpec):
        sources.need(fn.__name__, fn, "the script")
    kernel = sources.need(launch.kernel.__name__, launch.kernel, "the launch")
    inputs = Inputs(launch, sources, launch.outputs)
    checks, missing = _checks(launch, sources, inputs)
    reference = None
    if launch.bench_ref:
        reference, why = rewrite(launch.bench_ref, launch.names, sources, inputs.var, "--bench-ref")
        missing += [f"--bench-ref {launch.bench_ref}: {'; '.join(why)}"] if why else []
    problems = sources.problems + inputs.problems
    bad_args = [n for n, a in inputs.args.items() if a is None]
    if bad_args or kernel is None:
        raise WorkbenchError(f"cannot export {report.name}: " + "; ".join(dict.fromkeys(problems)),
                             hint="the reproducer needs the kernel's source and every argument as a value")
    missing += [p for p in dict.fromkeys(problems) if p not in " ".join(missing)]
    saw = _workbench_saw(report, launch)
    pt = pt_name if inputs.saved else None
    main = _main_block(report.name, launch, kernel, inputs, reference, pt)
    constants = _constants_block(launch, saw, pt, checks, missing)
    text = "\n\n\n".join([
        _header(report, saw, inputs, missing, script_name, pt),
        "from __future__ import annotations\n\n" + sources.text(_INTERPRET).strip(),
        constants, main, _inline_block(inputs.inline),
        'if __name__ == "__main__":\n    main()',
    ]) + "\n"
    return text, inputs.saved


def write_script(report: Any, path: str | Path) -> Path:
    """Write the reproducer to ``path`` (and ``path`` with ``.pt`` for the saved inputs, when there are)."""
    path = Path(path)
    pt = path.with_suffix(".pt")
    text, saved = script_text(report, path.name, pt.name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if saved:
        import torch

        torch.save(saved, pt)
    return path
