"""The %%tlx options of this layer on a machine without a GPU: nothing changes (compile-only or Triton's
interpreter), --sanitize says that nothing was sanitized, and --check re-runs on fresh inputs."""

from __future__ import annotations

import pytest

pytest.importorskip("IPython")
from IPython.core.interactiveshell import InteractiveShell  # noqa: E402
from IPython.utils.capture import capture_output  # noqa: E402
from sample_kernels import kernel_text  # noqa: E402

from workbench.report import MIME_TYPE, validate  # noqa: E402

ADD = kernel_text("vector_add") + """
n = 500
x = torch.randn(n, device=DEVICE)
y = torch.randn(n, device=DEVICE)
out = torch.empty(n, device=DEVICE)
vector_add[(triton.cdiv(n, 128),)](x, y, out, n, BLOCK=128)
"""
# the kernel writes nothing; the output already holds the right answer
STALE = ADD.replace("tl.store(out_ptr + offs, x + y, mask=mask)", "tl.load(out_ptr + offs, mask=mask)").replace(
    "out = torch.empty(n, device=DEVICE)", "out = x + y")
assert STALE.count("tl.store") == 0


@pytest.fixture(scope="module")
def ip(has_gpu):
    if has_gpu:
        pytest.skip("checks the no-GPU path")
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "workbench")
    yield shell
    shell.run_line_magic("unload_ext", "workbench")


@pytest.fixture(scope="module")
def has_gpu() -> bool:
    from workbench.run.device import detect

    return detect().available


def run(ip, cell):
    with capture_output(display=True) as cap:
        res = ip.run_cell(cell)
    return res, [o.data[MIME_TYPE] for o in cap.outputs if MIME_TYPE in o.data]


def test_isolation_options_change_nothing_without_a_gpu(ip):
    for opts in ("--timeout 2", "--no-isolate", "--timeout 0.5 --no-isolate"):
        res, [d] = run(ip, f"%%tlx {opts}\n" + ADD)
        assert res.success, res.error_in_exec
        assert d["runs"][-1]["mode"] == "compile" and "isolation" not in d["runs"][-1]


def test_sanitize_without_a_gpu_says_nothing_was_sanitized(ip):
    res, [d] = run(ip, "%%tlx --sanitize racecheck\n" + ADD)
    assert res.success
    assert any("--sanitize racecheck: nothing was sanitized" in g["message"] for g in d["diagnostics"])
    res, _ = run(ip, "%%tlx --sanitize helgrind\n" + ADD)
    assert not res.success  # not a tool we offer


def test_check_re_runs_on_fresh_inputs_and_catches_a_stale_output(ip):
    res, [d] = run(ip, '%%tlx --check "out: x + y"\n' + ADD)
    assert res.success, res.error_in_exec
    validate(d)
    [c] = d["runs"][-1]["checks"]
    assert c["status"] == "passed" and c["fresh"]["status"] == "passed" and "float32 ulps" in c["message"]
    res, [d] = run(ip, '%%tlx --check "out: x + y"\n' + STALE)
    assert not res.success and type(res.error_in_exec).__name__ == "CheckError"
    [c] = d["runs"][-1]["checks"]
    assert c["status"] == "failed" and "NaN-poisoned outputs (out)" in c["message"] and c["fresh"]["status"] == "failed"
    res, [d] = run(ip, '%%tlx --no-fresh --check "out: x + y"\n' + STALE)
    assert res.success  # fooled, as asked: --no-fresh checks only what the cell left
    [c] = d["runs"][-1]["checks"]
    assert "fresh" not in c


def test_isolation_note_reports_the_median_cost():
    from types import SimpleNamespace

    from workbench.magic.sections import isolation_note

    runs = [{"isolation": {"mode": "worker", "overhead_ms": ms, "kernel_ms": 0.02, "worker_pid": 7}}
            for ms in (0.3, 0.08, 0.09)]
    note = isolation_note(SimpleNamespace(runs=runs + [{"isolation": {"mode": "in-process", "reason": "x"}}]))
    assert note["severity"] == "info" and "isolation added 90 us per launch (median of 3)" in note["message"]
    assert isolation_note(SimpleNamespace(runs=[{"mode": "compile"}])) is None
