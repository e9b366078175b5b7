"""CPU tests of the scope insertion: the instrumented builds of real TLX kernels compile for sm_90.

Kernels: the library's WS cooperative and ping-pong GEMMs (``tlx_kernels.gemm``) and Meta's FA forward
persistent ping-pong tutorial from the installed wheel (unmodified, imported with a stand-in driver).
"""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path

import pytest
import torch
import triton
import triton.language as tl
import triton.language.extra.tlx as tlx
from triton.tools.tensor_descriptor import TensorDescriptor

from workbench.measure.timeline import ModeSpec, compile_instrumented, instrument, scoped

ROOT = Path(__file__).resolve().parents[3]
FA = "hopper_fa_ws_pipelined_pingpong_persistent"
SPEC = ModeSpec(sampled_warps=(0, 4, 8), buffer_size=3 * 16 * 4096)
_REC = re.compile(r'^(\s*)proton\.record (start|end) "([^"]+)"')


def _gemm(name: str):
    try:
        mod = importlib.import_module(f"tlx_kernels.gemm.{name}")
    except Exception as e:  # the library is being rewritten by another engineer
        pytest.skip(f"tlx_kernels.gemm.{name} does not import: {type(e).__name__}: {e}")
    a, b = torch.empty(1024, 1024, dtype=torch.float16), torch.empty(1024, 1024, dtype=torch.float16)
    args, kwargs, _grid, _out = mod.prepare(a, b, sms=132)
    return mod.kernel, args, kwargs


def _fa():
    from tlx_kernels import meta_tutorials

    try:
        mod = meta_tutorials.load(FA)  # unmodified, imported with a stand-in driver when there is no GPU
    except FileNotFoundError:
        pytest.skip("Meta's TLX tutorials are not installed")
    tuner = mod._attn_fwd_ws_pipelined_pingpong_persistent
    cfg = tuner.configs[0]
    z, h, n, d = 1, 2, 512, 128
    split = cfg.kwargs["BLOCK_M"] // cfg.kwargs["NUM_MMA_GROUPS"]
    t = [torch.empty(z * h * n, d, dtype=torch.float16) for _ in range(4)]
    descs = [TensorDescriptor(x, [z * h * n, d], [d, 1], blk) for x, blk in
             zip(t, ([split, d], [cfg.kwargs["BLOCK_N"], d], [cfg.kwargs["BLOCK_N"], d], [split, d]), strict=True)]
    m = torch.empty(z, h, n, dtype=torch.float32)
    opts = {**cfg.kwargs, "num_warps": cfg.num_warps, "num_stages": cfg.num_stages, "HEAD_DIM": d,
            "FP8_OUTPUT": False}
    return tuner.fn, (0.5, m, z, h, *descs, n), opts


@pytest.fixture(scope="module")
def builds():
    out = {}
    for name in ("ws_cooperative", "ws_pingpong"):
        kernel, args, kwargs = _gemm(name)
        out[name] = (kernel, args, kwargs, *compile_instrumented(kernel, *args, spec=SPEC, **kwargs))
    return out


@pytest.fixture(scope="module")
def fa_build():
    fn, args, opts = _fa()
    return compile_instrumented(fn, *args, spec=SPEC, **opts)


def _records(ttgir: str) -> list[tuple[int, int, str, str]]:
    """(line index, indent, start|end, name) of every record."""
    return [(i, len(m.group(1)), m.group(2), m.group(3)) for i, ln in enumerate(ttgir.splitlines())
            if (m := _REC.match(ln))]


def _scopes(ttgir: str) -> set[str]:
    return {r[3] for r in _records(ttgir)}


def _loop_depth(lines: list[str], i: int) -> int:
    """How many scf.for bodies line ``i`` sits in (by indentation)."""
    depth, ind = 0, len(lines[i]) - len(lines[i].lstrip())
    for j in range(i - 1, -1, -1):
        s = lines[j].lstrip()
        jind = len(lines[j]) - len(s)
        if jind < ind and s:
            if " scf.for " in f" {s}" or "= scf.for" in s:
                depth += 1
            ind = jind
    return depth


@pytest.mark.parametrize("name", ["ws_cooperative", "ws_pingpong"])
def test_library_gemm_timeline_build_compiles_with_scopes_inside_the_loops(builds, name):
    _kernel, _args, _kw, ck, plan = builds[name]
    roles = [r.role for r in plan.roles]
    assert roles == ["producer", "consumer.0", "consumer.1"]
    got = _scopes(ck.asm["ttgir"])
    assert {"producer/task", "producer/wait:empty", "producer/tma_load"} <= got
    for c in ("consumer.0", "consumer.1"):
        assert {f"{c}/task", f"{c}/wait:full", f"{c}/mma", f"{c}/mma_wait", f"{c}/epilogue"} <= got
    lines = ck.asm["ttgir"].splitlines()
    waits = [i for i, _ind, kind, n in _records(ck.asm["ttgir"]) if kind == "start" and n.endswith("wait:full")]
    assert waits and all(_loop_depth(lines, i) >= 2 for i in waits)  # persistent tile loop and K loop
    assert ck.metadata.profile_scratch_size > 0
    assert "%globaltimer" in ck.asm["ptx"] and "%clock" in ck.asm["ptx"]


def test_every_role_scope_ends_right_before_its_region_ends(builds):
    lines = builds["ws_cooperative"][3].asm["ttgir"].splitlines()
    for i, _ind, kind, name in _records("\n".join(lines)):
        if kind == "end" and name.endswith("/task"):
            assert re.match(r"\s*ttg\.warp_(return|yield)\b", lines[i + 1]), lines[i + 1]


def test_instrumented_ttgir_is_the_plain_one_plus_records(builds, tmp_path, monkeypatch):
    import workbench
    from workbench.compile import cache

    kernel, args, kwargs, ck, _plan = builds["ws_cooperative"]
    monkeypatch.setenv("TLX_WORKBENCH_CACHE_DIR", str(tmp_path))
    cache.clear(memory=True)
    plain = workbench.compile(kernel, *args, target="sm_90", **kwargs)
    assert "proton" not in plain.stages["ttgir"] and "proton" not in plain.stages["llir"]

    def ops(text: str) -> list[str]:
        """Op lines without records, locations and SSA names (block arguments lose their names when
        the rewritten module is parsed back; the ops, types and attributes must not change)."""
        keep = [ln for ln in text.splitlines() if not ln.startswith("#loc") and "proton.record" not in ln]
        keep = [re.sub(r"\s*loc\([^()]*(\([^()]*\))?[^()]*\)", "", ln) for ln in keep]
        return [re.sub(r"%[\w.$-]+", "%v", ln) for ln in keep]

    assert ops(ck.asm["ttgir"]) == ops(plain.stages["ttgir"])
    # the user's line maps are untouched: the instrumented compile in between changed nothing
    compile_instrumented(kernel, *args, spec=SPEC, **kwargs)
    cache.clear(memory=True)
    monkeypatch.setenv("TLX_WORKBENCH_CACHE_DIR", str(tmp_path / "again"))
    again = workbench.compile(kernel, *args, target="sm_90", **kwargs)
    assert again.line_maps == plain.line_maps and again.stages["ttgir"] == plain.stages["ttgir"]


def test_meta_fa_tutorial_timeline_build(fa_build):
    ck, plan = fa_build
    assert [r.role for r in plan.roles] == ["producer", "consumer.0", "consumer.1"]
    got = _scopes(ck.asm["ttgir"])
    assert {"producer/wait:q_empties", "producer/wait:k_empties", "producer/wait:v_empties", "producer/tma_load"} <= got
    assert {"consumer.0/wait:q_fulls", "consumer.0/wait:k_fulls", "consumer.0/wait:v_fulls"} <= got
    assert "consumer.0/wait:named9" in got and "consumer.1/wait:named10" in got  # the ping-pong handoff
    assert {"consumer.1/mma", "consumer.1/mma_wait", "consumer.1/epilogue", "consumer.1/store"} <= got
    assert ck.metadata.profile_scratch_size > 0


def test_levels_choose_what_is_inserted(builds):
    ck = builds["ws_cooperative"][3]
    text = "\n".join(ln for ln in ck.asm["ttgir"].splitlines() if "proton.record" not in ln)
    task = _scopes(instrument(text, "task").text)
    waits = _scopes(instrument(text, "waits").text)
    assert task == {"producer/task", "consumer.0/task", "consumer.1/task"}
    assert waits == task | {"producer/wait:empty", "consumer.0/wait:full", "consumer.1/wait:full"}
    with pytest.raises(ValueError, match="level"):
        instrument(text, "everything")


def test_the_hook_chains_to_utlx_and_is_put_back():
    from triton import knobs

    before = knobs.runtime.add_stages_inspection_hook
    assert before is not None  # uTLX's
    key0, hash0 = before()
    with scoped("fine") as rec:
        key, h = knobs.runtime.add_stages_inspection_hook()
        assert key.startswith(key0) and rec.key() in key and h != hash0
        inner = knobs.runtime.add_stages_inspection_hook
        knobs.runtime.add_stages_inspection_hook = lambda *a, **k: inner(*a, **k)  # someone wraps ours
        wrapper = knobs.runtime.add_stages_inspection_hook
    assert knobs.runtime.add_stages_inspection_hook is wrapper
    assert wrapper() == (key0, hash0)  # ours turned into a pass-through
    knobs.runtime.add_stages_inspection_hook = before
    with scoped("task"):
        pass
    assert knobs.runtime.add_stages_inspection_hook is before


def test_reproducer_of_the_loop_placement_failure():
    """bench/notes/timeline_ws_loop_scopes.py: replicas' identical exit blocks get merged (see the note)."""
    sys.path.insert(0, str(ROOT / "bench" / "notes"))
    try:
        import timeline_ws_loop_scopes as R
    finally:
        sys.path.pop(0)
    assert R.compile_case(2, False, "global").startswith("FAILED")
    assert R.compile_case(2, True, "global") == "compiled"
    assert R.compile_case(1, False, "global") == "compiled"


@triton.jit
def _named_ring(x_ptr, y_ptr, n_tiles, BLOCK: tl.constexpr):
    bufs = tlx.local_alloc((BLOCK,), tl.float32, 2)
    ready = tlx.alloc_barriers(2, arrive_count=1)
    free = tlx.alloc_barriers(2, arrive_count=2)
    with tlx.async_tasks():
        with tlx.async_task("default", name="loader"):
            for i in range(n_tiles):
                tlx.barrier_wait(free[i % 2], ((i // 2) & 1) ^ 1)
                tlx.local_store(bufs[i % 2], tl.load(x_ptr + i * BLOCK + tl.arange(0, BLOCK)))
                tlx.barrier_arrive(ready[i % 2])
        with tlx.async_task(num_warps=4, replicate=2, name="reader"):
            for i in range(n_tiles):
                tlx.barrier_wait(ready[i % 2], (i // 2) & 1)
                tl.store(y_ptr + i * BLOCK + tl.arange(0, BLOCK), tlx.local_load(bufs[i % 2]))
                tlx.barrier_arrive(free[i % 2])


def test_async_task_name_keyword_names_the_roles():
    x, y = torch.empty(4096), torch.empty(4096)
    ck, plan = compile_instrumented(_named_ring, x, y, 8, BLOCK=512, num_warps=4,
                                    spec=ModeSpec(sampled_warps=(0, 4, 8), buffer_size=3 * 16 * 256))
    assert [r.role for r in plan.roles] == ["loader", "reader.0", "reader.1"]
    got = _scopes(ck.asm["ttgir"])
    assert {"loader/wait:free", "reader.0/wait:ready", "reader.1/wait:ready", "reader.1/store"} <= got
