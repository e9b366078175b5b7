"""``%%tlx --export PATH``: the magic writes the cell's reproducer script and TritonParse trace, says so on the
Report, and never fails a cell for an export it could not write."""

from __future__ import annotations

import json

from cells import ADD, SCALE, TLX
from IPython.utils.capture import capture_output


def run(ip, cell: str):
    with capture_output(display=True) as cap:
        res = ip.run_cell(cell)
    return res, cap


def notes(report) -> list[str]:
    return [d["message"] for d in report.diagnostics if "--export" in d["message"]]


def test_help_lists_export(ip):
    doc = ip.find_cell_magic("tlx").__doc__ or ""
    assert "--export PATH" in doc and "reproducer" in doc and "TritonParse" in doc


def test_one_cell_writes_a_script_and_a_trace_and_says_where(ip, tmp_path):
    script, trace = tmp_path / "repro.py", tmp_path / "sub" / "trace.ndjson"
    res, cap = run(ip, f'%%tlx -o r --check "out: x + y" --export {script} --export "{trace}"\n' + ADD)
    assert res.success, res.error_in_exec
    r = ip.user_ns["r"]
    assert notes(r) == [f"--export: wrote {script}: a reproducer of vector_add: python {script}",
                        f"--export: wrote {trace}: vector_add's compile and launch records for TritonParse "
                        "(tritonparse's parser and viewer open it)"]
    assert f"--export: wrote {script}" in cap.stdout + "".join(o.data.get("text/plain", "") for o in cap.outputs)
    text = script.read_text()
    assert "def vector_add(" in text and "CheckSpec('out: x + y', 'out', 'x + y')" in text
    events = [json.loads(line)["event_type"] for line in trace.read_text().splitlines()]
    assert events == ["compilation", "launch"]


def test_the_kernel_launched_last_is_exported_unless_kernel_names_one(ip, tmp_path):
    both = ADD + "\n" + SCALE
    res, _ = run(ip, f"%%tlx -o r --export {tmp_path / 'last.py'}\n" + both)
    assert res.success, res.error_in_exec
    assert "def scale_kernel(" in (tmp_path / "last.py").read_text()
    res, _ = run(ip, f"%%tlx --kernel vector_add --export {tmp_path / 'named.py'}\n" + both)
    assert res.success, res.error_in_exec
    text = (tmp_path / "named.py").read_text()
    assert "def vector_add(" in text and "def scale_kernel(" not in text


def test_an_export_that_cannot_be_written_is_a_warning_not_a_failed_cell(ip, tmp_path):
    res, _ = run(ip, f"%%tlx -o r --export {tmp_path / 'repro.txt'}\n" + ADD)
    assert res.success, res.error_in_exec
    [warning] = [d for d in ip.user_ns["r"].diagnostics if "--export" in d["message"]]
    assert warning["severity"] == "warning" and "cannot tell what to export" in warning["message"]
    assert ".ndjson" in warning["hint"] and not (tmp_path / "repro.txt").exists()


def test_a_failing_check_still_exports_its_reproducer(ip, tmp_path):
    wrong = ADD.replace("x + y, mask=mask", "x - y, mask=mask")
    res, _ = run(ip, f'%%tlx --check "out: x + y" --export {tmp_path / "bug.py"}\n' + wrong)
    assert not res.success  # the check failed the cell, after the reproducer of the bug was written
    assert "x - y" in (tmp_path / "bug.py").read_text()


def test_a_tlx_cell_exports_compile_only_here(ip, tmp_path):
    res, _ = run(ip, f"%%tlx -o r --export {tmp_path}/\n" + TLX)
    assert res.success, res.error_in_exec
    [trace] = list(tmp_path.glob("dedicated_log_triton_trace_*.ndjson"))
    comp = json.loads(trace.read_text().splitlines()[0])
    assert comp["payload"]["metadata"]["name"] == ip.user_ns["r"].name
    assert ".ttgir" in "".join(comp["payload"]["file_content"])
