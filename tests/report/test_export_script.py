"""``workbench.export(report, "x.py")``: reproducer scripts of real ``%%tlx`` cells, run with plain python and
no workbench importable (CPU: compile-only, and ``--interpret`` for plain Triton kernels, whose checks then run
for real in Triton's interpreter)."""

from __future__ import annotations

import textwrap

import pytest
from export_helpers import run_script
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

import workbench
from workbench.errors import WorkbenchError
from workbench.report import Report

ADD_DEF = """
@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)
"""
ADD = ADD_DEF + """
x = torch.randn(4000)
y = torch.randn(4000)
out = torch.empty_like(x)
add_kernel[(triton.cdiv(4000, 256),)](x, y, out, 4000, BLOCK=256)
"""

# a kernel module that is not an installed library (as tlx_kernels is not): its helper, constant and reference
# function must be copied into the script; two launch arguments are slices of one tensor
HELPERS = '''
import triton
import triton.language as tl

SCALE: tl.constexpr = tl.constexpr(3)
OFFSETS = (1.0, -2.0)


@triton.jit
def scaled(v):
    return v * SCALE


@triton.jit
def axpy_halves(w_lo, w_hi, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, scaled(tl.load(w_lo + offs, mask=mask)) + tl.load(w_hi + offs, mask=mask), mask=mask)


def reference(w, n):
    return w[:n] * SCALE.value + w[n:] + OFFSETS[0] - 1.0
'''


@pytest.fixture(scope="module")
def ip(tmp_path_factory):
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "workbench")
    mods = tmp_path_factory.mktemp("mods")
    (mods / "export_helper_kernels.py").write_text(HELPERS)
    shell.run_cell(f"import sys; sys.path.insert(0, {str(mods)!r})")
    yield shell
    shell.run_line_magic("unload_ext", "workbench")


def cell(ip, text: str):
    with capture_output(display=True):
        res = ip.run_cell(textwrap.dedent(text))
    return res


def test_plain_triton_kernel_reproduces_its_check_in_the_interpreter(ip, tmp_path):
    res = cell(ip, '%%tlx -o r --check "out: x + y"' + ADD)
    assert res.success, res.error_in_exec
    script = workbench.export(ip.user_ns["r"], tmp_path / "add.py")
    rc, out, res = run_script(script, "--interpret")
    assert rc == 0, out
    assert res["mode"] == "interpreter" and "IMPORTED" not in out
    assert "check out: x + y: output matches: 4000 elements match" in out and "[the workbench: passed]" in out
    rc, out, res = run_script(script)  # no GPU: a compile for sm_90, the workbench's own numbers
    assert rc == 0, out
    assert res["mode"] == "compile-only" and res["same_as_workbench"] is True
    assert "check out: x + y: not run (nothing runs without a GPU)" in out


def test_a_compile_only_cell_exports_a_script_that_launches_nothing_unless_asked(ip, tmp_path):
    """Tutorial 04's buggy kernels are --compile-only cells because they hang: their scripts must not launch them
    on a GPU (the first H200 run of the export test hung on one); ``--run`` asks for the launch."""
    res = cell(ip, '%%tlx -o r --compile-only --check "out: x + y"' + ADD)
    assert res.success, res.error_in_exec
    script = workbench.export(ip.user_ns["r"], tmp_path / "add.py")
    text = script.read_text()
    assert "The cell was --compile-only: so is this script, on a GPU too" in text and "[--run]" in text
    rc, out, res = run_script(script)
    assert rc == 0, out
    assert res["mode"] == "compile-only" and res["same_as_workbench"] is True
    assert res["why"] == "the cell was --compile-only (pass --run to launch it here)"
    assert "check out: x + y: not run (the cell was compile-only)" in out
    rc, out, res = run_script(script, "--run", "--interpret")  # asked for: it runs (here in the interpreter)
    assert rc == 0 and res["mode"] == "interpreter", out


def test_a_wrong_kernel_fails_its_check_in_the_script_too(ip, tmp_path):
    wrong = ADD.replace("mask = offs < n", "mask = offs < n - 1  # the last element is never written")
    res = cell(ip, f'%%tlx -o r --check "out: x + y" --export {tmp_path / "wrong.py"}' + wrong)
    assert not res.success  # the cell's own check failed; the reproducer was written before that
    rc, out, _ = run_script(tmp_path / "wrong.py", "--interpret")
    assert rc == 1, out
    assert "output differs: 1 of 4000 elements differ; first at [3999]: got nan" in out


def test_helpers_constants_functions_and_views_travel_with_the_kernel(ip, tmp_path):
    res = cell(ip, """
        %%tlx -o r --check "out: H.reference(w, 3000)"
        import export_helper_kernels as H
        w = torch.randn(6000)
        out = torch.empty(3000)
        H.axpy_halves[(12,)](w[:3000], w[3000:], out, 3000, BLOCK=256)
    """)
    assert res.success, res.error_in_exec
    script = workbench.export(ip.user_ns["r"], tmp_path / "halves.py")
    text = script.read_text()
    for piece in ("def scaled(v):", "def axpy_halves(", "def reference(w, n):", "SCALE = tl.constexpr(3)",
                  "OFFSETS = (1.0, -2.0)", "w.as_strided((3000,), (1,), 3000)",
                  "CheckSpec('out: H.reference(w, 3000)', 'out', 'reference(w, 3000)')"):
        assert piece in text, piece
    assert "export_helper_kernels" not in text.split("# Inputs")[1]  # copied, never imported
    rc, out, res = run_script(script, "--interpret")
    assert rc == 0, out
    assert "output matches: 3000 elements match" in out


def test_small_inputs_inline_larger_ones_beside_it_the_largest_random(ip, tmp_path):
    res = cell(ip, '%%tlx -o r --check "out: x + y"' + ADD_DEF + textwrap.dedent("""
        x = torch.randn(1000)                  # 4 KB: inline
        y = torch.randn(1_000_000)[:1000]      # a 4 MB storage: the .pt file
        out = torch.empty(1000)
        add_kernel[(4,)](x, y, out, 1000, BLOCK=256)
    """))
    assert res.success, res.error_in_exec
    script = workbench.export(ip.user_ns["r"], tmp_path / "sizes.py")
    text = script.read_text()
    assert "#   x: float32 1000, the notebook's values (inline)" in text
    assert "#   y_ptr_storage: float32 1000000, the notebook's values (the .pt file)" in text
    assert "y_ptr = y_ptr_storage.as_strided((1000,), (1,), 0)" in text and (tmp_path / "sizes.pt").exists()
    rc, out, _ = run_script(script, "--interpret")
    assert rc == 0 and "output matches: 1000 elements match" in out, out
    res = cell(ip, '%%tlx -o r --check "out[:1000]: (x + y)[:1000]"' + textwrap.dedent("""
        x = torch.randn(5_000_000)             # 20 MB each: random, from the script's seed
        y = torch.rand(5_000_000)
        out = torch.empty(5_000_000)
        add_kernel[(4,)](x, y, out, 1000, BLOCK=256)
    """))
    assert res.success, res.error_in_exec
    text = workbench.export(ip.user_ns["r"], tmp_path / "big.py").read_text()
    assert "#   x: float32 5000000, random normal" in text and "#   y: float32 5000000, random normal (absolute" in text
    assert "#   out: float32 5000000, an output: NaN-filled" in text
    assert "INLINE = {}" in text and not (tmp_path / "big.pt").exists()


def test_unsigned_integer_inputs_too_large_to_save_are_random_in_their_range(ip, tmp_path):
    # FlagGems' sort launches on uint32 keys: torch has no min/max of uint32 on the CPU, and the export raised
    res = cell(ip, '%%tlx -o r --compile-only' + textwrap.dedent("""
        @triton.jit
        def widen(k_ptr, out_ptr, n, BLOCK: tl.constexpr):
            offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            tl.store(out_ptr + offs, tl.load(k_ptr + offs, mask=offs < n).to(tl.int64), mask=offs < n)

        keys = torch.randint(7, 4000, (5_000_000,)).to(torch.uint32)   # 20 MB: random, not saved
        out = torch.empty(5_000_000, dtype=torch.int64)
        widen[(4,)](keys, out, 1000, BLOCK=256)
    """))
    assert res.success, res.error_in_exec
    text = workbench.export(ip.user_ns["r"], tmp_path / "keys.py").read_text()
    assert "#   k_ptr: uint32 5000000, random integers in [7, 3999]" in text
    rc, out, _ = run_script(tmp_path / "keys.py")
    assert rc == 0, out


def test_what_cannot_be_written_is_named_and_the_rest_still_runs(ip, tmp_path):
    res = cell(ip, '%%tlx -o r --check "out: obj.twice(x) - x + y"' + ADD_DEF + textwrap.dedent("""
        class Doubler:
            def twice(self, t):
                return 2 * t
        obj = Doubler()
        x = torch.randn(4000); y = torch.randn(4000); out = torch.empty(4000)
        add_kernel[(16,)](x, y, out, 4000, BLOCK=256)
    """))
    assert res.success, res.error_in_exec
    script = workbench.export(ip.user_ns["r"], tmp_path / "obj.py")
    rc, out, res = run_script(script, "--interpret")
    assert rc == 0, out
    assert res["not_reproduced"] and "obj is a Doubler, which the script cannot make" in res["not_reproduced"][0]
    assert "not reproduced: check out: obj.twice(x) - x + y" in out and res["checks"] == []


def test_a_report_loaded_from_json_has_no_launch_to_reproduce(ip, tmp_path):
    assert cell(ip, "%%tlx -o r" + ADD).success
    again = Report.from_json(ip.user_ns["r"].to_json())
    with pytest.raises(WorkbenchError, match="holds no launch to reproduce") as e:
        workbench.export(again, tmp_path / "again.py")
    assert "%%tlx --export" in e.value.hint
    assert workbench.export(again, tmp_path / "again.ndjson").stat().st_size > 1000  # its trace: from the JSON
    with pytest.raises(WorkbenchError, match="cannot tell what to export"):
        workbench.export(again, tmp_path / "again.txt")


def test_an_installed_library_outside_site_packages_is_imported_not_copied(monkeypatch):
    """On the H200, Triton and uTLX sit in a site dir of their own (/tmp/t38, not sysconfig's site-packages): they
    are still installed distributions, so the script imports them; the workbench and tlx_kernels never travel as
    imports, and a notebook's own module (no distribution) is copied."""
    import types

    import tlx_kernels.gemm.device as device
    import triton
    import triton.language as tl

    from workbench.report import export_sources as S

    stdlib_only = (S.os.path.realpath(S.sysconfig.get_paths()["stdlib"]) + S.os.sep,)
    monkeypatch.setattr(S, "_LIBRARY_DIRS", stdlib_only)
    assert S.portable(triton) and S.portable(tl) and S.portable(textwrap)
    assert not S.portable(workbench) and not S.portable(device)
    own = types.ModuleType("my_kernels")
    own.__file__ = "/tmp/my_kernels.py"
    assert not S.portable(own)
    sources = S.Sources()
    assert sources.need("triton", triton) == "triton" and sources.imports["triton"] == "import triton"
    assert sources.blocks == []
