"""A fork-style TLX kernel in a ``%%tlx`` cell, run in a real ipykernel (nbclient), gives valid Reports.

The kernel is written as a user of Meta's fork writes one: ``import triton.language.extra.tlx as tlx``,
``@triton.autotune`` over configs with a ``pre_hook`` (it sets the TMA descriptors' block shapes) and
``ctas_per_cga``, ``@triton.jit``, warp-specialized (a TMA producer and a consumer with a register
budget over an mbarrier ring). Without a GPU every config is compiled (one Report each); with one the
autotuner runs and ``--check`` verifies the output.
"""

from __future__ import annotations

import nbformat
import pytest
from nbclient import NotebookClient

from workbench.report import MIME_TYPE, Report, validate

pytestmark = pytest.mark.slow

RING = '''%%tlx --stages ttgir,ptx --check "y: x * 2" -o rep
import triton.language.extra.tlx as tlx
from triton.tools.tensor_descriptor import TensorDescriptor


def tile_blocks(nargs):
    nargs["x_desc"].block_shape = [nargs["BM"], nargs["BN"]]
    nargs["y_desc"].block_shape = [nargs["BM"], nargs["BN"]]


@triton.autotune(
    configs=[
        triton.Config({"BM": 64, "BN": 64, "SLOTS": 2}, num_warps=4, pre_hook=tile_blocks, ctas_per_cga=(1, 1, 1)),
        triton.Config({"BM": 128, "BN": 64, "SLOTS": 3}, num_warps=4, pre_hook=tile_blocks),
    ],
    key=["M", "N"],
)
@triton.jit
def ring_scale(x_desc, y_desc, M, N, scale, BM: tl.constexpr, BN: tl.constexpr, SLOTS: tl.constexpr):
    row = tl.program_id(0) * BM
    tiles = tl.cdiv(N, BN)
    ring = tlx.local_alloc((BM, BN), tlx.dtype_of(x_desc), SLOTS)
    full = tlx.alloc_barriers(num_barriers=SLOTS, arrive_count=1)
    empty = tlx.alloc_barriers(num_barriers=SLOTS, arrive_count=1)
    with tlx.async_tasks():
        with tlx.async_task("default"):  # producer: TMA loads into the ring
            for j in range(tiles):
                slot = j % SLOTS
                tlx.barrier_wait(tlx.local_view(empty, slot), ((j // SLOTS) & 1) ^ 1)
                bar = tlx.local_view(full, slot)
                tlx.barrier_expect_bytes(bar, BM * BN * tlx.size_of(tlx.dtype_of(x_desc)))
                tlx.async_descriptor_load(x_desc, tlx.local_view(ring, slot), [row, j * BN], bar)
        with tlx.async_task(num_warps=4, registers=168):  # consumer
            for j in range(tiles):
                slot = j % SLOTS
                tlx.barrier_wait(tlx.local_view(full, slot), (j // SLOTS) & 1)
                tile = tlx.local_load(tlx.local_view(ring, slot))
                tlx.barrier_arrive(tlx.local_view(empty, slot))
                y_desc.store([row, j * BN], (tile.to(tl.float32) * scale).to(tlx.dtype_of(y_desc)))


M, N = 256, 512
x = torch.randn(M, N, device=DEVICE, dtype=torch.float16)
y = torch.empty_like(x)
x_desc = TensorDescriptor(x, [M, N], [N, 1], [1, 1])  # block shapes: the config's pre_hook sets them
y_desc = TensorDescriptor(y, [M, N], [N, 1], [1, 1])
if DEVICE == "cuda":
    triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device="cuda"))
ring_scale[lambda meta: (triton.cdiv(M, meta["BM"]),)](x_desc, y_desc, M, N, 2.0)
'''
LINES = RING.splitlines()
CONSUMER_LINE = 1 + next(i for i, t in enumerate(LINES) if "registers=168" in t)  # cell lines are 1-based
TMA_LINE = 1 + next(i for i, t in enumerate(LINES) if "tlx.async_descriptor_load(" in t)


@pytest.fixture(scope="module")
def bundles(tmp_path_factory):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell("%load_ext workbench"), nbformat.v4.new_code_cell(RING),
                nbformat.v4.new_code_cell("print(type(rep).__name__, rep.name)")]
    NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=False,
                   resources={"metadata": {"path": str(tmp_path_factory.mktemp("nb"))}}).execute()
    out = [o["data"] for o in nb.cells[1].outputs
           if o.get("output_type") in ("display_data", "execute_result") and MIME_TYPE in o.get("data", {})]
    after = "".join(o.get("text", "") for o in nb.cells[2].outputs)
    return out, after


def test_every_report_is_valid_against_the_schema(bundles):
    reports, after = bundles
    assert reports and "Report ring_scale" in after
    for b in reports:
        validate(b[MIME_TYPE])
        assert set(b) >= {MIME_TYPE, "text/html", "text/plain"}


def _config_of(report: dict) -> tuple:
    args = {a["name"]: a for a in report["runs"][-1]["arguments"]}
    return args["BM"]["value"], args["BN"]["value"], args["SLOTS"]["value"]


def test_one_report_per_config_with_the_pre_hooks_block_shapes(bundles):
    reports, _ = bundles
    data = [b[MIME_TYPE] for b in reports]
    assert all(d["kernel"]["name"] == "ring_scale" for d in data)
    configs = {_config_of(d) for d in data}
    assert {(64, 64, 2), (128, 64, 3)} <= configs
    for d in data:
        bm, bn, _ = _config_of(d)
        descs = [a for a in d["runs"][-1]["arguments"] if a["kind"] == "descriptor"]
        assert [a["value"]["block_shape"] for a in descs] == [[bm, bn], [bm, bn]]


def test_the_report_has_the_tasks_with_warps_and_budgets(bundles):
    reports, _ = bundles
    for b in reports:
        md = b[MIME_TYPE]["metadata"]
        tasks = md["tasks"]
        assert [t["partition"] for t in tasks] == [None, 0]
        assert [t["num_warps"] for t in tasks] == [4, 4]
        assert tasks[1]["registers"] == 168 and tasks[1]["requested_registers"] == 168
        assert tasks[1]["first_line"] > CONSUMER_LINE  # its body, in cell lines
        assert md["num_ctas"] == 1


def test_the_cell_line_of_the_tma_load_maps_to_tma_in_ptx(bundles):
    reports, _ = bundles
    for b in reports:
        ptx = next(s for s in Report.from_dict(b[MIME_TYPE]).stages if s["name"] == "ptx")
        lines = ptx["text"].splitlines()
        mapped = [lines[n - 1] for n in ptx["line_map"][str(TMA_LINE)]]
        assert any("cp.async.bulk.tensor" in t for t in mapped), mapped[:5]


def test_check_ran_on_a_gpu_or_says_why_not(bundles, has_gpu):
    reports, _ = bundles
    checks = [c for b in reports for r in b[MIME_TYPE]["runs"] for c in r["checks"]]
    assert checks, "the --check result is in the primary Report"
    assert {c["status"] for c in checks} == ({"passed"} if has_gpu else {"skipped"})


@pytest.mark.gpu
def test_on_a_gpu_the_autotuned_kernel_runs_and_its_output_checks_out(bundles, has_gpu):
    if not has_gpu:
        pytest.skip("needs a CUDA GPU")
    reports, _ = bundles
    runs = [r for b in reports for r in b[MIME_TYPE]["runs"]]
    assert any(r["mode"] == "gpu" and r["ran"] for r in runs)
    [check] = [c for r in runs for c in r["checks"]]
    assert check["status"] == "passed", check  # the worse of the cell's own run and the fresh-input re-run


def _meta_notebook():
    """testbed/meta_notebook.py: the notebook bench/meta_tutorials.py runs on a GPU."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "testbed" / "meta_notebook.py"
    spec = importlib.util.spec_from_file_location("meta_notebook", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_committed_meta_tutorials_notebook_is_the_generated_one():
    book = _meta_notebook()
    committed = nbformat.read(book.NOTEBOOK, as_version=4)
    assert [c.source for c in committed.cells] == [c.source for c in book.build_notebook().cells], \
        "run: python bench/meta_tutorials.py --write-notebook"


def test_meta_tutorials_notebook_executes_without_a_gpu(tmp_path, has_gpu):
    if has_gpu:
        pytest.skip("with a GPU the notebook runs the tutorials: bench/meta_tutorials.py, not a test")
    book = _meta_notebook()
    nb, seconds, stopped = book.execute(book.NOTEBOOK, 300, tmp_path / "rows.json")
    assert stopped is None
    assert not [c.source.splitlines()[0] for c in nb.cells
                if any(o.get("output_type") == "error" for o in c.get("outputs", []))]
    import json

    rows = json.loads((tmp_path / "rows.json").read_text())["rows"]
    assert [(r["tutorial"], r["mode"], r["status"]) for r in rows] == [
        (n, "compile", "ok") for n in book.GEMMS for _ in book.GEMM_SHAPES] + [
        (n, "compile", "ok") for n in book.ATTENTION]
    assert all(len(r["tasks"]) >= 2 for r in rows if r["tutorial"] != "hopper_gemm_pipelined")
    cell = next(c for c in nb.cells if c.metadata.get("name") == "hopper_fa_ws (4, 32, 4096, 128)")
    [data] = [o["data"][MIME_TYPE] for o in cell.outputs if MIME_TYPE in o.get("data", {})]
    validate(data)
