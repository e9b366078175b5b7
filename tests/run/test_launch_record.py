"""The one launch record: views by storage, descriptors around them, fresh data with the same statistics, meta
copies for compiles, the Report's argument list, and what crosses a process boundary."""

from __future__ import annotations

import pickle

import pytest
import torch
from triton.tools.tensor_descriptor import TensorDescriptor

from workbench.run.launch_record import Composite, Record, Value, View, poison_, rebuild, refill_, relabel


@pytest.fixture
def launch():
    a = torch.randn(64, 32) * 3 + 5
    c = torch.zeros(64, 32, dtype=torch.float16)
    desc = TensorDescriptor(c, [64, 32], [32, 1], [16, 32])
    idx = torch.tensor([3, 1, 2], dtype=torch.int32)
    return {"a": a, "c_desc": desc, "c_rows": c[8:], "idx": idx, "n": 64, "scale": 0.5, "name": "x"}


def test_tensors_are_views_of_shared_storages(launch):
    rec = Record.of(launch)
    assert len(rec.storages) == 3  # a, c (the descriptor's base and c_rows share it), idx
    d = rec.args["c_desc"]
    assert isinstance(d, Composite) and d.base == View(1, "float16", (64, 32), (32, 1), 0)
    assert rec.args["c_rows"] == View(1, "float16", (56, 32), (32, 1), 256)
    assert rec.args["n"] == Value(64) and rec.root("n") is None and rec.root("c_desc").storage == 1
    assert rec.whole(rec.args["a"]) and not rec.whole(rec.args["c_rows"])
    assert rec.live(0) is launch["a"]
    assert rec.view_of(launch["c_desc"].base[:4]) == View(1, "float16", (4, 32), (32, 1), 0)
    assert rec.view_of(torch.empty(3)) is None


def test_meta_copies_for_a_compile_with_the_configs_block_shape(launch):
    values, bufs = Record.of(launch).build("meta", blocks={"c_desc": (32, 32)})
    assert all(b.device.type == "meta" for b in bufs)
    assert values["c_desc"].block_shape == [32, 32] and launch["c_desc"].block_shape == [16, 32]  # a copy
    assert values["c_rows"].shape == (56, 32) and values["c_rows"].storage_offset() == 256
    assert values["n"] == 64 and values["name"] == "x"


def test_fresh_data_keeps_statistics_aliasing_and_integer_values(launch):
    rec = Record.of(launch, with_data=True)
    values, _ = rec.build("cpu", seed=7)
    a = values["a"]
    assert not torch.equal(a, launch["a"]) and abs(float(a.mean()) - 5) < 0.5 and abs(float(a.std()) - 3) < 0.5
    assert torch.equal(values["idx"], launch["idx"])  # a random index is not an index
    assert values["c_rows"].untyped_storage().data_ptr() == values["c_desc"].base.untyped_storage().data_ptr()
    again, _ = rec.build("cpu", seed=7)
    assert torch.equal(again["a"], a)  # a seed makes the same data


def test_what_crosses_a_process_boundary(launch):
    rec = Record.of(launch)
    back = pickle.loads(pickle.dumps(rec))
    assert back.args == rec.args and back.live(0) is None  # never the caller's tensors
    tokens = [101, 102, 103]
    spec = relabel(rec.args["c_rows"], tokens)
    assert spec.storage == 102
    held = {102: torch.arange(64 * 32, dtype=torch.float16)}
    assert rebuild(spec, held)[0, 0] == 256  # the same view over the token's storage


def test_the_reports_arguments(launch):
    args = {a["name"]: a for a in Record.of(launch).arguments({"n"})}
    assert args["a"] == {"name": "a", "kind": "tensor", "dtype": "float32", "shape": [64, 32], "strides": [32, 1],
                         "device": "cpu"}
    assert args["c_desc"]["kind"] == "descriptor" and args["c_desc"]["value"] == {"block_shape": [16, 32]}
    assert args["n"] == {"name": "n", "kind": "constexpr", "value": 64}
    assert args["scale"]["kind"] == "float" and args["name"]["kind"] == "other"


def test_poison_and_refill_in_place():
    t = torch.rand(1000) + 1
    g = torch.Generator().manual_seed(0)
    ptr = t.data_ptr()
    refill_(t, g)
    assert t.data_ptr() == ptr and bool((t >= 0).all())  # non-negative data stays non-negative
    assert poison_(t) and bool(t.isnan().all())
    i = torch.ones(4, dtype=torch.int16)
    assert poison_(i) and int(i[0]) == torch.iinfo(torch.int16).min
    assert not poison_(torch.ones(4, dtype=torch.bool))
