"""The %%tlx magic in an in-process IPython shell (the nbclient tests cover a real kernel)."""

from __future__ import annotations

import re

import pytest
from cells import (
    ADD,
    ADD_LOAD_LINE,
    COMPILE_ERROR,
    COMPILE_ERROR_LINE,
    GLUON,
    SCALE,
    SYNTAX_ERROR,
    SYNTAX_ERROR_LINE,
    WRONG,
)
from IPython.utils.capture import capture_output

from workbench.report import MIME_TYPE, Report, validate
from workbench.report.packing import unpack_stage

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def run(ip, cell: str):
    """Run a cell; return (result, rich outputs, stdout)."""
    with capture_output(display=True) as cap:
        res = ip.run_cell(cell)
    return res, cap.outputs, cap.stdout


def traceback_text(res) -> str:
    exc = res.error_in_exec or res.error_before_exec
    assert exc is not None
    return ANSI.sub("", "\n".join(exc._render_traceback_()))


def reports(outputs) -> list[dict]:
    return [o.data[MIME_TYPE] for o in outputs if MIME_TYPE in o.data]


def test_load_registers_help_and_unload(ip):
    assert ip.find_cell_magic("tlx") is not None and ip.find_line_magic("tlx") is not None
    doc = ip.find_cell_magic("tlx").__doc__
    for opt in (
        "--target",
        "--stages",
        "--compile-only",
        "--check",
        "--atol",
        "--bench",
        "--timeline",
        "--diff",
        "-o",
        "--quiet",
        "--kernel",
        "--interpret",
    ):
        assert opt in doc
    with capture_output() as cap:
        ip.run_cell("%%tlx?")
    assert "--compile-only" in cap.stdout
    # the usage reads as the cell magic it is, in plain text (IPython's reST '::' marker is not shown)
    assert doc.startswith("Usage:\n\n  %%tlx [--target TARGET]") and "::" not in doc.split("\n", 1)[0]
    ip.run_line_magic("unload_ext", "workbench")
    assert ip.find_cell_magic("tlx") is None and ip.find_line_magic("tlx") is None
    ip.run_line_magic("load_ext", "workbench")
    assert ip.find_cell_magic("tlx") is not None


def test_cell_compiles_launch_and_reports(ip, has_gpu):
    res, outputs, _ = run(ip, "%%tlx -o rep --stages ttgir,ptx\n" + ADD)
    assert res.success, res.error_in_exec
    [d] = reports(outputs)
    validate(d)
    assert {"text/html", "text/plain", MIME_TYPE} <= set(outputs[0].data)
    assert d["kernel"]["name"] == "vector_add" and d["kernel"]["kind"] == "triton"
    assert d["cell"]["source"].startswith("%%tlx -o rep") and d["cell"]["kernel_first_line"] == 3
    assert d["kernel"]["source"]["in_cell"]
    names = [s["name"] for s in d["stages"]]
    assert names[:4] == ["ttir", "ttgir", "llir", "ptx"] and "sass" in names
    assert d["view"]["stages_first"] == ["ttgir", "ptx"]
    ttgir = unpack_stage(next(s for s in d["stages"] if s["name"] == "ttgir"))
    assert ttgir["line_map"][str(ADD_LOAD_LINE)]  # the cell's tl.load line maps into TTGIR
    lines = ttgir["text"].splitlines()
    assert any("tt.load" in lines[i - 1] for i in ttgir["line_map"][str(ADD_LOAD_LINE)])
    [r] = d["runs"]
    assert r["grid"] == [4] and [a["name"] for a in r["arguments"]][:4] == ["x_ptr", "y_ptr", "out_ptr", "n"]
    if has_gpu:
        assert r["mode"] == "gpu" and r["ran"]
    else:
        assert r["mode"] == "compile" and not r["ran"] and "no GPU" in r["reason"]
        assert any(x["message"].startswith("nothing ran") for x in d["diagnostics"])
        assert "not run" in outputs[0].data["text/plain"]
    rep = ip.user_ns["rep"]
    assert isinstance(rep, Report) and rep.stage("ptx")

    # unchanged cell again: a compile-cache hit
    res, outputs, _ = run(ip, "%%tlx -o rep --stages ttgir,ptx\n" + ADD)
    assert res.success and reports(outputs)[0]["kernel"]["cache_hit"]


def test_check_runs_in_interpreter_and_catches_wrong_kernel(ip, has_gpu):
    res, outputs, _ = run(ip, '%%tlx -o rep --check "out: x + y"\n' + ADD)
    assert res.success, res.error_in_exec
    [d] = reports(outputs)
    [c] = d["runs"][-1]["checks"]
    assert c["status"] == "passed" and c["total"] == 1000
    assert d["runs"][-1]["ran"] and d["runs"][-1]["mode"] == ("gpu" if has_gpu else "interpreter")
    # the interpreter put nothing of its own into the user's namespace
    assert "interpreter_builder" not in ip.user_ns and "_patch_lang" not in ip.user_ns

    res, outputs, _ = run(ip, '%%tlx -o bad --check "out: x + y"\n' + WRONG)
    assert not res.success
    assert type(res.error_in_exec).__name__ == "CheckError"
    tb = traceback_text(res)
    assert "Cell line 1" in tb and "differ" in tb and "^" in tb
    [d] = reports(outputs)  # the Report is still shown, with the failed check
    validate(d)
    [c] = d["runs"][-1]["checks"]
    assert c["status"] == "failed" and c["mismatched"] > 0 and c["max_abs_err"] > 0
    # the == form and tolerances
    res, _, _ = run(ip, '%%tlx --quiet --check "out == x + y" --atol 1e-4\n' + ADD)
    assert res.success
    res, _, _ = run(ip, '%%tlx --quiet --check "out == x + y" --atol 100\n' + WRONG)
    assert res.success  # loose enough


def test_check_without_run_is_skipped(ip):
    res, outputs, _ = run(ip, '%%tlx --compile-only --check "out: x + y"\n' + ADD)
    assert res.success
    [c] = reports(outputs)[0]["runs"][-1]["checks"]
    assert c["status"] == "skipped" and "--compile-only" in c["message"]


def test_timeline_and_bench_of_a_compile_only_cell_say_compile_only(ip):
    """On a GPU or not, --compile-only is why nothing was timed: the skip says so (not "no GPU")."""
    res, outputs, _ = run(ip, "%%tlx --compile-only --bench --timeline\n" + ADD)
    assert res.success, res.error_in_exec
    [d] = reports(outputs)
    assert d["timeline"]["status"] == "skipped" and d["timeline"]["reason"].startswith("--compile-only")
    [m] = d["measurements"]
    assert m["status"] == "skipped" and m["reason"].startswith("--compile-only") and not m["errors"]


def test_syntax_error_fails_with_cell_line(ip):
    res, outputs, _ = run(ip, "%%tlx\n" + SYNTAX_ERROR)
    assert not res.success and not reports(outputs)
    tb = traceback_text(res)
    assert f"Cell line {SYNTAX_ERROR_LINE}" in tb
    assert "mask = offs < n)" in tb and "^" in tb
    assert "site-packages" not in tb and "magic.py" not in tb


def test_compile_error_fails_with_cell_line(ip):
    res, _, _ = run(ip, "%%tlx\n" + COMPILE_ERROR)
    assert not res.success
    exc = res.error_in_exec
    assert type(exc).__name__ == "CompileError" and exc.lineno == COMPILE_ERROR_LINE
    tb = traceback_text(res)
    lines = tb.splitlines()
    assert f"Cell line {COMPILE_ERROR_LINE}, in vector_add" in tb and "zz" in lines[0]
    src = next(i for i, ln in enumerate(lines) if "x + zz" in ln)
    assert lines[src + 1].strip() == "^" and lines[src + 1].index("^") == lines[src].index("zz")
    assert "site-packages" not in tb


def test_runtime_error_traceback_starts_in_cell(ip):
    res, _, _ = run(ip, "%%tlx\nx = 1\nundefined_thing + x\n")
    assert not res.success and isinstance(res.error_in_exec, NameError)
    tb = traceback_text(res)
    assert "undefined_thing" in tb and "magic.py" not in tb


def test_bad_options_fail_on_line_1(ip):
    res, _, _ = run(ip, "%%tlx --target sm_42\npass\n")
    assert not res.success and "Cell line 1" in traceback_text(res)
    res, _, _ = run(ip, '%%tlx --check "out: x +"\npass\n')
    assert not res.success and "Cell line 1" in traceback_text(res)


@pytest.mark.parametrize(("opts", "needle", "message"), [
    ("--timeout -3", "--timeout", "--timeout -3: needs a number of seconds above 0"),
    ("--budget 0", "--budget", "--budget 0: needs a number of seconds above 0"),
    ("--atol -0.5", "--atol", "--atol -0.5: needs a tolerance of 0 or more"),
    ("--bench --flops '2*('", "'2*('", "--flops '2*(' is not a valid expression"),
    ("--bench --bench-ref 'x +'", "'x +'", "--bench-ref 'x +' is not a valid expression"),
])
def test_option_values_that_cannot_work_fail_at_the_option_before_the_cell_runs(ip, opts, needle, message):
    res, _, _ = run(ip, f"%%tlx {opts}\nran_the_cell = True\n")
    assert not res.success and "ran_the_cell" not in ip.user_ns
    tb = traceback_text(res).splitlines()
    assert message in tb[0] and "Cell line 1" in tb[1], tb
    assert tb[3].index("^") == tb[2].index(needle), tb


def test_options_the_cell_will_not_use_are_warned_about(ip):
    """An option that only acts with another (--flops needs --bench) would otherwise be silently dropped."""
    res, outputs, _ = run(ip, "%%tlx --compile-only --flops 2*n --atol 1e-3 --budget 3 --no-fresh\n" + ADD)
    assert res.success, res.error_in_exec
    [d] = reports(outputs)
    warned = {x["message"] for x in d["diagnostics"] if x["source"] == "magic" and x["severity"] == "warning"}
    assert warned == {"--flops is ignored: it is used with --bench or --search",
                      "--atol is ignored: it is used with --check", "--no-fresh is ignored: it is used with --check",
                      "--budget is ignored: it is used with --search or --stress"}, warned
    res, outputs, _ = run(ip, '%%tlx --compile-only --bench --flops 2*n --check "out: x + y" --atol 1e-3\n' + ADD)
    assert not [x for x in reports(outputs)[0]["diagnostics"] if "is ignored" in x["message"]]
    from workbench.magic import options

    args = options.tlx_arguments(lambda: None).parser.parse_args(["--search", "--bench-ref", "x", "--timeline"])
    assert [d["message"].split(" (")[0] for d in options.ignored(args)] == [
        "--bench-ref is ignored with --search", "--timeline is ignored with --search"]
    args = options.tlx_arguments(lambda: None).parser.parse_args(["--stress", "5", "--timeline"])
    assert [d["message"] for d in options.ignored(args)] == [
        "--timeline is ignored with --stress (the stress runs every delayed build itself)"]


def test_a_bench_count_that_raises_names_its_option(ip):
    res, outputs, _ = run(ip, "%%tlx --compile-only --bench --flops 2*undefined_n\n" + ADD)
    assert res.success, res.error_in_exec
    [m] = reports(outputs)[0]["measurements"]
    assert m["status"] == "error" and m["reason"] == \
        "--flops '2*undefined_n' raised NameError: name 'undefined_n' is not defined", m


def test_a_cell_asking_for_a_missing_gpu_is_told_how_to_run_without_one(ip, has_gpu):
    if has_gpu:
        pytest.skip("the hint is for a machine without a GPU")
    res, _, _ = run(ip, '%%tlx\nz = torch.empty(4, device="cuda")\n')
    assert "hint: there is no GPU here" in traceback_text(res) and "device=DEVICE" in traceback_text(res)
    res, _, _ = run(ip, "%%tlx\nfrom tlx_kernels.gemm import ws_cooperative\n"
                        "ws_cooperative.matmul(torch.ones(64, 64, dtype=torch.bfloat16), torch.ones(64, 64, "
                        "dtype=torch.bfloat16))\n")
    tb = traceback_text(res)  # already on the CPU: the library's own message says what to do, and no other hint
    assert "matmul: the tensors must be on a CUDA GPU, got cpu" in tb and "there is no GPU here" not in tb


def test_kernel_option_output_and_quiet(ip):
    res, outputs, _ = run(ip, "%%tlx\n" + ADD + SCALE)
    assert res.success
    assert [d["kernel"]["name"] for d in reports(outputs)] == ["vector_add", "scale_kernel"]
    assert reports(outputs)[0]["kernels"] == ["vector_add", "scale_kernel"]
    res, outputs, _ = run(ip, "%%tlx --kernel vector_add -o one\n" + ADD + SCALE)
    assert [d["kernel"]["name"] for d in reports(outputs)] == ["vector_add"]
    assert ip.user_ns["one"].name == "vector_add"
    res, outputs, _ = run(ip, "%%tlx --quiet -o last\n" + ADD + SCALE)
    assert res.success and not outputs and ip.user_ns["last"].name == "scale_kernel"
    res, _, _ = run(ip, "%%tlx --kernel nope\n" + ADD)
    assert not res.success and "vector_add" in traceback_text(res)


def test_line_magic(ip):
    run(ip, "%%tlx --quiet\n" + ADD)
    res, outputs, _ = run(ip, "%tlx --compile-only -o lm vector_add[(4,)](x, y, out, n, BLOCK=256)")
    assert res.success, res.error_in_exec
    [d] = reports(outputs)
    assert d["kernel"]["cache_hit"] and not d["kernel"]["source"]["in_cell"]
    assert d["cell"]["kernel_first_line"] is None and d["cell"]["source"].startswith("%tlx --compile-only")
    res, outputs, _ = run(ip, "%tlx --stages ptx")
    assert res.success and reports(outputs)[0]["view"]["stages_first"] == ["ptx"]


def test_diff_against_previous_run(ip):
    run(ip, "%%tlx --quiet\n" + ADD)
    res, outputs, _ = run(ip, "%%tlx --diff -o changed\n" + WRONG)
    assert res.success
    [d] = reports(outputs)
    validate(d)
    p = d["previous"]
    assert p is not None and not p["same_key"]
    assert "-    tl.store(out_ptr + offs, x + y, mask=mask)" in p["source_diff"]
    assert "+    tl.store(out_ptr + offs, x - y, mask=mask)" in p["source_diff"]
    assert any(s["status"] == "changed" for s in p["stages"])
    assert p["label"].startswith(("In [", "report ")), p["label"]  # the cell's run, by its prompt when it has one
    assert f"Diff against {p['label']}" in outputs[0].data["text/html"]
    # against a Report in a variable: named as the user named it
    res, outputs, _ = run(ip, "%%tlx --diff changed\n" + WRONG)
    assert reports(outputs)[0]["previous"]["same_key"] and reports(outputs)[0]["previous"]["label"] == "changed"


def test_gluon_kernel_without_gpu(ip, has_gpu):
    res, outputs, _ = run(ip, '%%tlx --check "dst: src"\n' + GLUON)
    assert res.success, res.error_in_exec
    [d] = reports(outputs)
    validate(d)
    assert d["kernel"]["kind"] == "gluon" and d["kernel"]["name"] == "copy_kernel"
    if not has_gpu:
        [c] = d["runs"][-1]["checks"]
        assert c["status"] == "skipped" and "no GPU" in c["message"]


def test_bench_and_timeline_without_gpu(ip, has_gpu):
    if has_gpu:
        pytest.skip("checks the no-GPU path")
    res, outputs, _ = run(ip, "%%tlx --bench --timeline\n" + ADD)
    assert res.success, res.error_in_exec
    [d] = reports(outputs)
    validate(d)
    [m] = d["measurements"]
    assert m["kind"] == "bench" and m["status"] == "skipped" and "GPU" in m["reason"]
    assert d["timeline"]["kind"] == "timeline" and d["timeline"]["status"] == "skipped"


def test_timeline_takes_a_level(ip, has_gpu):
    """--timeline LEVEL (fine, waits, task); without one, fine. A level that does not exist is a usage error."""
    from workbench.magic import magic as M

    parse = M.TlxMagics.tlx.parser.parse_args
    assert parse(["--timeline"]).timeline == "fine"
    assert parse(["--timeline", "waits"]).timeline == "waits"
    assert parse([]).timeline is None
    if not has_gpu:
        res, outputs, _ = run(ip, "%%tlx --timeline task\n" + ADD)
        assert res.success, res.error_in_exec
        [d] = reports(outputs)
        assert d["timeline"]["status"] == "skipped"
    res, _, _ = run(ip, "%%tlx --timeline sometimes\n" + ADD)
    assert not res.success and "sometimes" in str(res.error_in_exec)


def test_direct_compile_is_captured(ip):
    res, outputs, _ = run(
        ip,
        "%%tlx\n" + ADD.split("\nn = ")[0] + "\n"
        "import workbench\nx = torch.randn(8)\n"
        "art = workbench.compile(vector_add, x, x, x, 8, BLOCK=256)\n",
    )
    assert res.success, res.error_in_exec
    [d] = reports(outputs)
    assert d["kernel"]["launches"] == 0 and d["runs"] == []


def test_autotuned_kernel_without_gpu(ip, has_gpu):
    from cells import TUNED

    res, outputs, _ = run(ip, '%%tlx --check "out: x + y"\n' + TUNED)
    assert res.success, res.error_in_exec
    ds = reports(outputs)
    assert all(d["kernel"]["name"] == "tuned_add" for d in ds)
    if not has_gpu:  # every config compiled, the first one run in the interpreter for the check
        assert sorted(d["metadata"]["num_warps"] for d in ds) == [4, 8]
        assert [c["status"] for d in ds for c in d["runs"][-1]["checks"]] == ["passed"]


def test_tlx_kernel(ip, has_gpu):
    from cells import TLX, TLX_STORE_LINE

    res, outputs, _ = run(ip, '%%tlx --check "y: x * 2"\n' + TLX)
    assert res.success, res.error_in_exec
    [d] = reports(outputs)
    validate(d)
    assert d["kernel"]["kind"] == "tlx" and d["kernel"]["source"]["in_cell"]
    names = [s["name"] for s in d["stages"]]
    assert names == ["ttir", "ttgir", "llir", "ptx", "sass"]
    ttgir = unpack_stage(next(s for s in d["stages"] if s["name"] == "ttgir"))
    assert str(TLX_STORE_LINE) in ttgir["line_map"]
    assert "ttg.warp_specialize" in ttgir["text"]
    tasks = d["metadata"]["tasks"]
    assert [t["num_warps"] for t in tasks] == [4, 4] and tasks[0]["partition"] is None
    [c] = d["runs"][-1]["checks"]
    assert c["status"] == ("passed" if has_gpu else "skipped")


def test_editing_one_kernel_keeps_the_others_compiled(ip):
    """With a cell id (as JupyterLab sends), the cell's file name is stable: an edit below a kernel
    does not recompile it; the edited kernel is recompiled."""
    two = (ADD.replace("def vector_add", "def first_kernel").replace("vector_add[", "first_kernel[")
           + "\n" + ADD.replace("def vector_add", "def second_kernel").replace("vector_add[", "second_kernel["))
    with capture_output(display=True) as cap:
        assert ip.run_cell("%%tlx\n" + two, cell_id="cell-edit-test").success
    first = {d["kernel"]["name"]: d for d in reports(cap.outputs)}
    edited = two.replace("def second_kernel(x_ptr, y_ptr", "def second_kernel(x_ptr,  y_ptr")
    with capture_output(display=True) as cap:
        assert ip.run_cell("%%tlx\n" + edited, cell_id="cell-edit-test").success
    again = {d["kernel"]["name"]: d for d in reports(cap.outputs)}
    assert set(first) == set(again) == {"first_kernel", "second_kernel"}
    assert again["first_kernel"]["kernel"]["cache_hit"] is True
    assert again["second_kernel"]["kernel"]["cache_hit"] is False
    assert again["first_kernel"]["cell"]["filename"] == first["first_kernel"]["cell"]["filename"]


def test_tlx_compile_error_points_at_the_cell_line(ip):
    """An error TLX's own verifier raises in an MLIR pass reaches the user at their cell line, not as a
    traceback from inside Triton."""
    from cells import TLX

    wait = "tlx.barrier_wait(tlx.local_view(full, slot), (t // NUM_BUF) & 1)"
    bad = TLX.replace(wait, wait.replace("full", "bufs"))  # waits on a data buffer, not a barrier
    res, outputs, _ = run(ip, "%%tlx\n" + bad)
    err = res.error_in_exec
    assert type(err).__name__ == "CompileError"
    line = 1 + next(i for i, ln in enumerate(bad.splitlines(), start=1) if "local_view(bufs, slot), (t" in ln)
    assert err.lineno == line and "barrier" in err.message
    text = ANSI.sub("", err._render_traceback_()[0])
    assert f"Cell line {line}, in ew_kernel" in text and "site-packages" not in text


def test_stalls_without_a_gpu_say_why_and_validate(ip, has_gpu):
    if has_gpu:
        pytest.skip("checks the no-GPU path (tests/magic/test_stalls_gpu.py runs it)")
    res, outputs, _ = run(ip, "%%tlx --stalls\n" + ADD)
    assert res.success, res.error_in_exec
    [d] = reports(outputs)
    validate(d)
    [m] = [m for m in d["measurements"] if m["kind"] == "stalls"]
    assert m["status"] == "skipped" and "no GPU" in m["reason"]
