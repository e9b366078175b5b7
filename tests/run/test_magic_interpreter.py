"""%%tlx --check without a GPU runs plain Triton kernels in Triton's interpreter: later cells still compile
(the interpreter's patches are undone), a bf16 tl.dot GEMM checks out against torch, and a kernel the
interpreter would compute wrongly (bf16 arithmetic) is compiled only, with the reason in its run record."""

from __future__ import annotations

import pytest

pytest.importorskip("IPython")
from IPython.core.interactiveshell import InteractiveShell  # noqa: E402
from IPython.utils.capture import capture_output  # noqa: E402

from workbench.report import MIME_TYPE, validate  # noqa: E402

# tl.cdiv is a device function in triton.language.standard: interpreting it used to leave tl.core patched
CDIV = """@triton.jit
def cdiv_add(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.cdiv(n, BLOCK), mask=m)

n = 100
x = torch.randn(n)
out = torch.empty(n)
cdiv_add[(triton.cdiv(n, 32),)](x, out, n, BLOCK=32)
"""

TLX_COPY = """@triton.jit
def tlx_copy(x_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    buf = tlx.local_alloc((BLOCK,), tl.float32, 1)
    tlx.local_store(tlx.local_view(buf, 0), tl.load(x_ptr + offs))
    tl.store(out_ptr + offs, tlx.local_load(tlx.local_view(buf, 0)))

copied = torch.empty(128)
tlx_copy[(1,)](torch.randn(128), copied, BLOCK=128)
"""

# step 1 of tutorial 01 in small: TMA descriptors, bf16 tl.dot, fp32 accumulator, bf16 out
GEMM = """from triton.tools.tensor_descriptor import TensorDescriptor

@triton.jit
def small_gemm(a_desc, b_desc, c_desc, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pid_m, pid_n = tl.program_id(0), tl.program_id(1)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BK)):
        acc = tl.dot(a_desc.load([pid_m * BM, k * BK]), b_desc.load([k * BK, pid_n * BN]), acc)
    c_desc.store([pid_m * BM, pid_n * BN], acc.to(c_desc.dtype))

a = torch.randn(64, 96, dtype=torch.bfloat16)
b = torch.randn(96, 64, dtype=torch.bfloat16)
c = torch.full((64, 64), float("nan"), dtype=torch.bfloat16)
descs = [TensorDescriptor.from_tensor(t, blk) for t, blk in ((a, [32, 32]), (b, [32, 32]), (c, [32, 32]))]
small_gemm[(2, 2)](*descs, 96, BM=32, BN=32, BK=32)
"""

BF16_ADD = """@triton.jit
def bf16_add(x_ptr, y_ptr, out_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(out_ptr + offs, tl.load(x_ptr + offs) + tl.load(y_ptr + offs))

x = torch.randn(64, dtype=torch.bfloat16)
y = torch.randn(64, dtype=torch.bfloat16)
out = torch.zeros(64, dtype=torch.bfloat16)
bf16_add[(1,)](x, y, out, BLOCK=64)
"""
REFUSED = "not interpreted: Triton's interpreter computes bf16 arith.addf wrongly"


@pytest.fixture(scope="module")
def ip():
    from workbench.run.device import detect

    if detect().available:
        pytest.skip("checks the no-GPU path")
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "workbench")
    yield shell
    shell.run_line_magic("unload_ext", "workbench")


def run(ip, cell):
    with capture_output(display=True) as cap:
        res = ip.run_cell(cell)
    assert res.success, res.error_in_exec or res.error_before_exec
    [d] = [o.data[MIME_TYPE] for o in cap.outputs if MIME_TYPE in o.data]
    validate(d)
    return d


def test_cells_after_an_interpreted_check_still_compile(ip):
    d = run(ip, '%%tlx --check "out: x + 4"\n' + CDIV)
    assert d["runs"][-1]["mode"] == "interpreter" and d["runs"][-1]["checks"][0]["status"] == "passed"
    d = run(ip, "%%tlx\n" + TLX_COPY)  # failed with "'block_argument' object has no attribute 'dtype'"
    assert d["kernel"]["name"] == "tlx_copy" and d["runs"][-1]["mode"] == "compile"
    d = run(ip, "%%tlx\n" + CDIV.replace("cdiv_add", "cdiv_add2"))
    assert d["kernel"]["name"] == "cdiv_add2"


def test_bf16_dot_gemm_checks_out_in_the_interpreter(ip):
    d = run(ip, '%%tlx --check "c: a @ b" --atol 0.05 --rtol 0.02\n' + GEMM)
    [check] = d["runs"][-1]["checks"]
    assert d["runs"][-1]["mode"] == "interpreter" and check["status"] == "passed", check


@pytest.mark.parametrize("option", ['--check "out: x + y"', "--interpret"])
def test_bf16_arithmetic_is_compiled_only_and_says_why(ip, option):
    d = run(ip, f"%%tlx {option}\n" + BF16_ADD)
    r = d["runs"][-1]
    assert r["mode"] == "compile" and not r["ran"] and REFUSED in r["reason"] and r["reason"].endswith("compile-only")
    assert not ip.user_ns["out"].any()  # nothing ran
    [note] = [x for x in d["diagnostics"] if x["message"].startswith("nothing ran")]
    assert REFUSED in note["message"] and "GPU" in note["hint"]
    if option.startswith("--check"):
        [check] = r["checks"]
        assert check["status"] == "skipped" and REFUSED in check["message"]
