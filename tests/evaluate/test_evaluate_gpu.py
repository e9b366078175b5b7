"""workbench.evaluate on the GPU: the adversarial set of the CPU test plus what only a GPU shows (work on a side
stream, an uninitialised output that could hold a freed buffer's values), each caught with its reason; the correct
candidate passes and is timed by events that agree with the synchronized clock."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from test_evaluate_cpu import EXPECTED

from workbench import evaluate

pytestmark = pytest.mark.gpu
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

F = Path(__file__).parent / "candidates.py"
GPU_EXPECTED = {**EXPECTED, "off_by_one": "elements differ; first at", "side_stream": "a CUDA stream of its own",
                "returns_freed_memory": "launched no Triton kernel", "kept_compiled_kernel": None}


def test_the_adversarial_set_is_caught_on_the_gpu():
    res = evaluate([f"{F}:{n}" for n in GPU_EXPECTED], reference=f"{F}:reference", inputs=f"{F}:make_inputs",
                   shapes=[(1 << 22,), (1000,)], trials=3, rounds=2, progress=False)
    rows = {r["candidate"].split(":")[1]: r for r in res.rows}
    for name, phrase in GPU_EXPECTED.items():
        r = rows[name]
        if phrase is None:
            assert r["status"] == "passed", (name, r["reasons"])
            big = r["shapes"][0]
            assert big["ms"] > 0 and big["synced_ms"] >= big["ms"] * 0.5, big
        else:
            assert r["status"] in ("failed", "rejected"), (name, r)
            assert any(phrase in why for why in r["reasons"]), (name, r["reasons"])
