"""The PTX helpers (workbench.ir.ptx) on the real PTX of a compiled kernel."""

from __future__ import annotations

from workbench.ir.ptx import code_text, is_loc


def test_loc_lines_and_code_of_real_ptx(ws_gemm):
    text = ws_gemm.stages["ptx"]
    locs = [ln for ln in text.splitlines() if is_loc(ln)]
    assert len(locs) > 50 and all(ln.strip().startswith(".loc") for ln in locs)
    code = code_text(text)
    lines = code.splitlines()
    assert not any(ln.lstrip().startswith(("//", ".loc", ".file", "$L__tmp")) for ln in lines)
    assert ".section" not in code and all(ln.strip() for ln in lines)
    assert "wgmma.mma_async" in code and "cp.async.bulk.tensor" in code and ".entry" in code
    assert code.count("\n") < text.count("\n") - len(locs)
