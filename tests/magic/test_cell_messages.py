"""What a cell says when it cannot do what it was asked: a launch that omits (or misnames) an argument is an error
at the launch's line, naming where the kernel is
defined (it pointed at the def line: issue 25)."""

from __future__ import annotations

import pytest

pytest.importorskip("IPython")
from IPython.core.interactiveshell import InteractiveShell  # noqa: E402
from IPython.utils.capture import capture_output  # noqa: E402

from workbench.errors import ArgumentError  # noqa: E402

KERNEL = """@triton.jit
def k_args(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n), mask=offs < n)

"""


@pytest.fixture(scope="module")
def ip():
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "workbench")
    shell.run_cell("import torch\nx = torch.randn(1024)\ny = torch.empty(1024)")
    yield shell
    shell.run_line_magic("unload_ext", "workbench")


@pytest.mark.parametrize("launch, says", [
    ("k_args[(1,)](x, y, BLOCK=1024)", "missing a required argument: 'n'"),
    ("k_args[(1,)](x, y, 1024, BLOK=1024)", "unexpected keyword argument(s) 'BLOK'"),
])
def test_the_error_is_at_the_launch_line(ip, launch, says):
    with capture_output() as out:
        res = ip.run_cell("%%tlx\n" + KERNEL + launch + "\n")
    assert isinstance(res.error_in_exec, ArgumentError)
    text = out.stdout + out.stderr
    assert says in text and "(k_args is defined at cell line 3)" in text, text
    assert "Cell line 7" in text and launch in text, text


def test_sanitize_without_a_gpu_says_it_did_not_run(ip):
    """--sanitize on a CPU showed nothing in the viewer (issue 25)."""
    from workbench.report import MIME_TYPE
    from workbench.run.device import detect

    if detect().available:
        pytest.skip("the no-GPU path")
    with capture_output(display=True) as out:
        res = ip.run_cell("%%tlx --sanitize memcheck\n" + KERNEL + "k_args[(1,)](x, y, 1024, BLOCK=1024)\n")
    assert res.success
    [d] = [o.data[MIME_TYPE] for o in out.outputs if MIME_TYPE in o.data]
    said = [x["message"] for x in d["diagnostics"] if x["source"] == "magic"]
    assert any(m.startswith("--sanitize memcheck: not run") for m in said), d["diagnostics"]
