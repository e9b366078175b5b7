"""Issue 24: 2-CTA clusters with TMA multicast (what cuBLAS runs on Hopper) cannot be built with the installed
triton-utlx. ``tlx_kernels.gemm.cluster_multicast`` is that kernel, written out; these tests pin the two compile
errors a user meets, at their lines, so that a uTLX release that builds it fails here (then: run it on a GPU,
check it and time it against ws_cooperative)."""

from __future__ import annotations

import inspect

import pytest
import torch
from tlx_kernels.gemm import cluster_multicast as CM
from tlx_kernels.gemm import ws_cooperative as W

import workbench
from workbench.errors import CompileError

M = N = K = 2048


def _operands():
    a, b, c = (torch.empty(r, s, dtype=torch.bfloat16) for r, s in ((M, K), (K, N), (M, N)))
    return a, b, c


def _line(module, text: str) -> int:
    """The 1-based line of ``module``'s file that holds ``text`` first."""
    lines, _ = inspect.getsourcelines(module)
    return next(i for i, ln in enumerate(lines, start=1) if text in ln)


def test_the_remote_arrive_is_refused_at_its_line_with_the_plugins_reason():
    args, cfg = CM.launch_args(*_operands())
    with pytest.raises(CompileError) as info:
        workbench.compile(CM.kernel, *args, **cfg)
    err = info.value
    assert err.lineno == _line(CM, "remote_cta_rank=1 - rank")
    assert "map_to_remote_buffer" in err.message
    assert "does not implement this op (NotImplementedError)" in err.hint  # not a hint to shrink sizes


def test_without_it_the_clusters_shared_buffers_are_refused_and_one_cta_compiles():
    a, b, c = _operands()
    args, cfg = CM.launch_args(a, b, c)
    with pytest.raises(CompileError, match="invalid layout") as info:
        workbench.compile(CM.kernel, *args, **cfg, REMOTE_ARRIVE=False)
    assert info.value.lineno == _line(CM, "a_bufs = tlx.local_alloc(")
    w_args, w_kwargs, _, _ = W.prepare(a, b, out=c)
    with pytest.raises(CompileError, match="invalid layout"):  # not this kernel's doing: any cluster of TLX buffers
        workbench.compile(W.kernel, *w_args, **w_kwargs, ctas_per_cga=(2, 1, 1))
    one = workbench.compile(CM.kernel, *args, **dict(cfg, ctas_per_cga=(1, 1, 1)), REMOTE_ARRIVE=False)
    tma = [ln for ln in one.stages["sass"].splitlines() if "UTMALDG" in ln]
    assert tma and not any("MULTICAST" in ln for ln in tma)  # on one CTA the multicast copies are plain loads
