"""``%%tlx --export traces/``: a cell's compile and launch records in TritonParse's structured-log format,
read back by tritonparse itself (its validator, then its parser, the one ``tritonparseoss parse`` runs)."""

from __future__ import annotations

import gzip
import json
import textwrap

import pytest
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output

import workbench
from workbench.report import Report

pytest.importorskip("tritonparse")

from sample_kernels import RING_KERNELS, kernel_text  # noqa: E402
from tritonparse.parse.utils import unified_parse  # noqa: E402
from tritonparse.validation.json_validator import validate_trace_file  # noqa: E402

WAIT = "tlx.barrier_wait(full[s], p)"  # the consumer's wait on a full slot in ring_ok
RING = "\n" + kernel_text("ring_ok", RING_KERNELS) + """
from triton.tools.tensor_descriptor import TensorDescriptor
x = torch.randn(64, 512, dtype=torch.float16)
out = torch.empty(64, 64, dtype=torch.float16)
ring_ok[(1,)](TensorDescriptor(x, [64, 512], [512, 1], [64, 64]), out, 512, BM=64, BK=64, STAGES=3)
"""


@pytest.fixture(scope="module")
def traced(tmp_path_factory):
    """(the Report, the parsed events by type) of a TLX cell exported to a folder and parsed by tritonparse."""
    folder = tmp_path_factory.mktemp("traces")
    shell = InteractiveShell.instance()
    shell.run_line_magic("load_ext", "workbench")
    with capture_output(display=True):
        res = shell.run_cell(f"%%tlx -o r --export {folder}/" + textwrap.dedent(RING))
    assert res.success, res.error_in_exec
    report = shell.user_ns["r"]
    shell.run_line_magic("unload_ext", "workbench")
    [written] = list(folder.iterdir())
    assert written.name == f"dedicated_log_triton_trace_ring_ok_{report.id[:8]}.ndjson"
    check = validate_trace_file(str(written))
    assert check["valid"], check["errors"]
    assert check["event_type_counts"] == {"compilation": 1, "launch": 1}
    parsed = tmp_path_factory.mktemp("parsed")
    unified_parse(source=str(folder), out=str(parsed), overwrite=True)
    [mapped] = list(parsed.glob("*_mapped.ndjson.gz"))
    events: dict[str, list] = {}
    for line in gzip.open(mapped, "rt"):
        e = json.loads(line)
        events.setdefault(e["event_type"], []).append(e)
    return report, events


def test_tritonparse_maps_every_stage_to_the_cells_lines(traced):
    report, events = traced
    [comp] = events["compilation"]
    p = comp["payload"]
    assert p["metadata"]["name"] == "ring_ok" and p["metadata"]["backend_name"] == "cuda"
    assert p["metadata"]["num_warps"] == report.metadata["num_warps"]
    assert p["metadata"]["shared"] == report.metadata["shared_bytes"]
    assert {f"ring_ok.{s}" for s in ("ttir", "ttgir", "llir", "ptx", "sass")} <= set(p["file_content"])
    assert {"ttir", "ttgir", "llir", "ptx", "sass", "python"} <= {k for k, v in p["source_mappings"].items() if v}
    source = report.kernel["source"]
    python = p["source_mappings"]["python"]
    ours = set(report.line_map("ttgir"))  # the kernel lines the workbench maps into TTGIR
    assert ours and ours <= {int(line) for line in python}, "tritonparse maps every line the workbench maps"
    wait = next(i for i, text in enumerate(source["text"].splitlines(), 1) if WAIT in text)
    ttgir = p["file_content"]["ring_ok.ttgir"].splitlines()
    assert any("wait_barrier" in ttgir[int(n) - 1] for n in python[str(wait)]["ttgir_lines"])
    assert p["python_source"]["file_path"] == source["filename"] and WAIT in p["python_source"]["code"]


def test_tritonparse_joins_the_launch_to_its_compilation(traced):
    report, events = traced
    [launch] = events["launch"]
    assert launch["compilation_metadata"]["hash"] == events["compilation"][0]["payload"]["metadata"]["hash"]
    assert launch["name"] == "ring_ok" and launch["grid"] == [1, 1, 1]
    args = launch["extracted_args"]
    assert args["x_desc"]["type"] == "TensorDescriptor" and args["x_desc"]["block_shape"] == [64, 64]
    assert args["x_desc"]["base"]["shape"] == [64, 512] and args["x_desc"]["strides"] == [512, 1]
    assert args["out_ptr"] == {**args["out_ptr"], "type": "tensor", "shape": [64, 64], "dtype": "torch.float16",
                               "stride": [64, 1], "numel": 4096, "element_size": 2}
    assert args["K"] == {"type": "int", "value": 512} and args["STAGES"] == {"type": "int", "value": 3}
    assert launch["workbench_run"]["mode"] == report.runs[0]["mode"]
    assert events["launch_diff"][0]["total_launches"] == 1


def test_a_report_loaded_from_json_writes_the_same_records(traced, tmp_path):
    report, _ = traced
    again = Report.from_json(report.to_json())
    written = workbench.export(again, tmp_path / "again.ndjson")
    [comp, launch] = [json.loads(line) for line in written.read_text().splitlines()]
    assert comp["payload"]["file_content"]["ring_ok.ptx"] == report.stage("ptx")
    assert launch["extracted_args"]["x_desc"]["block_shape"] == [64, 64]
    assert validate_trace_file(str(written))["valid"]
